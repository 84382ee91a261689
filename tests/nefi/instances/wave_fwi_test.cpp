// wave_fwi: the data generator against the inversion operator (same physics,
// other numbers, other tag), the scenes and acquisitions, the band-limited
// misfit's filter, config errors naming the key, and the smoke quality over
// seeds 0-2.
#include <gtest/gtest.h>

#include <cmath>

#include "fk/factory.h"
#include "fk/thread_count.h"
#include "nefi/instances/bad_value_errors.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/wave_fwi_data.h"
#include "nefi/io/run_config.h"
#include "nefi/operators/wave/wave_operator.h"
#include "nefi/test_files.h"

namespace {

using nefi::test::config_path;

// The generator (2x grid, f64, Courant 0.45) and the operator at n on the
// truth's cell averages agree to about 10 % rms of the traces (relative MSE
// 0.012; the reference's model error without the mute: 0.049), not exactly.
TEST(NefiWaveFwi, DataGeneratorIsIndependentButConsistent) {
  auto inst = nefi::find_instance("wave_fwi");
  nefi::Params p = inst->default_config();
  p.set("noise", "0");
  p.set("min_offset", "0");
  auto [meas, gt] = inst->make_measurement(p, 0);
  EXPECT_FALSE(meas.mask.defined());
  nefi::WaveOperatorConfig cfg;
  cfg.wave.extent = {1.0, 1.0};
  cfg.wave.c_max = 2.5, cfg.wave.dt_obs = 0.016, cfg.wave.n_t = 61, cfg.wave.absorb_width = 0.25;
  cfg.f0 = 4.0;
  const auto acq = nefi::fwi::acquisition("surround", 1.0, 6, 32, 0.08);
  cfg.sources = acq.sources, cfg.receivers = acq.receivers;
  const nefi::WaveOperator op(cfg, {24, 24});
  const auto model = op.apply(gt).to_vector<double>(), data = meas.data.to_vector<double>();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < data.size(); ++i) {
    diff += std::pow(data[i] - model[i], 2);
    scale += std::pow(model[i], 2);
  }
  const double rel = std::sqrt(diff / scale);
  EXPECT_GT(rel, 1e-4);
  EXPECT_LT(rel, 0.15);  // measured 0.110
  EXPECT_NE(std::string(nefi::wave_fwi_data_tag()), op.fidelity_tag());
  // The mute: pairs closer than min_offset are masked out, whole traces.
  p.set("min_offset", "0.3");
  const auto mask = inst->make_measurement(p, 0).first.mask.to_vector<double>();
  const auto expect = nefi::fwi::offset_mask(acq, 0.3, 61);
  EXPECT_EQ(mask, expect);
  double kept = 0;
  for (double w : mask) kept += w;
  EXPECT_GT(kept, 0.5 * mask.size());
  EXPECT_LT(kept, mask.size());
}

TEST(NefiWaveFwi, ScenesStayInBoundsAndDifferBySeed) {
  nefi::fwi::MediumConfig m;
  for (const char* cls : {"smooth_anomaly", "layered", "scatterers"}) {
    const auto a = nefi::fwi::velocity_scene(cls, 32, m, 0),
               b = nefi::fwi::velocity_scene(cls, 32, m, 1);
    double lo = 1e9, hi = -1e9, d = 0;
    for (size_t i = 0; i < a.size(); ++i)
      lo = std::min(lo, a[i]), hi = std::max(hi, a[i]), d += std::abs(a[i] - b[i]);
    EXPECT_GE(lo, m.c_min) << cls;
    EXPECT_LE(hi, m.c_max) << cls;
    EXPECT_GT(hi - lo, 0.2) << cls;
    EXPECT_GT(d, 0) << cls;
  }
  for (const char* kind : {"surround", "transmission", "reflection"}) {
    const auto acq = nefi::fwi::acquisition(kind, 1.0, 4, 10, 0.08);
    ASSERT_EQ(acq.sources.size(), 4u);
    ASSERT_EQ(acq.receivers.size(), 10u);
    for (const auto& pts : {acq.sources, acq.receivers})
      for (const auto& x : pts)
        for (double v : x) EXPECT_TRUE(v >= 0.08 - 1e-12 && v <= 0.92 + 1e-12) << kind;
  }
}

TEST(NefiWaveFwi, BadValuesAreOneLineErrorsNamingTheKey) {
  auto inst = nefi::find_instance("wave_fwi");
  const nefi::test::BadValue bad_values[] = {{"n", "4"},
                                             {"scene", "salt"},
                                             {"acquisition", "ring"},
                                             {"absorbing", "x"},
                                             {"order", "3"},
                                             {"c_background", "3.0"},
                                             {"anomaly", "0.6"},  // 2.0 + 0.6 > c_max 2.5
                                             {"anomaly", "-0.6"},
                                             {"anomaly", "0"},  // a constant truth
                                             {"margin", "0.6"},
                                             {"courant", "0"},
                                             {"absorb_R", "2"},
                                             {"grad_mode", "ad"},
                                             {"f0", "0"},
                                             {"f0", "24"},  // 1.5 cells of 1/24 km at 1.5 km/s
                                             {"t_max", "0.001"},
                                             {"noise", "-1"},
                                             {"min_offset", "10"},  // past every pair (extent 1 km)
                                             {"t_max", "0"},
                                             {"checkpoint_every", "-1"}};
  nefi::test::expect_bad_values_name_their_key(inst->default_config(), bad_values,
                                               [&](const nefi::Params& p) {
                                                 inst->make_measurement(p, 0);
                                                 inst->run(p, "grid", 0, {});
                                               });
}

// Smoke floors over seeds 0-2. Measured (1 thread): neural 33.01 / 34.06 /
// 32.11 dB, grid 30.72 / 31.11 / 31.03 dB; the reference's smoke: neural
// 26.6, grid 26.1 (its seed 0).
TEST(NefiWaveFwi, SmokeQualityFloor) {
  const fk::test::ThreadCount one_thread(1);
  nefi::RunConfig c = nefi::load_run_config_file(config_path("wave_fwi_smoke.yaml"));
  auto inst = nefi::find_instance("wave_fwi");
  for (int s = 0; s < 3; ++s) {
    auto out = inst->run(c.config, "neural", s, {});
    EXPECT_GT(out.metrics.at("psnr"), 30.5) << "seed " << s;
    EXPECT_LT(out.metrics.at("anomaly_error"), 0.5) << "seed " << s;
  }
}

TEST(NefiWaveFwi, SmokeGridBaseline) {
  const fk::test::ThreadCount one_thread(1);
  nefi::RunConfig c = nefi::load_run_config_file(config_path("wave_fwi_smoke.yaml"));
  auto g = nefi::find_instance("wave_fwi")->run(c.config, "grid", 0, {});
  EXPECT_GT(g.metrics.at("psnr"), 29.0);  // measured 30.72
}

}  // namespace
