// Golub–Kahan–Lanczos against spectra known in closed form: diagonal maps
// (exact once the Krylov space is invariant, fast on a geometric spectrum),
// and the one-sided Jacobi SVD against invariants of the matrix (Frobenius
// norm, |det|) and a matrix built from known rotations; symmetric Lanczos
// on a diagonal map (both ends exact) and the symmetric Jacobi eigenvalues
// (a 2 x 2 in closed form, a random matrix's trace and Frobenius norm).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "fk/error.h"
#include "nefi/diagnostics/lanczos.h"

namespace nefi::diagnostics {
namespace {

LinearMap diagonal(const std::vector<double>& d, int64_t m_extra = 0) {
  LinearMap J;
  J.n = static_cast<int64_t>(d.size());
  J.m = J.n + m_extra;  // extra zero rows: a tall map
  J.apply = [d, m = J.m](const Vec& v) {
    Vec y(m, 0.0);
    for (size_t i = 0; i < d.size(); ++i) y[i] = d[i] * v[i];
    return y;
  };
  J.adjoint = [d](const Vec& u) {
    Vec x(d.size());
    for (size_t i = 0; i < d.size(); ++i) x[i] = d[i] * u[i];
    return x;
  };
  return J;
}

TEST(Lanczos, LowRankDiagonalIsExactOnceInvariant) {
  // 300 cells, 10 non-zero distinct gains (some negative) in shuffled places.
  std::vector<double> d(300, 0.0);
  const std::vector<double> gains{3.0, -2.5, 2.0, 1.5, -1.2, 1.0, 0.7, 0.4, -0.2, 0.05};
  std::vector<int> where(300);
  std::iota(where.begin(), where.end(), 0);
  std::shuffle(where.begin(), where.end(), std::mt19937(7));
  for (size_t i = 0; i < gains.size(); ++i) d[where[i]] = gains[i];
  const Spectrum s = leading_singular_values(diagonal(d, 5), 8, 24, 3);
  EXPECT_TRUE(s.invariant);
  // The data side holds 10 directions: the 10th step's J v lies in their span.
  EXPECT_EQ(s.iterations, 10);
  std::vector<double> want;
  for (double g : gains) want.push_back(std::abs(g));
  std::sort(want.begin(), want.end(), std::greater<>());
  ASSERT_EQ(s.singular_values.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(s.singular_values[i], want[i], 1e-12 * want[0]) << i;
}

TEST(Lanczos, GeometricSpectrumConvergesAtTheTop) {
  // Gains 0.8^i in shuffled places: well separated at the top, a long tail.
  std::vector<double> d(2000);
  for (size_t i = 0; i < d.size(); ++i) d[i] = std::pow(0.8, static_cast<double>(i));
  std::shuffle(d.begin(), d.end(), std::mt19937(2));
  std::vector<double> want = d;
  std::sort(want.begin(), want.end(), std::greater<>());
  const Spectrum s = leading_singular_values(diagonal(d), 6, 40, 11);
  EXPECT_FALSE(s.invariant);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(s.singular_values[i], want[i], 1e-9) << i;
}

// Repeated values: the start's Krylov space holds one copy of each, so a
// breakdown restarts orthogonally to find the others (a sampling operator's
// values are all 1; a diagonal with a pair). Before restarts these came back
// as [1, 0] and [3, 2, 1].
TEST(Lanczos, RepeatedValuesAreFoundOncePerCopy) {
  std::vector<double> sampled(16, 0.0);
  for (int i : {1, 4, 5, 9, 12, 15}) sampled[i] = 1.0;
  Spectrum s = leading_singular_values(diagonal(sampled), 4, 8, 3);
  ASSERT_EQ(s.singular_values.size(), 4u);
  for (double v : s.singular_values) EXPECT_NEAR(v, 1.0, 1e-12);
  // k past J's rank: six ones, then J is exhausted (the rest of it is zero),
  // so its 7th and 8th values are 0, as a 16 x 16 map of rank 6 has.
  s = leading_singular_values(diagonal(sampled), 8, 16, 3);
  ASSERT_EQ(s.singular_values.size(), 8u);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(s.singular_values[i], 1.0, 1e-12) << i;
  EXPECT_EQ(s.singular_values[6], 0.0);
  EXPECT_EQ(s.singular_values[7], 0.0);
  EXPECT_TRUE(s.invariant);
  EXPECT_EQ(s.iterations, 6);
  // A wide map of rank 6 (6 x 16) has only 6 values at all.
  LinearMap wide;
  wide.n = 16;
  wide.m = 6;
  const std::vector<int> rows{1, 4, 5, 9, 12, 15};
  wide.apply = [rows](const Vec& v) {
    Vec y(6);
    for (int i = 0; i < 6; ++i) y[i] = v[rows[i]];
    return y;
  };
  wide.adjoint = [rows](const Vec& u) {
    Vec x(16, 0.0);
    for (int i = 0; i < 6; ++i) x[rows[i]] = u[i];
    return x;
  };
  s = leading_singular_values(wide, 6, 6, 4);
  ASSERT_EQ(s.singular_values.size(), 6u);
  for (double v : s.singular_values) EXPECT_NEAR(v, 1.0, 1e-12);
  s = leading_singular_values(diagonal({3, 2, 2, 1}), 4, 4, 5);
  ASSERT_EQ(s.singular_values.size(), 4u);
  const std::vector<double> want{3, 2, 2, 1};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(s.singular_values[i], want[i], 1e-12) << i;
}

// The symmetric recurrence restarts the same way: an identity's eigenvalue 1
// once per copy (before: one 1), a pair among others.
TEST(Lanczos, SymmetricRepeatedEigenvaluesAreFoundOncePerCopy) {
  SymmetricMap I;
  I.n = 10;
  I.apply = [](const Vec& v) { return v; };
  Eigenvalues e = extreme_eigenvalues(I, 3, 6, 1);
  ASSERT_EQ(e.largest.size(), 3u);
  for (double v : e.largest) EXPECT_NEAR(v, 1.0, 1e-12);
  for (double v : e.smallest) EXPECT_NEAR(v, 1.0, 1e-12);
  SymmetricMap D;
  D.n = 4;
  D.apply = [](const Vec& v) { return Vec{5 * v[0], -1 * v[1], -1 * v[2], 2 * v[3]}; };
  e = extreme_eigenvalues(D, 4, 4, 2);
  EXPECT_TRUE(e.invariant);
  const std::vector<double> want{5, 2, -1, -1};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(e.largest[i], want[i], 1e-12) << i;
}

TEST(Lanczos, RefusesBadSettings) {
  const LinearMap J = diagonal({1, 2, 3});
  EXPECT_THROW(leading_singular_values(J, 0, 5, 0), fk::Error);
  EXPECT_THROW(leading_singular_values(J, 4, 3, 0), fk::Error);
  LinearMap wrong = J;
  wrong.apply = [](const Vec&) { return Vec(2, 0.0); };  // not length m
  EXPECT_THROW(leading_singular_values(wrong, 1, 2, 0), fk::Error);
}

TEST(DenseSvd, MatchesInvariantsAndKnownFactors) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> g;
  const int n = 7;
  std::vector<double> a(n * n);
  for (double& x : a) x = g(rng);
  const std::vector<double> s = dense_singular_values(a, n, n);
  double fro = 0, sum_sq = 0, log_det_s = 0;
  for (double x : a) fro += x * x;
  for (double x : s) sum_sq += x * x, log_det_s += std::log(x);
  EXPECT_NEAR(sum_sq, fro, 1e-12 * fro);
  // |det A| by Gaussian elimination with partial pivoting.
  std::vector<double> lu = a;
  double log_det = 0;
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r)
      if (std::abs(lu[r * n + c]) > std::abs(lu[p * n + c])) p = r;
    for (int k = 0; k < n; ++k) std::swap(lu[c * n + k], lu[p * n + k]);
    log_det += std::log(std::abs(lu[c * n + c]));
    for (int r = c + 1; r < n; ++r) {
      const double f = lu[r * n + c] / lu[c * n + c];
      for (int k = c; k < n; ++k) lu[r * n + k] -= f * lu[c * n + k];
    }
  }
  EXPECT_NEAR(log_det_s, log_det, 1e-10);
  // R(t1) diag(5, 2, 0.5) R(t2)^T in 3-D (rotations about z then x).
  const double c1 = std::cos(0.3), s1 = std::sin(0.3), c2 = std::cos(1.1), s2 = std::sin(1.1);
  const double U[9] = {c1, -s1, 0, s1, c1, 0, 0, 0, 1};
  const double V[9] = {1, 0, 0, 0, c2, -s2, 0, s2, c2};
  const double S[3] = {5, 2, 0.5};
  std::vector<double> b(9, 0.0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) b[i * 3 + j] += U[i * 3 + k] * S[k] * V[j * 3 + k];
  const std::vector<double> sb = dense_singular_values(b, 3, 3);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(sb[i], S[i], 1e-13);
  EXPECT_THROW(dense_singular_values({1, 2, 3}, 2, 2), fk::Error);
}

TEST(Lanczos, DenseSymmetricEigenvalues) {
  const std::vector<double> two = dense_symmetric_eigenvalues({2, 1, 1, 2}, 2);
  EXPECT_NEAR(two[0], 3, 1e-14);
  EXPECT_NEAR(two[1], 1, 1e-14);
  const int n = 7;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal;
  std::vector<double> a(n * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) a[i * n + j] = a[j * n + i] = normal(rng);
  double trace = 0, frobenius = 0;
  for (int i = 0; i < n; ++i) trace += a[i * n + i];
  for (double x : a) frobenius += x * x;
  const std::vector<double> ev = dense_symmetric_eigenvalues(a, n);
  double sum = 0, squares = 0;
  for (double e : ev) sum += e, squares += e * e;
  EXPECT_NEAR(sum, trace, 1e-12);
  EXPECT_NEAR(squares, frobenius, 1e-11);
  EXPECT_TRUE(std::is_sorted(ev.rbegin(), ev.rend()));
}

TEST(Lanczos, SymmetricFindsTheEndsOfADiagonalMap) {
  SymmetricMap H;
  H.n = 40;
  H.apply = [](const Vec& v) {
    Vec out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = (static_cast<double>(i) - 9.5) * v[i];
    return out;
  };
  const Eigenvalues e = extreme_eigenvalues(H, 2, 40, 1);
  EXPECT_NEAR(e.largest[0], 29.5, 1e-9);
  EXPECT_NEAR(e.largest[1], 28.5, 1e-9);
  EXPECT_NEAR(e.smallest[0], -9.5, 1e-9);
  EXPECT_NEAR(e.smallest[1], -8.5, 1e-9);
  EXPECT_THROW(extreme_eigenvalues(H, 3, 2, 1), fk::Error);
}

}  // namespace
}  // namespace nefi::diagnostics
