// matrix_operator: a dense matrix as a forward model, against the product
// written out, the adjoint dot test, and its shape errors.
#include "nefi/byop/matrix_model.h"

#include <gtest/gtest.h>

#include "fk/factory.h"
#include "fk/test_util.h"

namespace {

TEST(NefiMatrixModel, IsItsMatrixWithTheTransposeAsAdjoint) {
  const int64_t m = 6, n = 4;
  const fk::Tensor a = fk::test::random_tensor({m, n}, fk::DType::F64, -1, 1, 11);
  const auto op = nefi::matrix_operator(a, {2, 2}, {3, 2});
  const fk::Tensor x = fk::test::random_tensor({2, 2}, fk::DType::F64, -1, 1, 12);
  const fk::Tensor g = fk::test::random_tensor({3, 2}, fk::DType::F64, -1, 1, 13);
  const auto av = a.to_vector<double>(), xv = x.to_vector<double>(), gv = g.to_vector<double>();
  const auto y = op->apply(x).to_vector<double>(), atg = op->vjp(x, g).to_vector<double>();
  double lhs = 0, rhs = 0;
  for (int64_t i = 0; i < m; ++i) {
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += av[i * n + j] * xv[j];
    EXPECT_NEAR(y[i], s, 1e-14);
    lhs += y[i] * gv[i];
  }
  for (int64_t j = 0; j < n; ++j) rhs += xv[j] * atg[j];
  EXPECT_NEAR(lhs, rhs, 1e-13);
  EXPECT_EQ(op->homogeneity(), 1.0);
  std::string e = fk::test::error_of([&] { (void)nefi::matrix_operator(a, {5}, {6}); });
  EXPECT_NE(e.find("4 cells (its columns)"), std::string::npos) << e;
  e = fk::test::error_of([&] { (void)nefi::matrix_operator(a, {4}, {7}); });
  EXPECT_NE(e.find("6 measurements (its rows)"), std::string::npos) << e;
  e = fk::test::error_of([&] { (void)nefi::matrix_operator(fk::zeros({4}), {4}, {4}); });
  EXPECT_NE(e.find("a real 2-D matrix"), std::string::npos) << e;
}

}  // namespace
