#include "fk/ops/reduce/norm.h"

#include <cmath>
#include <limits>
#include <vector>

#include "../../test_util.h"
#include "../backward_check.h"
#include "reference.h"

namespace fk {
namespace {

using namespace reduce_ref;

TEST(Norm, NormGradientAtZeroIsFinite) {
  Tensor x = zeros({3}, {DType::F64}).set_requires_grad(true);
  norm(x).backward();
  test::expect_close(x.grad(), {0, 0, 0}, 0);
  Tensor y = from_vector(std::vector<double>{0, 2}).set_requires_grad(true);
  norm(y, 0.5).backward();
  auto g = y.grad().to_vector<double>();
  EXPECT_EQ(g[0], 0.0);
  EXPECT_TRUE(std::isfinite(g[1]));
}

// Over nothing the finite p-norms are 0 and the inf norm (a max) is
// refused, as torch's (it gave 0).
TEST(Norm, TheInfNormOfNothingIsRefused) {
  test::expect_close(norm(zeros({2, 0}, {DType::F64}), 2.0, {1}), {0, 0}, 0);
  EXPECT_THROW(norm(zeros({2, 0}, {DType::F64}), INFINITY, {1}), Error);
  EXPECT_THROW(norm(zeros({0}, {DType::F32}), INFINITY), Error);
  test::expect_close(norm(from_vector(std::vector<double>{-3, 2}), INFINITY), {3}, 0);
}

TEST(Norm, PureBackwardMatchesAutograd) {
  Tensor x = test::random_tensor({3, 4}, DType::F64, -1, 1, 88);
  Tensor z = test::random_complex({3, 4}, 89);
  const double inf = std::numeric_limits<double>::infinity();
  for (const Tensor& in : {x, z}) {
    for (double p : {1.0, 2.0, 3.0, 0.5, inf}) {
      for (const Dims& dims : {Dims{}, Dims{1}}) {
        auto f = [&](const Tensor& t) { return norm(t, p, dims, dims.size() == 1); };
        Tensor out = f(in);
        Tensor g = test::random_tensor(out.shape(), DType::F64, -1, 1, 90);
        test::expect_same(norm_backward(g, in, out, p, dims, dims.size() == 1),
                          test::autograd_grad(f, in, g), 1e-14);
      }
    }
  }
  // The 2-norm's gradient is g x / |x|.
  Tensor v = from_vector(std::vector<double>{3, 4});
  test::expect_close(norm_backward(from_vector(std::vector<double>{10}).reshape({}), v, norm(v)),
                     {6, 8}, 1e-15);
}

}  // namespace
}  // namespace fk
