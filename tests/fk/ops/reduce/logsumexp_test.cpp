#include "fk/ops/reduce/logsumexp.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "../../test_util.h"
#include "../backward_check.h"
#include "reference.h"

namespace fk {
namespace {

using namespace reduce_ref;

// f64 logsumexp by plain loops: NaN if there is one, -inf for all -inf, +inf
// if there is a +inf, else m + log(sum exp(x - m)) in long double.
double ref_lse_f64(const std::vector<double>& g) {
  const double inf = std::numeric_limits<double>::infinity();
  double m = -inf;
  for (double v : g) {
    if (v != v) return v;
    m = std::max(m, v);
  }
  if (std::isinf(m)) return m;
  long double s = 0;
  for (double v : g) s += std::exp(static_cast<long double>(v) - m);
  return static_cast<double>(m + std::log(s));
}

// f32 logsumexp (AVX2: two passes, the vector exp; generic: the online form in
// f64) against the f64 loop, along the last dim (runs, and runs cut into
// blocks) and dim 0 (rows of lanes), with rows holding -inf, +inf and NaN.
// Bound: 2^-23 |result| + 5e-7, i.e. the result's rounding to f32 (up to 2^-24
// |result|, at most 0.72 of that observed on both paths) plus log(sum)'s error
// from the f32 exp (1 ulp) and x - m rounded to f32 (each ~6e-8 relative to a sum
// >= 1), with margin.
TEST(Logsumexp, LogsumexpF32MatchesF64OnBothIsaPaths) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  for (int64_t n : {1, 5, 8, 13, 256, 300, 40001}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const int64_t rows = 9;
    // Shifted by -log(n) so that most results are O(1) and the f32 rounding
    // of the result does not hide the error of the sum.
    const double shift = -std::log(static_cast<double>(n));
    std::vector<double> base =
        test::random_values(rows * n, shift - 4, shift + 4, static_cast<unsigned>(n));
    std::vector<float> v(base.begin(), base.end());
    auto at = [&](int64_t r, int64_t i) -> float& { return v[static_cast<size_t>(r * n + i)]; };
    for (int64_t i = 0; i < n; ++i) at(0, i) *= 8;                    // a wide spread of exponents
    for (int64_t i = 0; i < n; ++i) at(1, i) = -inf;                  // all -inf
    for (int64_t i = 0; i < n; i += 2) at(2, i) = -inf;               // some -inf
    at(3, n / 2) = inf;                                               // a +inf
    at(4, n - 1) = nan;                                               // a NaN last
    at(5, 0) = inf, at(5, n - 1) = -inf;                              // +inf and -inf
    at(6, n / 3) = nan, at(6, n - 1) = inf;                           // NaN and +inf
    for (int64_t i = 0; i < n; ++i) at(7, i) = 87.0f + at(7, i) / 4;  // exp(x) overflows f32
    for (int64_t i = 0; i < n; ++i) at(8, i) = -100.0f + at(8, i) / 4;  // exp(x) underflows
    Tensor x = from_vector(v, {rows, n});
    for (int d : {1, 0}) {
      Tensor xd = d == 1 ? x : x.t().contiguous();  // rows as runs, or as lanes
      std::vector<double> want;
      for (int64_t r = 0; r < rows; ++r) {
        want.push_back(
            ref_lse_f64(std::vector<double>(v.begin() + r * n, v.begin() + (r + 1) * n)));
      }
      on_both_isa_paths([&](const char*) {
        std::vector<double> got = logsumexp(xd, {d}).to_vector<double>();
        ASSERT_EQ(got.size(), want.size());
        for (size_t r = 0; r < got.size(); ++r) {
          if (std::isnan(want[r]) || std::isinf(want[r])) {
            EXPECT_TRUE(same_bits(got[r], want[r]) || (std::isnan(got[r]) && std::isnan(want[r])))
                << "row " << r << " dim " << d << ": " << got[r] << " vs " << want[r];
          } else {
            EXPECT_NEAR(got[r], want[r], std::fabs(want[r]) * 0x1p-23 + 5e-7)
                << "row " << r << " dim " << d;
          }
        }
      });
    }
  }
}

TEST(Logsumexp, PureBackwardIsTheSoftmaxTimesG) {
  Tensor x = test::random_tensor({3, 4, 5}, DType::F64, -3, 3, 94);
  for (const Dims& dims : {Dims{0}, Dims{1, 2}, Dims{-1}}) {
    for (bool keepdim : {false, true}) {
      auto f = [&](const Tensor& t) { return logsumexp(t, dims, keepdim); };
      Tensor out = f(x);
      Tensor g = test::random_tensor(out.shape(), DType::F64, -1, 1, 95);
      Tensor got = logsumexp_backward(g, x, out, dims, keepdim);
      test::expect_same(got, test::autograd_grad(f, x, g), 1e-15);
    }
  }
  // Over one dim the gradient is g times the softmax.
  Tensor g = test::random_tensor({3, 4}, DType::F64, -1, 1, 96);
  test::expect_same(logsumexp_backward(g, x, logsumexp(x, {2}), {2}),
                    mul(softmax(x, 2), g.reshape({3, 4, 1})), 1e-15);
}

}  // namespace
}  // namespace fk
