// The loss Hessian in the field's parameters: the dense symmetric
// eigenvalues (a 2 x 2 in closed form, a random matrix's trace and
// Frobenius norm), symmetric Lanczos on a diagonal map (its ends exact),
// and hessian_spectrum of a grid field seen through gains g under
// w mean (g x - y)^2, whose Hessian is (2 w / N) diag(g^2) exactly; the
// parameters are left as they were.
#include "nefi/diagnostics/hessian.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/heads.h"
#include "nefi/losses/data_losses.h"
#include "nefi/operators/pointwise.h"

namespace nefi::diagnostics {
namespace {

TEST(Hessian, DenseSymmetricEigenvalues) {
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

TEST(Hessian, LanczosFindsTheEndsOfADiagonalMap) {
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

TEST(Hessian, AGridFieldThroughGainsHasTheDataTermsCurvature) {
  const int64_t n = 24;
  std::vector<double> g(n), y(n);
  for (int64_t i = 0; i < n; ++i) g[i] = 0.5 + 0.1 * i, y[i] = std::sin(0.3 * i);
  InverseProblem p;
  p.domain = Domain(fk::Dims{n}, {1.0});
  p.field = std::make_shared<GridField>(fk::Dims{n}, std::vector<HeadPtr>{identity_head("x")});
  p.field->reset_parameters(0);
  p.op = std::make_shared<PointwiseOperator>(fk::from_vector(g, {n}));
  const double w = 3.0;
  p.losses.add(mse_loss(), w);
  p.measurement.data = fk::from_vector(y, {n}).to(fk::DType::F32);
  const std::vector<double> before = p.field->params().flat().to_vector<double>();
  const HessianSpectrum s = hessian_spectrum(p, 2, n, 5);
  EXPECT_EQ(s.parameters, n);
  const double top = 2 * w / n * g.back() * g.back(), low = 2 * w / n * g[0] * g[0];
  EXPECT_NEAR(s.eigenvalues.largest[0], top, 1e-3 * top);
  EXPECT_NEAR(s.eigenvalues.smallest[0], low, 1e-3 * top);
  EXPECT_NEAR(s.condition, top / low, 1e-2 * top / low);
  EXPECT_EQ(p.field->params().flat().to_vector<double>(), before);
}

}  // namespace
}  // namespace nefi::diagnostics
