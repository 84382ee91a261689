#include <gtest/gtest.h>

#include <cmath>

#include "fk/thread_count.h"
#include "nefi/instances/bad_value_errors.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/operators/angular_spectrum.h"
#include "nefi/test_files.h"

namespace {

using nefi::test::config_path;

// The data (propagated on the 2x grid, intensities area-averaged) and the
// inversion operator at 1x agree closely but not exactly; phantoms are
// zero-mean.
TEST(NefiHolographyInstance, DataAreCloseToTheOperatorButNotItsNumbers) {
  auto inst = nefi::find_instance("holography");
  nefi::Params p = inst->default_config();
  p.set("noise_std", "0");
  for (const char* scene : {"smooth_phase", "cells"}) {
    p.set("scene", scene);
    auto [meas, gt] = inst->make_measurement(p, 0);
    ASSERT_EQ(meas.data.shape(), fk::Dims({3, 32, 32}));
    double mean = 0;
    for (double v : gt.to_vector<double>()) mean += v;
    EXPECT_NEAR(mean, 0.0, 1e-10) << scene;
    nefi::HolographyOperator op(nefi::Domain({32, 32}, {32.0, 32.0}), {10, 25, 50}, {});
    const auto model = op.apply(gt).to_vector<double>(), data = meas.data.to_vector<double>();
    double diff = 0;
    for (size_t i = 0; i < data.size(); ++i) diff = std::max(diff, std::abs(data[i] - model[i]));
    EXPECT_GT(diff, 1e-4) << scene;
    EXPECT_LT(diff, 0.3) << scene;
  }
  EXPECT_NE(std::string(nefi::holography_data_tag()),
            nefi::HolographyOperator(nefi::Domain({8, 8}), {1.0}, {}).fidelity_tag());
}

TEST(NefiHolographyInstance, BadValuesAreOneLineErrorsNamingTheKey) {
  auto inst = nefi::find_instance("holography");
  const nefi::test::BadValue bad_values[] = {{"tv", "-1"},
                                             {"tv_eps", "0"},
                                             {"n", "4"},
                                             {"wavelength", "-0.5"},
                                             {"distances", "[10, -5]"},
                                             {"distances", "[]"},
                                             {"wavelength", ".inf"},
                                             {"distances", "[.inf]"},
                                             {"pixel", ".inf"},
                                             {"pixel", "0"},
                                             {"pad_factor", "0"},
                                             {"pad_mode", "wrap"},
                                             {"absorption", "-1"},
                                             {"phase_amplitude", "0"},
                                             {"phase_bound", "0"},
                                             {"noise_std", "-1"},
                                             {"scene", "usaf"},
                                             {"supersample", "0"},
                                             {"gs_iterations", "0"},
                                             {"grid_lr_mult", "0"},
                                             {"phase_amplitude", "4"}};  // past phase_bound pi
  nefi::test::expect_bad_values_name_their_key(
      inst->default_config(), bad_values,
      [&](const nefi::Params& p) { inst->make_measurement(p, 0); });
}

// Smoke floors over seeds 0-2 (mean-subtracted phase). Measured (1 thread,
// session 12, as configs/holography_smoke.yaml; seed 0 again in session 47):
// neural 36.39 / 30.54 / 32.02 dB (SSIM 0.920 / 0.907 / 0.956; session 53:
// 37.22 / 30.42 / 31.76); Gerchberg-Saxton (sequential, on the padded grid)
// 23.94 / 16.71 / 15.66; grid 26.00 / 21.62 / 28.39 (reference, its seed 0:
// neural 35.0, GS 27.3, grid 31.7).
TEST(NefiHolographyInstance, SmokeQualityFloor) {
  const fk::test::ThreadCount one_thread(1);
  nefi::RunConfig c = nefi::load_run_config_file(config_path("holography_smoke.yaml"));
  auto inst = nefi::find_instance("holography");
  double total = 0;
  for (int s = 0; s < 3; ++s) {
    auto out = inst->run(c.config, "neural", s, {});
    auto gs = inst->run(c.config, "gerchberg_saxton", s, {});
    EXPECT_GT(out.metrics.at("psnr"), 28.5) << "seed " << s;
    EXPECT_GT(out.metrics.at("ssim"), 0.85) << "seed " << s;
    EXPECT_GT(gs.metrics.at("psnr"), 12.0) << "seed " << s;
    EXPECT_GT(out.metrics.at("psnr"), gs.metrics.at("psnr") + 5.0) << "seed " << s;
    total += out.metrics.at("psnr");
  }
  EXPECT_GT(total / 3, 31.5);  // measured 33.28
}

// Gerchberg-Saxton works on the operator's padded grid, where a propagation
// round trip is the identity: more iterations fit better (the padded-and-
// cropped round trip drifted: smooth_phase seed 0 scored 21.8 / 24.1 / 15.5
// dB at 100 / 400 / 1600 iterations; sequential now 23.9 / 26.0 / 26.3).
TEST(NefiHolographyInstance, GerchbergSaxtonImprovesWithIterations) {
  const fk::test::ThreadCount one_thread(1);
  nefi::RunConfig c = nefi::load_run_config_file(config_path("holography_smoke.yaml"));
  auto inst = nefi::find_instance("holography");
  c.config.set("gs_iterations", "100");
  const double short_run = inst->run(c.config, "gerchberg_saxton", 0, {}).metrics.at("psnr");
  c.config.set("gs_iterations", "400");
  const double long_run = inst->run(c.config, "gerchberg_saxton", 0, {}).metrics.at("psnr");
  EXPECT_GT(short_run, 22.5);          // measured 23.94
  EXPECT_GT(long_run, short_run + 1);  // measured 25.95
}

}  // namespace
