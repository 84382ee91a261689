#include "nefi/instances/thermal/metrics.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fk/error.h"
#include "nefi/ssim_loops.h"

namespace {

namespace th = nefi::thermal;

int64_t at(const fk::Dims& s, int64_t i, int64_t j, int64_t k) {
  return (i * s[1] + j) * s[2] + k;
}

TEST(ThermalMetrics, PsnrWithTheBoundsRange) {
  const std::vector<double> gt{0.1, 0.2, 0.15, 0.05};
  std::vector<double> x = gt;
  for (double& v : x) v += 0.01;  // mse 1e-4
  EXPECT_NEAR(th::psnr_range(x, gt, 0.1), 20.0, 1e-9);
  EXPECT_NEAR(th::psnr_range(x, gt, 1.0), 40.0, 1e-9);
  EXPECT_THROW(th::psnr_range(x, gt, 0.0), fk::Error);
  EXPECT_THROW(th::psnr_range({1.0}, gt, 1.0), fk::Error);
}

TEST(ThermalMetrics, SsimSliceWise) {
  const fk::Dims s{6, 5, 3};
  std::vector<double> gt(s.numel()), x(s.numel());
  for (size_t p = 0; p < gt.size(); ++p) gt[p] = std::sin(0.7 * p);
  EXPECT_NEAR(th::ssim_depth(gt, gt, s, 2.0), 1.0, 1e-12);
  // Constant slices 0.1 vs 0.2 at range 1: only the luminance term is left,
  // (2·0.1·0.2 + c1) / (0.1² + 0.2² + c1), c1 = (0.01)².
  std::fill(gt.begin(), gt.end(), 0.1);
  std::fill(x.begin(), x.end(), 0.2);
  EXPECT_NEAR(th::ssim_depth(x, gt, s, 1.0), 0.0401 / 0.0501, 1e-12);
  // One slice perfect and two constant-offset slices: the mean over depth.
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j) x[at(s, i, j, 1)] = 0.1;
  EXPECT_NEAR(th::ssim_depth(x, gt, s, 1.0), (2 * 0.0401 / 0.0501 + 1) / 3, 1e-12);
}

// The reference's SSIM: a 7-tap window (3 taps on a 4-wide plane: the
// smaller side, made odd) at the valid positions, averaged over depth.
TEST(ThermalMetrics, SsimMatchesPlainLoopsOverValidWindows) {
  for (const fk::Dims& s : {fk::Dims{9, 8, 2}, fk::Dims{4, 6, 3}}) {
    const int win = s[0] == 9 ? 7 : 3;
    std::vector<double> gt(s.numel()), x(s.numel());
    for (size_t p = 0; p < gt.size(); ++p) {
      gt[p] = 0.1 + 0.05 * std::sin(0.37 * p);
      x[p] = gt[p] + 0.03 * std::cos(1.3 * p * p);
    }
    double want = 0;
    for (int64_t k = 0; k < s[2]; ++k) {
      std::vector<double> a, b;
      for (int64_t i = 0; i < s[0]; ++i)
        for (int64_t j = 0; j < s[1]; ++j) {
          a.push_back(x[at(s, i, j, k)]);
          b.push_back(gt[at(s, i, j, k)]);
        }
      want += nefi::test::ssim_loops(a, b, s[0], s[1], win, 0.25) / static_cast<double>(s[2]);
    }
    EXPECT_NEAR(th::ssim_depth(x, gt, s, 0.25), want, 1e-12) << s.str();
    EXPECT_LT(want, 0.99);  // the noise is visible
  }
}

TEST(ThermalMetrics, IouBelowTau) {
  const std::vector<double> gt{0.01, 0.01, 0.15, 0.15, 0.02};
  const std::vector<double> x{0.01, 0.15, 0.01, 0.15, 0.029};
  // below 0.03: gt {0, 1, 4}, x {0, 2, 4}: ∩ 2, ∪ 4.
  EXPECT_DOUBLE_EQ(th::iou_below(x, gt, 0.03), 0.5);
  EXPECT_DOUBLE_EQ(th::iou_below({0.1}, {0.1}, 0.03), 1.0);  // both empty
  EXPECT_DOUBLE_EQ(th::iou_below({0.01}, {0.1}, 0.03), 0.0);
}

// A unit step along x at cell i0: central differences give |∇| = 1/2 at
// cells i0 − 1 and i0, so with threshold 0.5 · max the edges are {i0 − 1, i0}.
std::vector<double> step_x(const fk::Dims& s, int64_t i0) {
  std::vector<double> v(s.numel());
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j)
      for (int64_t k = 0; k < s[2]; ++k) v[at(s, i, j, k)] = i >= i0 ? 1.0 : 0.0;
  return v;
}

TEST(ThermalMetrics, EdgeF1WithDilation) {
  const fk::Dims s{16, 4, 3};
  const auto gt = step_x(s, 8);
  EXPECT_DOUBLE_EQ(th::edge_f1(gt, gt, s, 0.5, 0), 1.0);
  // Shifted by one cell: edges {8, 9} vs {7, 8}; within one cell of each other.
  EXPECT_DOUBLE_EQ(th::edge_f1(step_x(s, 9), gt, s, 0.5, 1), 1.0);
  // ... and half of them coincide exactly.
  EXPECT_DOUBLE_EQ(th::edge_f1(step_x(s, 9), gt, s, 0.5, 0), 0.5);
  // Shifted by two: {9, 10}; only 9 lies within one cell of {7, 8} (6..9),
  // and only 8 within one cell of {9, 10}: precision = recall = 1/2.
  EXPECT_DOUBLE_EQ(th::edge_f1(step_x(s, 10), gt, s, 0.5, 1), 0.5);
  EXPECT_DOUBLE_EQ(th::edge_f1(step_x(s, 10), gt, s, 0.5, 2), 1.0);
  // A flat prediction has no edges.
  EXPECT_DOUBLE_EQ(th::edge_f1(std::vector<double>(s.numel(), 0.3), gt, s, 0.5, 1), 0.0);
}

TEST(ThermalMetrics, DefectProjectionWithTheMadRule) {
  const fk::Dims s{8, 8, 5};
  const double H = 1.0;
  std::vector<double> v(s.numel());
  // A bulk of 0.15 with ±1e-4 texture (σ̂ ≈ 1.48e-4, threshold ≈ 3e-4) and a
  // 0.01 block at depth cells 2..3 under columns x 2..4, y 3..5.
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j)
      for (int64_t k = 0; k < s[2]; ++k) {
        const bool in = i >= 2 && i <= 4 && j >= 3 && j <= 5 && k >= 2 && k <= 3;
        v[at(s, i, j, k)] = in ? 0.01 : 0.15 + ((i + j + k) % 2 ? 1e-4 : -1e-4);
      }
  const auto m = th::project_defects(v, s, H, 2.0);
  int64_t n = 0;
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j) {
      const bool in = i >= 2 && i <= 4 && j >= 3 && j <= 5;
      EXPECT_EQ(m.mask[i * s[1] + j], in) << i << "," << j;
      EXPECT_DOUBLE_EQ(m.depth[i * s[1] + j], in ? 2.5 / 5 : H);
      n += in;
    }
  EXPECT_EQ(n, 9);
  // At k = 0 the texture alone (no σ̂ gate) would flag half the columns.
  const auto loose = th::project_defects(v, s, H, 0.0);
  EXPECT_GT(std::count(loose.mask.begin(), loose.mask.end(), true), 9);
  // A noiseless volume (σ̂ = 0) flags exactly the defect columns.
  std::vector<double> clean(s.numel(), 0.12);
  clean[at(s, 6, 1, 4)] = 0.02;
  const auto c = th::project_defects(clean, s, H, 2.0);
  EXPECT_EQ(std::count(c.mask.begin(), c.mask.end(), true), 1);
  EXPECT_TRUE(c.mask[6 * 8 + 1]);
  EXPECT_DOUBLE_EQ(c.depth[6 * 8 + 1], 0.9);
}

TEST(ThermalMetrics, DepthErrorsAndMaskOverlaps) {
  th::DefectMap gt, pred;
  gt.mask = {true, true, false, false};
  gt.depth = {0.5, 0.25, 1.0, 1.0};
  pred.mask = {true, false, true, false};
  pred.depth = {0.6, 1.0, 0.3, 1.0};
  // Column 0: 0.6 vs 0.5; column 1 missed (counts as depth H = 1).
  const auto e = th::depth_errors(pred, gt, 1.0);
  EXPECT_NEAR(e.abs_rel, (0.1 / 0.5 + 0.75 / 0.25) / 2, 1e-12);
  EXPECT_NEAR(e.rmse, std::sqrt((0.01 + 0.5625) / 2), 1e-12);
  EXPECT_DOUBLE_EQ(e.delta1, 0.5);
  EXPECT_DOUBLE_EQ(th::iou_2d(pred.mask, gt.mask), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(th::dice_2d(pred.mask, gt.mask), 0.5);
  EXPECT_DOUBLE_EQ(th::iou_2d({false}, {false}), 1.0);
  EXPECT_THROW(th::iou_2d({true}, {true, false}), fk::Error);
}

TEST(ThermalMetrics, VolumeMetricsOfThePerfectAndTheUniformGuess) {
  const fk::Dims s{8, 8, 4};
  std::vector<double> gt(s.numel(), 0.15);
  for (int64_t i = 3; i <= 5; ++i)
    for (int64_t j = 2; j <= 4; ++j) gt[at(s, i, j, 1)] = 0.01;
  th::VolumeMetricOptions o;
  auto m = th::volume_metrics(gt, gt, s, o);
  EXPECT_EQ(m.at("mse"), 0.0);
  EXPECT_EQ(m.at("psnr"), 99.0);
  EXPECT_NEAR(m.at("ssim"), 1.0, 1e-12);
  for (const char* k : {"iou", "edge_f1", "iou_2d", "dice_2d", "depth_delta1"})
    EXPECT_EQ(m.at(k), 1.0) << k;
  EXPECT_EQ(m.at("depth_abs_rel"), 0.0);
  EXPECT_EQ(m.at("depth_rmse"), 0.0);
  // The uniform start: nothing found; every defect column missed at depth H.
  m = th::volume_metrics(std::vector<double>(s.numel(), 0.15), gt, s, o);
  EXPECT_EQ(m.at("iou"), 0.0);
  EXPECT_EQ(m.at("edge_f1"), 0.0);
  EXPECT_EQ(m.at("iou_2d"), 0.0);
  EXPECT_NEAR(m.at("mse"), 9 * 0.14 * 0.14 / s.numel(), 1e-15);
  EXPECT_NEAR(m.at("depth_abs_rel"), (1.0 - 0.375) / 0.375, 1e-12);
  EXPECT_EQ(m.at("depth_delta1"), 0.0);
}

}  // namespace
