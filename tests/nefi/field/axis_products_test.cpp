// axis_products: the tensor-times-matrix product of each axis, written out
// in 2-D; gradients in x and the matrices in f64 (1- to 3-D, an axis left
// alone); the shape errors.
#include "nefi/field/axis_products.h"

#include <gtest/gtest.h>

#include "fk/factory.h"
#include "fk/test_util.h"
#include "fk/testing.h"

namespace {

TEST(NefiAxisProducts, IsTheTensorTimesMatrixProductAndGradchecks) {
  // 2-D, written out: y[c, i, j] = sum_kl A[i, k] x[c, k, l] B[j, l].
  const std::vector<double> xv = fk::test::random_values(2 * 3 * 2, -1, 1, 1);
  const std::vector<double> av = fk::test::random_values(4 * 3, -1, 1, 2);
  const std::vector<double> bv = fk::test::random_values(5 * 2, -1, 1, 3);
  const fk::Tensor x = fk::from_vector(xv, {2, 3, 2}), A = fk::from_vector(av, {4, 3}),
                   B = fk::from_vector(bv, {5, 2});
  const auto y = nefi::axis_products(x, {A, B}).to_vector<double>();
  ASSERT_EQ(y.size(), 2u * 4 * 5);
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 5; ++j) {
        double want = 0;
        for (int k = 0; k < 3; ++k)
          for (int l = 0; l < 2; ++l)
            want += av[i * 3 + k] * xv[(c * 3 + k) * 2 + l] * bv[j * 2 + l];
        EXPECT_NEAR(y[(c * 4 + i) * 5 + j], want, 1e-13);
      }
  // Gradients in x and the matrices, 1- to 3-D, one axis left alone.
  const std::vector<fk::Dims> shapes{{2, 3}, {1, 3, 2}, {2, 2, 3, 2}};
  for (const fk::Dims& s : shapes) {
    std::vector<fk::Tensor> in{fk::from_vector(fk::test::random_values(s.numel(), -1, 1, 4), s)};
    for (int a = 1; a < s.size(); ++a)
      if (a != 2)
        in.push_back(fk::from_vector(fk::test::random_values(3 * s[a], -1, 1, 5 + a), {3, s[a]}));
    for (fk::Tensor& t : in) t.set_requires_grad(true);
    const std::string err = fk::testing::gradcheck(
        [&](const std::vector<fk::Tensor>& p) {
          std::vector<fk::Tensor> mats;
          for (int a = 1, next = 1; a < s.size(); ++a)
            mats.push_back(a == 2 ? fk::Tensor() : p[next++]);
          return nefi::axis_products(p[0], mats);
        },
        in);
    EXPECT_EQ(err, "") << s.str();
  }
  EXPECT_NE(fk::test::error_of([&] { nefi::axis_products(x, {A}); }).find("1 matrices"),
            std::string::npos);
  EXPECT_NE(fk::test::error_of([&] {
              nefi::axis_products(x, {B, A});
            }).find("(n, 3)"),
            std::string::npos);
}

}  // namespace
