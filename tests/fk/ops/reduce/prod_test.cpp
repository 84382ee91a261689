#include "fk/ops/reduce/prod.h"

#include <vector>

#include "../../test_util.h"
#include "../backward_check.h"
#include "reference.h"

namespace fk {
namespace {

using namespace reduce_ref;

TEST(Prod, ProdWithZerosHasExactGradient) {
  Tensor x =
      from_vector(std::vector<double>{2, 0, 3, 4, 0, 0, 5, 6, 1}, {3, 3}).set_requires_grad(true);
  Tensor p = prod(x, {1});
  test::expect_close(p, {0, 0, 30}, 0);
  sum(p).backward();
  // Row 0 has one zero: only it gets a gradient (2 * 3); row 1 has two: none.
  test::expect_close(x.grad(), {0, 6, 0, 0, 0, 0, 6, 5, 30}, 0);
  Tensor z = from_vector(std::vector<double>{1.5, 0, -2, 0.5}).set_requires_grad(true);
  EXPECT_GRADCHECK((Fn([](const std::vector<Tensor>& in) { return prod(in[0]); })),
                   (std::vector<Tensor>{z}));
}

TEST(Prod, PureBackwardMatchesAutograd) {
  Tensor x = from_vector(std::vector<double>{2, 0, 3, 4, 0, 0, 5, 6, 1, -1, 2, 0.5}, {3, 4});
  for (const Dims& dims : {Dims{}, Dims{0}, Dims{1}}) {
    for (bool keepdim : {false, true}) {
      Tensor out = prod(x, dims, keepdim);
      Tensor g = test::random_tensor(out.shape(), DType::F64, -1, 1, 83);
      test::expect_same(
          prod_backward(g, x, dims, keepdim),
          test::autograd_grad([&](const Tensor& t) { return prod(t, dims, keepdim); }, x, g),
          1e-14);
    }
  }
  // Row {2, 0, 3, 4}: only the zero gets a gradient, the product of the others.
  Tensor g = from_vector(std::vector<double>{1, 1, 1});
  test::expect_close(prod_backward(g, x, {1}).narrow(0, 0, 1), {0, 24, 0, 0}, 0);
  Tensor z = test::random_complex({2, 3}, 84);
  Tensor gz = test::random_complex({2}, 85);
  test::expect_same(prod_backward(gz, z, {1}),
                    test::autograd_grad([](const Tensor& t) { return prod(t, {1}); }, z, gz),
                    1e-14);
}

}  // namespace
}  // namespace fk
