#include "nefi/solve/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/ssim_loops.h"

namespace {

using nefi::test::ssim_loops;

void fill_pair(int64_t n, std::vector<double>& gt, std::vector<double>& x) {
  gt.resize(n);
  x.resize(n);
  for (int64_t p = 0; p < n; ++p) {
    gt[p] = 0.3 + 0.25 * std::sin(0.37 * p) + 0.1 * std::cos(0.11 * p * p);
    x[p] = gt[p] + 0.05 * std::cos(1.3 * p * p);
  }
}

double range_of(const std::vector<double>& v) {
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return *hi - *lo;
}

TEST(NefiSsim, OneDimensionalMatchesLoops) {
  for (int64_t n : {int64_t{40}, int64_t{6}, int64_t{3}}) {
    std::vector<double> gt, x;
    fill_pair(n, gt, x);
    const int win = n >= 7 ? 7 : (n % 2 ? static_cast<int>(n) : static_cast<int>(n) - 1);
    const double want = ssim_loops(x, gt, 1, n, win, range_of(gt));
    EXPECT_NEAR(nefi::ssim(fk::from_vector(x), fk::from_vector(gt)), want, 1e-12) << n;
    EXPECT_LT(want, 0.999);
  }
}

TEST(NefiSsim, TwoDimensionalMatchesLoopsOverValidWindows) {
  // 7 taps; 5 taps on a 5-row plane; 3 taps when the short side is 4.
  for (const fk::Dims& s : {fk::Dims{12, 9}, fk::Dims{5, 11}, fk::Dims{4, 6}}) {
    const int win = s[0] >= 7 ? 7 : (s[0] == 5 ? 5 : 3);
    std::vector<double> gt, x;
    fill_pair(s.numel(), gt, x);
    const double want = ssim_loops(x, gt, s[0], s[1], win, range_of(gt));
    EXPECT_NEAR(nefi::ssim(fk::from_vector(x, s), fk::from_vector(gt, s)), want, 1e-12) << s.str();
    // An explicit data range replaces max(gt) - min(gt) in C1 and C2.
    EXPECT_NEAR(nefi::ssim(x, gt, s, 2.5), ssim_loops(x, gt, s[0], s[1], win, 2.5), 1e-12);
    EXPECT_LT(want, 0.99);
  }
}

TEST(NefiSsim, ThreeDimensionalIsTheMeanOverLastAxisSlices) {
  const fk::Dims s{8, 10, 3};
  std::vector<double> gt, x;
  fill_pair(s.numel(), gt, x);
  double want = 0;
  for (int64_t k = 0; k < s[2]; ++k) {
    std::vector<double> a, b;
    for (int64_t p = 0; p < s[0] * s[1]; ++p) {
      a.push_back(x[p * s[2] + k]);
      b.push_back(gt[p * s[2] + k]);
    }
    want += ssim_loops(a, b, s[0], s[1], 7, range_of(gt)) / 3.0;
  }
  EXPECT_NEAR(nefi::ssim(fk::from_vector(x, s), fk::from_vector(gt, s)), want, 1e-12);
}

TEST(NefiSsim, IdentityConstantsAndBadInput) {
  std::vector<double> gt, x;
  fill_pair(64, gt, x);
  EXPECT_NEAR(nefi::ssim(gt, gt, fk::Dims{8, 8}), 1.0, 1e-12);
  // Constant fields 0.1 vs 0.2 (range 0 -> 1): only the luminance term,
  // (2 0.1 0.2 + c1) / (0.1^2 + 0.2^2 + c1) with c1 = 0.01^2.
  std::vector<double> a(64, 0.2), b(64, 0.1);
  EXPECT_NEAR(nefi::ssim(a, b, fk::Dims{8, 8}), 0.0401 / 0.0501, 1e-12);
  EXPECT_THROW(nefi::ssim(a, b, fk::Dims{2, 2, 4, 4}), fk::Error);
  EXPECT_THROW(nefi::ssim(a, b, fk::Dims{8, 7}), fk::Error);
  EXPECT_THROW(nefi::ssim(a, b, fk::Dims{8, 8}, 0.0), fk::Error);
  EXPECT_THROW(nefi::ssim(fk::from_vector(a), fk::zeros({3})), fk::Error);
}

// masked_ssim weights each valid window's SSIM by the mask at its centre:
// it matches the plain loops with the same weights, an all-ones mask gives
// ssim (1-D, 2-D, 3-D), the weights' scale does not matter, and a one-hot
// mask scores the single window there (the SSIM of that 7x7 crop).
TEST(NefiMaskedSsim, MatchesWeightedLoopsAndPlainSsim) {
  const fk::Dims s{12, 9};
  std::vector<double> gt, x;
  fill_pair(s.numel(), gt, x);
  std::vector<double> mask(s.numel());
  for (int64_t p = 0; p < s.numel(); ++p) mask[p] = p % 5 == 0 ? 0.0 : 0.2 + 0.1 * (p % 7);
  const double want = ssim_loops(x, gt, s[0], s[1], 7, range_of(gt), mask);
  EXPECT_NEAR(nefi::masked_ssim(x, gt, mask, s), want, 1e-12);
  EXPECT_GT(std::abs(want - nefi::ssim(x, gt, s)), 1e-4);  // the weights change it
  std::vector<double> doubled(mask);
  for (double& w : doubled) w *= 2;
  EXPECT_NEAR(nefi::masked_ssim(x, gt, doubled, s), want, 1e-12);
  EXPECT_NEAR(nefi::masked_ssim(x, gt, mask, s, 2.5), ssim_loops(x, gt, s[0], s[1], 7, 2.5, mask),
              1e-12);
  for (const fk::Dims& d : {fk::Dims{40}, fk::Dims{5, 11}, fk::Dims{8, 10, 3}}) {
    std::vector<double> a, b;
    fill_pair(d.numel(), b, a);
    const fk::Tensor ones = fk::full(d, 1.0, {fk::DType::F64});
    EXPECT_NEAR(nefi::masked_ssim(fk::from_vector(a, d), fk::from_vector(b, d), ones),
                nefi::ssim(fk::from_vector(a, d), fk::from_vector(b, d)), 1e-12)
        << d.str();
  }
  std::vector<double> one_hot(s.numel(), 0.0), xc, gc;
  one_hot[(4 + 3) * s[1] + 1 + 3] = 1.0;  // the window at (4, 1)
  for (int64_t r = 4; r < 11; ++r)
    for (int64_t c = 1; c < 8; ++c) {
      xc.push_back(x[r * s[1] + c]);
      gc.push_back(gt[r * s[1] + c]);
    }
  EXPECT_NEAR(nefi::masked_ssim(x, gt, one_hot, s),
              nefi::ssim(xc, gc, fk::Dims{7, 7}, range_of(gt)), 1e-12);
}

TEST(NefiMaskedSsim, BadMasksAreErrors) {
  const fk::Dims s{8, 8};
  std::vector<double> gt, x;
  fill_pair(s.numel(), gt, x);
  std::vector<double> edge(s.numel(), 0.0);  // weight only where no window centres
  for (int64_t c = 0; c < 8; ++c) edge[c] = edge[7 * 8 + c] = 1.0;
  edge[2 * 8 + 4] = 1.0;
  EXPECT_THROW(nefi::masked_ssim(x, gt, edge, s), fk::Error);
  std::vector<double> negative(s.numel(), 1.0);
  negative[30] = -0.5;
  EXPECT_THROW(nefi::masked_ssim(x, gt, negative, s), fk::Error);
  negative[30] = NAN;
  EXPECT_THROW(nefi::masked_ssim(x, gt, negative, s), fk::Error);
  EXPECT_THROW(nefi::masked_ssim(x, gt, std::vector<double>(63, 1.0), s), fk::Error);
  EXPECT_THROW(nefi::masked_ssim(fk::from_vector(x, s), fk::from_vector(gt, s), fk::ones({8, 7})),
               fk::Error);
  EXPECT_THROW(nefi::masked_ssim(x, gt, std::vector<double>(64, 1.0), fk::Dims{2, 2, 4, 4}),
               fk::Error);
}

}  // namespace
