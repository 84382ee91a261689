#include "nefi/solve/localization.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "fk/error.h"

namespace {

// The minimum over every injective map of the smaller side into the larger
// (all permutations of the larger side's indices, first k taken).
double brute_force_min(const std::vector<double>& c, int64_t rows, int64_t cols) {
  const bool tall = rows > cols;
  const int64_t k = std::min(rows, cols), big = std::max(rows, cols);
  std::vector<int64_t> perm(big);
  std::iota(perm.begin(), perm.end(), 0);
  double best = INFINITY;
  do {
    double s = 0;
    for (int64_t a = 0; a < k; ++a) s += tall ? c[perm[a] * cols + a] : c[a * cols + perm[a]];
    best = std::min(best, s);
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

double assigned_cost(const std::vector<double>& c, const std::vector<int64_t>& a, int64_t cols) {
  double s = 0;
  for (size_t r = 0; r < a.size(); ++r)
    if (a[r] >= 0) s += c[r * cols + a[r]];
  return s;
}

TEST(NefiLocalization, HungarianMatchesBruteForceOnSmallMatrices) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(-3.0, 10.0);
  std::uniform_int_distribution<int> ties(0, 3);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t rows = 1 + trial % 6, cols = 1 + (trial / 6) % 6;
    std::vector<double> c(rows * cols);
    // Every third matrix has small integer costs: many ties.
    for (double& v : c) v = trial % 3 == 0 ? ties(rng) : u(rng);
    const auto a = nefi::hungarian_assignment(c, rows, cols);
    ASSERT_EQ(static_cast<int64_t>(a.size()), rows);
    std::vector<int> used(cols, 0);
    int64_t assigned = 0;
    for (int64_t r : a)
      if (r >= 0) {
        ASSERT_LT(r, cols);
        EXPECT_EQ(used[r]++, 0) << "column used twice";
        ++assigned;
      }
    EXPECT_EQ(assigned, std::min(rows, cols));
    EXPECT_NEAR(assigned_cost(c, a, cols), brute_force_min(c, rows, cols), 1e-12)
        << rows << "x" << cols << " trial " << trial;
  }
  EXPECT_TRUE(nefi::hungarian_assignment({}, 0, 3).empty());
  EXPECT_EQ(nefi::hungarian_assignment({}, 2, 0), (std::vector<int64_t>{-1, -1}));
  EXPECT_THROW(nefi::hungarian_assignment({1, 2, 3}, 2, 2), fk::Error);
  EXPECT_THROW(nefi::hungarian_assignment({1, NAN}, 1, 2), fk::Error);
}

TEST(NefiLocalization, PeaksAreStrictLocalMaximaAboveTheThreshold) {
  // 5x6: peaks 1.0 at (1,1), 0.5 at (3,4), a 0.3 plateau at (0,4)-(0,5),
  // 0.04 at (4,0) below 5 % of the max.
  std::vector<double> m(30, 0.0);
  m[1 * 6 + 1] = 1.0;
  m[1 * 6 + 2] = 0.6;  // a shoulder, not a peak
  m[3 * 6 + 4] = 0.5;
  m[0 * 6 + 4] = m[0 * 6 + 5] = 0.3;
  m[4 * 6 + 0] = 0.04;
  const auto p = nefi::peak_positions(m, {5, 6}, 0.05);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0], (std::pair<int64_t, int64_t>{1, 1}));
  EXPECT_EQ(p[1], (std::pair<int64_t, int64_t>{3, 4}));
  EXPECT_EQ(p[2], (std::pair<int64_t, int64_t>{0, 4}));
  EXPECT_TRUE(nefi::peak_positions(std::vector<double>(30, 0.0), {5, 6}, 0.05).empty());
  EXPECT_THROW(nefi::peak_positions(m, {5, 5}, 0.05), fk::Error);
}

TEST(NefiLocalization, HungarianF1CountsOneToOneMatchesWithinTheRadius) {
  using P = std::pair<int64_t, int64_t>;
  // Greedy nearest matching would pair (0,0)->(0,1) and leave (0,3) without
  // a partner within 2 px; the optimal assignment matches both.
  const std::vector<P> truth{{0, 1}, {0, 3}}, pred{{0, 2}, {0, 0}};
  auto m = nefi::hungarian_f1(pred, truth, 1.0);
  EXPECT_EQ(m.true_positives, 2);
  EXPECT_DOUBLE_EQ(m.f1, 1.0);
  // One miss, one spurious peak: TP 2 of 3 true and 3 predicted.
  m = nefi::hungarian_f1({{0, 0}, {5, 5}, {9, 9}}, {{1, 1}, {5, 6}, {20, 20}}, 2.0);
  EXPECT_EQ(m.true_positives, 2);
  EXPECT_NEAR(m.f1, 2.0 * 2 / 6, 1e-15);
  EXPECT_NEAR(m.mean_distance, (std::sqrt(2.0) + 1.0) / 2, 1e-15);
  EXPECT_DOUBLE_EQ(nefi::hungarian_f1({}, {}, 2.0).f1, 1.0);
  EXPECT_DOUBLE_EQ(nefi::hungarian_f1({}, {{1, 1}}, 2.0).f1, 0.0);
  // No hit, no distance: 0 would rank a method that matched nothing closest.
  EXPECT_TRUE(std::isnan(nefi::hungarian_f1({}, {{1, 1}}, 2.0).mean_distance));
  EXPECT_TRUE(std::isnan(nefi::hungarian_f1({{9, 9}}, {{1, 1}}, 2.0).mean_distance));
  EXPECT_TRUE(std::isnan(nefi::hungarian_f1({}, {}, 2.0).mean_distance));
  // Two predictions on one source: one true positive.
  m = nefi::hungarian_f1({{3, 3}, {3, 4}}, {{3, 3}}, 2.0);
  EXPECT_EQ(m.true_positives, 1);
  EXPECT_NEAR(m.f1, 2.0 / 3, 1e-15);
}

TEST(NefiLocalization, GmsdIsZeroForScaledCopiesAndGrowsWithStructureChange) {
  std::vector<double> a(64), b(64), c(64, 0.0);
  for (int i = 0; i < 64; ++i)
    a[i] = std::exp(-0.2 * ((i / 8 - 3) * (i / 8 - 3) + (i % 8 - 4) * (i % 8 - 4)));
  for (int i = 0; i < 64; ++i) b[i] = 3.0 * a[i];
  c[10] = 1.0;
  EXPECT_NEAR(nefi::gmsd(b, a, {8, 8}), 0.0, 1e-15);
  const double g = nefi::gmsd(c, a, {8, 8});
  EXPECT_GT(g, 0.1);
  EXPECT_LT(g, 1.0);
  EXPECT_THROW(nefi::gmsd(a, std::vector<double>(63), {8, 8}), fk::Error);
}

// Analytic cases: a point moved by d pixels along one axis projects to
// |d sin theta|, and the mean of sin^2 over evenly spaced angles is 1/2, so
// SWD = d / sqrt 2 (in units of the longer side); a point split in two
// halves at +-a gives a / sqrt 2 as well; identical maps (any scale) give 0.
TEST(NefiLocalization, SlicedWassersteinMatchesAnalyticTransports) {
  const int64_t H = 10, W = 16;
  std::vector<double> a(H * W, 0.0), b(H * W, 0.0), c(H * W, 0.0);
  a[4 * W + 5] = 1.0;
  b[4 * W + 8] = 2.0;  // d = 3 along the second axis, twice the mass
  EXPECT_NEAR(nefi::sliced_wasserstein(a, b, {H, W}), 3.0 / std::sqrt(2.0) / W, 1e-12);
  EXPECT_NEAR(nefi::sliced_wasserstein(a, b, {H, W}, 7), 3.0 / std::sqrt(2.0) / W, 1e-12);
  c[4 * W + 3] = c[4 * W + 7] = 0.5;  // a = 2 either side of column 5
  EXPECT_NEAR(nefi::sliced_wasserstein(a, c, {H, W}), 2.0 / std::sqrt(2.0) / W, 1e-12);
  std::vector<double> d(H * W, 0.0);
  d[7 * W + 5] = 1.0;  // d = 3 along the first axis: |d cos theta|
  EXPECT_NEAR(nefi::sliced_wasserstein(a, d, {H, W}), 3.0 / std::sqrt(2.0) / W, 1e-12);
  std::vector<double> e(c);
  for (double& v : e) v *= 5.0;
  e[0] = -1.0;  // negative cells carry no mass
  EXPECT_NEAR(nefi::sliced_wasserstein(c, e, {H, W}), 0.0, 1e-12);
  EXPECT_THROW(nefi::sliced_wasserstein(a, std::vector<double>(H * W, 0.0), {H, W}), fk::Error);
  EXPECT_THROW(nefi::sliced_wasserstein(a, b, {H, W}, 0), fk::Error);
}

}  // namespace
