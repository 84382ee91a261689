#pragma once
// Helpers shared by the tests (fk's, minkowski's and nefi's).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "fk/fk.h"

namespace fk::test {

// Deterministic pseudo-random values in [lo, hi) (independent of fk's own RNG).
inline std::vector<double> random_values(int64_t n, double lo = -1.0, double hi = 1.0,
                                         unsigned seed = 7) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(gen);
  return v;
}

inline Tensor random_tensor(const Dims& shape, DType dtype = DType::F64, double lo = -1.0,
                            double hi = 1.0, unsigned seed = 7) {
  return from_vector(random_values(shape.numel(), lo, hi, seed), shape).to(dtype);
}

inline Tensor random_complex(const Dims& shape, unsigned seed = 11) {
  auto re = random_values(shape.numel(), -1, 1, seed);
  auto im = random_values(shape.numel(), -1, 1, seed + 1);
  std::vector<c128> v(re.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = c128(re[i], im[i]);
  return from_vector(v, shape);
}

inline void expect_close(const Tensor& a, const std::vector<double>& b, double tol = 1e-6) {
  std::vector<double> av = a.to_vector<double>();
  ASSERT_EQ(av.size(), b.size());
  for (size_t i = 0; i < av.size(); ++i) EXPECT_NEAR(av[i], b[i], tol) << "at " << i;
}

// The values of x (differentiably) in a layout that is not contiguous: x is
// stacked with itself along a new innermost axis and the first copy selected,
// so the innermost stride is 2. gradcheck hands the function contiguous inputs;
// a function builds this inside to check an op on strided operands.
inline Tensor strided_copy(const Tensor& x) {
  Tensor v = stack({x, x}, -1).select(-1, 0);
  if (v.is_contiguous()) ADD_FAILURE() << "strided_copy made a contiguous view " << v.shape().str();
  return v;
}

// The message of the fk::Error f throws, "" if it throws none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// max_i |v_i| (0 for none). A NaN anywhere gives NaN, so that it fails a
// tolerance check (std::max(m, NaN) is m, which would let it pass).
inline double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) {
    if (!(std::abs(x) <= m)) m = std::abs(x);
    if (std::isnan(m)) break;
  }
  return m;
}

// max_i |a_i - b_i|, NaN when any difference is; vectors of different sizes
// fail the test.
inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size()) << "max_abs_diff of vectors of different sizes";
  std::vector<double> d(std::min(a.size(), b.size()));
  for (size_t i = 0; i < d.size(); ++i) d[i] = a[i] - b[i];
  return max_abs(d);
}

// ||a - b||_2 / ||b||_2: the error of a against the reference b.
inline double relative_l2(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size()) << "relative_l2 of vectors of different sizes";
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

// The same on tensors' values (read as f64).
inline double max_abs(const Tensor& t) {
  return max_abs(t.to_vector<double>());
}
inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  return max_abs_diff(a.to_vector<double>(), b.to_vector<double>());
}
inline double relative_l2(const Tensor& a, const Tensor& b) {
  return relative_l2(a.to_vector<double>(), b.to_vector<double>());
}

// Runs gradcheck; on failure the message names the mismatching entry.
#define EXPECT_GRADCHECK(fn, inputs) EXPECT_EQ(::fk::testing::gradcheck((fn), (inputs)), "")

}  // namespace fk::test
