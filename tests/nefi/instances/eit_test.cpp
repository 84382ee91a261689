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

// The scenes are the reference's NumPy draw: its seed 2 is the conductive
// σ = 10.9 inclusion it reports, seeds 0 and 1 are resistive; every
// inclusion lies within the draw's bounds, and multi draws 2–3 disjoint
// ellipses.
TEST(NefiEit, ScenesAreTheReferenceDraw) {
  const auto s2 = nefi::eit::draw_inclusions("single", 8, 12, 1.0, 2);
  ASSERT_EQ(s2.size(), 1u);
  EXPECT_NEAR(s2[0].sigma, 10.914, 5e-4);
  for (uint64_t seed : {0, 1})
    EXPECT_LT(nefi::eit::draw_inclusions("single", 8, 12, 1.0, seed)[0].sigma, 1.0 / 8);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const auto m = nefi::eit::draw_inclusions("multi", 3, 6, 1.0, seed);
    EXPECT_TRUE(m.size() == 2 || m.size() == 3) << seed;
    for (const auto& d : m) {
      EXPECT_LE(std::hypot(d.cx, d.cy), 0.5);
      EXPECT_TRUE(d.a >= 0.2 && d.a <= 0.4 && d.b >= 0.2 && d.b <= 0.4);
      const double c = std::max(d.sigma, 1 / d.sigma);
      EXPECT_TRUE(c >= 3 && c <= 6) << c;
    }
    const auto h = nefi::eit::draw_inclusions("contrast", 3, 6, 1.0, seed)[0];
    EXPECT_GE(std::max(h.sigma, 1 / h.sigma), 10.0);
  }
  // Area coverage: a disk of radius 0.5 covers π/4 of the box's 4.
  const auto map = nefi::eit::render_sigma({{0, 0, 0.5, 0.5, 0, 3.0}}, 1.0, 32, 8, 0.05, 20);
  double excess = 0;
  for (double v : map) excess += (v - 1.0) * (2.0 / 32) * (2.0 / 32);
  EXPECT_NEAR(excess, 2.0 * std::numbers::pi * 0.25, 0.01);
}

// Inclusion IoU: half of each map's own peak log-contrast, conductive and
// resistive supports matched separately.
TEST(NefiEit, InclusionIouIsSignAware) {
  using nefi::eit::inclusion_iou;
  const std::vector<double> gt{1, 10, 10, 0.1, 1, 1};
  EXPECT_DOUBLE_EQ(inclusion_iou(gt, gt, 1.0), 1.0);
  // Same supports, weaker contrast: still 1 (thresholds are per map).
  EXPECT_DOUBLE_EQ(inclusion_iou({1, 3, 3, 1 / 3.0, 1, 1}, gt, 1.0), 1.0);
  // Signs swapped: no overlap.
  EXPECT_DOUBLE_EQ(inclusion_iou({1, 0.1, 0.1, 10, 1, 1}, gt, 1.0), 0.0);
  // One of three support cells found: 1/3.
  EXPECT_NEAR(inclusion_iou({1, 10, 1, 1, 1, 1}, gt, 1.0), 1.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(inclusion_iou(std::vector<double>(6, 1.0), std::vector<double>(6, 1.0), 1.0),
                   1.0);
  EXPECT_DOUBLE_EQ(inclusion_iou(gt, std::vector<double>(6, 1.0), 1.0), 0.0);
  EXPECT_THROW(inclusion_iou({1.0}, gt, 1.0), fk::Error);
}

// The smoke preset's neural field over seeds 0-2 (about 1.5 s of CPU each):
// floors below the measured values (see configs/eit_smoke.yaml: 28.27 /
// 26.40 / 13.97 dB, IoU 1.00 / 0.79 / 0.29).
void smoke_floor(int seed, double psnr_floor, double iou_floor) {
  fk::set_num_threads(1);
  nefi::RunConfig c = nefi::load_run_config_file(nefi::test::config_path("eit_smoke.yaml"));
  auto out = nefi::find_instance("eit")->run(c.config, "neural", seed, {});
  EXPECT_GT(out.metrics.at("psnr"), psnr_floor) << "seed " << seed;
  EXPECT_GT(out.metrics.at("inclusion_iou"), iou_floor) << "seed " << seed;
}
TEST(NefiEit, SmokeQualityFloorSeed0) {
  smoke_floor(0, 25.0, 0.9);
}
TEST(NefiEit, SmokeQualityFloorSeed1) {
  smoke_floor(1, 25.0, 0.7);
}
TEST(NefiEit, SmokeQualityFloorSeed2) {
  smoke_floor(2, 13.0, 0.2);
}

}  // namespace
