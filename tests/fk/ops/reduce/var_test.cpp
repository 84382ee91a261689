#include "fk/ops/reduce/var.h"

#include <vector>

#include "../../test_util.h"
#include "../backward_check.h"
#include "fk/ops/join.h"
#include "reference.h"

namespace fk {
namespace {

using namespace reduce_ref;

TEST(Var, VarIsAccurateWithLargeOffsets) {
  // E[x^2] - E[x]^2 would lose every digit here (x^2 ~ 1e18 in f64).
  for (int64_t n : {1000, 70000}) {
    Tensor x = add(test::random_tensor({2, n}, DType::F64, -1, 1, 13), 1e9);
    auto v = x.to_vector<double>();
    std::vector<double> want;
    for (int i = 0; i < 2; ++i) {
      Group g(v.begin() + i * n, v.begin() + (i + 1) * n);
      want.push_back(ref_var(g, 1));
    }
    test::expect_close(var(x, {1}), want, 1e-9);
    test::expect_close(var(x.t(), {0}), want, 1e-9);
  }
}

// A run's first value far from the rest: shifting by it cancelled (3e-11
// relative error in f64 at n = 32768); by the run's mean the error is a few
// ulp. Values near the f64 maximum do not overflow the mean.
TEST(Var, VarIsAccurateWhenTheFirstValueIsAnOutlier) {
  for (int64_t n : {1000, 32768}) {
    Tensor x = add(test::random_tensor({n}, DType::F64, -1, 1, 17), 1e8);
    std::vector<double> v = x.to_vector<double>();
    v[0] = 0;
    const Group g(v.begin(), v.end());
    const double want = ref_var(g, 1);
    const Tensor row = from_vector(v);
    EXPECT_NEAR(var(row).item(), want, 1e-14 * want) << n;
    // over a leading dim (lanes side by side) and as complex values
    const std::vector<double> both = var(stack({row, row}, 1), {0}).to_vector<double>();
    EXPECT_NEAR(both[0], want, 1e-14 * want) << n;
    EXPECT_NEAR(var(row.to(DType::C128)).item(), want, 1e-14 * want) << n;
  }
  EXPECT_EQ(var(from_vector(std::vector<double>{1e308, 1e308, 1e308})).item(), 0.0);
}

TEST(Var, PureBackwardMatchesAutogradAndFormula) {
  Tensor x = test::random_tensor({3, 4}, DType::F64, -1, 1, 91);
  Tensor z = test::random_complex({3, 4}, 92);
  for (const Tensor& in : {x, z}) {
    for (int64_t correction : {0, 1}) {
      for (const Dims& dims : {Dims{}, Dims{0}, Dims{1}}) {
        const bool keepdim = dims.size() == 1;
        auto fv = [&](const Tensor& t) { return var(t, dims, correction, keepdim); };
        auto fs = [&](const Tensor& t) { return fk::std(t, dims, correction, keepdim); };
        Tensor g = test::random_tensor(fv(in).shape(), DType::F64, -1, 1, 93);
        test::expect_same(var_backward(g, in, dims, correction, keepdim),
                          test::autograd_grad(fv, in, g), 1e-14);
        test::expect_same(std_backward(g, in, fs(in), dims, correction, keepdim),
                          test::autograd_grad(fs, in, g), 1e-13);
      }
    }
  }
  // {1, 2, 3, 6}: mean 3, N - 1 = 3, so the gradient is 2 (x - 3) / 3.
  Tensor v = from_vector(std::vector<double>{1, 2, 3, 6});
  test::expect_close(var_backward(from_vector(std::vector<double>{1}).reshape({}), v),
                     {-4.0 / 3, -2.0 / 3, 0, 2}, 1e-15);
}

}  // namespace
}  // namespace fk
