#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/parallel.h"
#include "nefi/instances/eit_model.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/test_files.h"

namespace {

// Every pattern injects zero net current (the pure-Neumann problem is
// compatible), and the patterns are the trigonometric ones.
TEST(NefiEit, CurrentPatternsAreCompatible) {
  const int64_t n = 12;
  const auto b = nefi::eit::current_patterns(n, 6, 2.0);
  for (int64_t p = 0; p < 6; ++p) {
    double sum = 0, peak = 0;
    for (int64_t i = 0; i < n * n; ++i) {
      sum += b[p * n * n + i];
      peak = std::max(peak, std::abs(b[p * n * n + i]));
    }
    EXPECT_NEAR(sum, 0.0, 1e-12 * peak) << p;
    EXPECT_GT(peak, 0.5 * 2.0 / (2.0 / n)) << p;  // A / h, up to the cosine's sampling
  }
  // Pattern 0 in the corner cell (0, 0): the first face of side 0 (s =
  // 1/(8n)) and the last of side 3 (s = 1 − 1/(8n)), each A cos(2π s) / h.
  EXPECT_NEAR(b[0], 2 * 2.0 * std::cos(2 * std::numbers::pi / (8.0 * n)) / (2.0 / n), 1e-12);
}

// The boundary trace is exact for linear potentials (the two-cell
// extrapolation, and the area average of a linear function), at the native
// grid and at twice it, referenced to its mean.
TEST(NefiEit, TraceIsExactForLinearPotentials) {
  const int64_t native = 6;
  for (int64_t n : {6, 12}) {
    const auto w = nefi::eit::trace_matrix(n, native);
    const double h = 2.0 / n, H = 2.0 / native;
    std::vector<double> u(n * n);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        u[i * n + j] = 0.7 * (-1 + (i + 0.5) * h) - 0.3 * (-1 + (j + 0.5) * h);
    std::vector<double> want;
    for (int side = 0; side < 4; ++side)
      for (int64_t t = 0; t < native; ++t) {
        const double a = -1 + (t + 0.5) * H;
        const double x = side == 0 ? a : side == 1 ? 1 : side == 2 ? -a : -1;
        const double y = side == 0 ? -1 : side == 1 ? a : side == 2 ? 1 : -a;
        want.push_back(0.7 * x - 0.3 * y);
      }
    double mean = 0;
    for (double v : want) mean += v / static_cast<double>(want.size());
    for (int64_t r = 0; r < 4 * native; ++r) {
      double got = 0;
      for (int64_t c = 0; c < n * n; ++c) got += w[r * n * n + c] * u[c];
      EXPECT_NEAR(got, want[r] - mean, 1e-12) << "n " << n << " row " << r;
    }
  }
  EXPECT_THROW(nefi::eit::trace_matrix(1, 4), fk::Error);
}

// Inverse-crime guard: the generator's clean voltages (2x grid, f64, tol
// 1e-10, its own tag) are close to, but not, the inversion operator's at the
// true conductivity.
TEST(NefiEit, DataGeneratorIsAHigherFidelitySolve) {
  auto inst = nefi::find_instance("eit");
  nefi::RunConfig c = nefi::load_run_config_file(nefi::test::config_path("eit_smoke.yaml"));
  c.config.set("noise_std", "0");
  auto s = inst->setup(c.config, "grid", 0);
  ASSERT_TRUE(s.has_value());
  EXPECT_NE(std::string(nefi::eit_data_tag()), s->problem.op->fidelity_tag());
  const auto clean = s->measurement.data.to_vector<double>();
  const auto model = s->problem.op->apply(s->gt.to(fk::DType::F32)).to_vector<double>();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < clean.size(); ++i) {
    diff += (clean[i] - model[i]) * (clean[i] - model[i]);
    scale += clean[i] * clean[i];
  }
  EXPECT_GT(std::sqrt(diff / scale), 1e-4);
  EXPECT_LT(std::sqrt(diff / scale), 0.1);
  EXPECT_EQ(s->measurement.data.shape(), fk::Dims({12, 96}));
}

TEST(NefiEit, BadValuesAreErrorsNamingTheKey) {
  auto inst = nefi::find_instance("eit");
  for (auto [key, value] :
       std::vector<std::pair<const char*, const char*>>{{"contrast", "[3]"},
                                                        {"contrast", "[6, 3]"},
                                                        {"scene", "ring"},
                                                        {"n_patterns", "0"},
                                                        {"sigma_min", "2"},
                                                        {"grad_mode", "adjoint"},
                                                        {"check_every", "0"},
                                                        {"tol", "0"}}) {
    nefi::Params p = inst->default_config();
    p.set("n", "16");
    p.set(key, value);
    try {
      inst->make_measurement(p, 0);
      ADD_FAILURE() << key;
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(inst->run(inst->default_config(), "fbp", 0, {}), fk::Error);
}

// The smoke preset's neural field over seeds 0-2 (about 2 s of CPU each):
// floors below the measured values (see configs/eit_smoke.yaml).
void smoke_floor(int seed, double psnr_floor, double iou_floor) {
  fk::set_num_threads(1);
  nefi::RunConfig c = nefi::load_run_config_file(nefi::test::config_path("eit_smoke.yaml"));
  auto out = nefi::find_instance("eit")->run(c.config, "neural", seed, {});
  EXPECT_GT(out.metrics.at("psnr"), psnr_floor) << "seed " << seed;
  EXPECT_GT(out.metrics.at("inclusion_iou"), iou_floor) << "seed " << seed;
}
TEST(NefiEit, SmokeQualityFloorSeed0) {
  smoke_floor(0, 15.5, 0.7);
}
TEST(NefiEit, SmokeQualityFloorSeed1) {
  smoke_floor(1, 15.0, 0.6);
}
TEST(NefiEit, SmokeQualityFloorSeed2) {
  smoke_floor(2, 15.0, 0.65);
}

}  // namespace
