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

// The projections follow the reference's App. H.3 rule (nefi 0.1.2): the 2-D
// mask thresholds the depth-averaged relative deficit against the bulk (lower
// median per slice) at max(k σ̂, 1e-3), σ̂ = 1.4826 · MAD with lower medians.
TEST(ThermalMetrics, DefectMaskUsesTheLowerMedianBulk) {
  // Four columns, one cell each: bulk = lower median {0.02, 0.05, 0.1, 0.1} =
  // 0.05 (the mid-point 0.075 would mask nothing); deficits {−1, −1, 0, 0.6},
  // σ̂ = 0, so the 1e-3 floor decides.
  const fk::Dims s{2, 2, 1};
  const auto m = th::project_defects({0.1, 0.1, 0.05, 0.02}, s, 1.0, 2.0);
  EXPECT_EQ(m.mask, (std::vector<bool>{false, false, false, true}));
  EXPECT_DOUBLE_EQ(m.depth[3], 0.5);
  for (int p = 0; p < 3; ++p) EXPECT_TRUE(std::isnan(m.depth[p])) << p;
}

TEST(ThermalMetrics, DefectMaskGatesTheDeficitAtKSigma) {
  // Five columns: bulk 0.100, deficits {0, −0.02, 0.02, −0.04, 0.10}, median 0,
  // MAD 0.02, σ̂ = 0.029652: k = 2 keeps only the 0.10 column, k = 0.5 (threshold
  // 0.0148) also the 0.02 one.
  const fk::Dims s{1, 5, 1};
  const std::vector<double> v{0.100, 0.102, 0.098, 0.104, 0.090};
  EXPECT_EQ(th::project_defects(v, s, 1.0, 2.0).mask,
            (std::vector<bool>{false, false, false, false, true}));
  EXPECT_EQ(th::project_defects(v, s, 1.0, 0.5).mask,
            (std::vector<bool>{false, false, true, false, true}));
  EXPECT_DOUBLE_EQ(th::project_defects(v, s, 1.0, 2.0).depth[4], 0.5);
}

TEST(ThermalMetrics, DefectDepthIsTheMedianFlaggedCellDepth) {
  const fk::Dims s{4, 4, 4};
  const double H = 2.0;  // cell centres at 0.25, 0.75, 1.25, 1.75
  std::vector<double> v(s.numel(), 0.1);
  for (int64_t k : {1, 2}) v[at(s, 0, 0, k)] = 0.01;
  for (int64_t k : {0, 1, 3}) v[at(s, 2, 2, k)] = 0.01;
  // A faint cell: its column's averaged deficit 2.5e-4 stays under the 1e-3
  // floor, so the column is sound although the cell itself is below the bulk.
  v[at(s, 1, 1, 3)] = 0.0999;
  const auto m = th::project_defects(v, s, H, 2.0);
  for (int64_t p = 0; p < 16; ++p) EXPECT_EQ(m.mask[p], p == 0 || p == 10) << p;
  EXPECT_DOUBLE_EQ(m.depth[0], 1.0);    // median of 0.75, 1.25
  EXPECT_DOUBLE_EQ(m.depth[10], 0.75);  // median of 0.25, 0.75, 1.75
  std::vector<bool> truth(s.numel());
  for (int64_t i = 0; i < s.numel(); ++i) truth[i] = v[i] < 0.03;
  const auto g = th::project_truth(truth, s, H);
  EXPECT_EQ(g.mask, m.mask);
  EXPECT_DOUBLE_EQ(g.depth[0], 1.0);
  EXPECT_DOUBLE_EQ(g.depth[10], 0.75);
  const auto e = th::depth_errors(m, g);
  EXPECT_EQ(e.columns, 2);
  EXPECT_EQ(e.abs_rel, 0.0);
  EXPECT_EQ(e.delta1, 1.0);
}

TEST(ThermalMetrics, DepthErrorsAndMaskOverlaps) {
  const double nan = std::nan("");
  th::DefectMap gt, pred;
  gt.mask = {true, true, false, true};
  gt.depth = {0.5, 0.25, nan, 0.4};
  pred.mask = {true, false, true, true};
  pred.depth = {0.6, nan, 0.3, 0.2};
  // Columns 0 and 3 are found by both: 0.6 vs 0.5 and 0.2 vs 0.4.
  const auto e = th::depth_errors(pred, gt);
  EXPECT_EQ(e.columns, 2);
  EXPECT_NEAR(e.abs_rel, (0.1 / 0.5 + 0.2 / 0.4) / 2, 1e-12);
  EXPECT_NEAR(e.rmse, std::sqrt((0.01 + 0.04) / 2), 1e-12);
  EXPECT_DOUBLE_EQ(e.delta1, 0.5);
  EXPECT_DOUBLE_EQ(th::iou_2d(pred.mask, gt.mask), 2.0 / 4.0);
  EXPECT_DOUBLE_EQ(th::dice_2d(pred.mask, gt.mask), 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(th::iou_2d({false}, {false}), 1.0);
  EXPECT_THROW(th::iou_2d({true}, {true, false}), fk::Error);
  EXPECT_THROW(th::project_truth({true}, {2, 2, 1}, 1.0), fk::Error);
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
  // No detected column meets a true one: the depth errors are absent.
  EXPECT_EQ(m.count("depth_abs_rel") + m.count("depth_rmse") + m.count("depth_delta1"), 0u);
}

}  // namespace
