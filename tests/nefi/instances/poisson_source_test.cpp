#include <gtest/gtest.h>

#include <cmath>

#include "fk/thread_count.h"
#include "nefi/instances/bad_value_errors.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/poisson_source_data.h"
#include "nefi/io/run_config.h"
#include "nefi/operators/poisson_dst.h"
#include "nefi/test_files.h"

namespace {

using nefi::test::config_path;

// The data generator's FD solve on the 2x grid and the inversion's DST
// (continuous spectrum) at 1x give nearly the same potential, but not the
// same numbers (the inverse-crime guard), and the tags differ.
TEST(NefiPoissonSource, DataGeneratorIsIndependentButConsistent) {
  auto inst = nefi::find_instance("poisson_source");
  nefi::Params p = inst->default_config();
  p.set("n", "32");
  p.set("noise_std", "0");
  p.set("obs", "full");
  auto [meas, gt] = inst->make_measurement(p, 0);
  EXPECT_FALSE(meas.mask.defined());
  nefi::PoissonOperator op(nefi::Domain({32, 32}));
  const auto model = op.apply(gt).to_vector<double>();
  const auto data = meas.data.to_vector<double>();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < data.size(); ++i) {
    diff = std::max(diff, std::abs(data[i] - model[i]));
    scale = std::max(scale, std::abs(model[i]));
  }
  EXPECT_GT(diff, 1e-5 * scale);
  EXPECT_LT(diff, 0.02 * scale);
  EXPECT_NE(std::string(nefi::poisson_source_data_tag()), op.fidelity_tag());
  // Observation masks: the random fraction and the boundary strip.
  p.set("obs", "random");
  p.set("obs_fraction", "0.3");
  const auto m = inst->make_measurement(p, 0).first.mask.to_vector<double>();
  double seen = 0;
  for (double v : m) seen += v;
  EXPECT_NEAR(seen / m.size(), 0.3, 0.05);
  p.set("obs", "boundary");
  const auto b = inst->make_measurement(p, 0).first.mask.to_vector<double>();
  EXPECT_EQ(b[0], 1.0);
  EXPECT_EQ(b[16 * 32 + 16], 0.0);
  EXPECT_EQ(b[3 * 32 + 16], 0.0);  // width 3: rows 0-2
  EXPECT_EQ(b[2 * 32 + 16], 1.0);
}

TEST(NefiPoissonSource, BadValuesAreOneLineErrorsNamingTheKey) {
  auto inst = nefi::find_instance("poisson_source");
  const nefi::test::BadValue bad_values[] = {{"tv", "-1"},          {"tv_eps", "0"},
                                             {"l1", "-1"},          {"n", "4"},
                                             {"kappa", "-1"},       {"extent", "0"},
                                             {"spectrum", "fem"},   {"obs", "ring"},
                                             {"obs_fraction", "0"}, {"obs_fraction", "1e-6"},
                                             {"scene", "stars"},    {"boundary_width", "40"},
                                             {"noise_std", "-0.1"}, {"data_loss", "l1"},
                                             {"init_value", "0"},   {"point_cells", "0"}};
  nefi::test::expect_bad_values_name_their_key(inst->default_config(), bad_values,
                                               [&](const nefi::Params& p) {
                                                 inst->make_measurement(p, 0);
                                                 inst->run(p, "grid", 0, {});
                                               });
}

// Smoke floors over seeds 0-2. Measured (1 thread, session 8): neural 30.80 /
// 29.04 / 31.99 dB, every source found (4 / 3 / 4); grid + TV 29.14 / 26.71 /
// 30.23 dB.
TEST(NefiPoissonSource, SmokeQualityFloor) {
  const fk::test::ThreadCount one_thread(1);
  nefi::RunConfig c = nefi::load_run_config_file(config_path("poisson_source_smoke.yaml"));
  auto inst = nefi::find_instance("poisson_source");
  double total = 0;
  for (int s = 0; s < 3; ++s) {
    auto out = inst->run(c.config, "neural", s, {});
    EXPECT_GT(out.metrics.at("psnr"), 28.0) << "seed " << s;
    EXPECT_EQ(out.metrics.at("sources_found"), out.metrics.at("n_sources")) << "seed " << s;
    total += out.metrics.at("psnr");
  }
  EXPECT_GT(total / 3, 30.0);  // measured 30.61
  auto g = inst->run(c.config, "grid", 0, {});
  EXPECT_GT(g.metrics.at("psnr"), 27.5);  // measured 29.14
}

}  // namespace
