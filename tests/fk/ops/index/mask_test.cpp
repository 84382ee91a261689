#include "fk/ops/index/mask.h"

#include <cstring>
#include <string>
#include <vector>

#include "../../test_util.h"
#include "../backward_check.h"
#include "helpers.h"

namespace fk {
namespace {

using namespace index_test;
using Fn = testing::TensorFn;

TEST(Masked, FillAndSelectValues) {
  Tensor t = test::random_tensor({2, 3}, DType::F64, -1, 1, 7);
  auto tv = t.to_vector<double>();
  Tensor mask = from_vector(std::vector<bool>{true, false, true}, {3});  // broadcast over rows
  Tensor f = masked_fill(t, mask, 9.5);
  test::expect_close(f, {9.5, tv[1], 9.5, 9.5, tv[4], 9.5}, 0.0);
  Tensor s = masked_select(t, mask);
  test::expect_close(s, {tv[0], tv[2], tv[3], tv[5]}, 0.0);
  // Full-shape mask on a transposed input: row-major order of the view.
  Tensor tt = t.t();  // [3, 2]
  Tensor m2 = from_vector(std::vector<bool>{false, true, true, true, false, false}, {3, 2});
  test::expect_close(masked_select(tt, m2), {tv[3], tv[1], tv[4]}, 0.0);
  // A mask that broadcasts the input (t [3] against mask [2, 3]).
  Tensor v = from_vector(std::vector<double>{1, 2, 3});
  Tensor m3 = from_vector(std::vector<bool>{true, false, true, false, true, true}, {2, 3});
  test::expect_close(masked_select(v, m3), {1, 3, 2, 3}, 0.0);
  EXPECT_EQ(masked_select(v, from_vector(std::vector<bool>{false, false, false})).shape(),
            (Dims{0}));
  Tensor b = from_vector(std::vector<int32_t>{1, 2, 3});
  EXPECT_EQ(masked_fill(b, mask, -4).to_vector<int64_t>(), (std::vector<int64_t>{-4, 2, -4}));
}

TEST(Masked, PureBackwardMatchesAutograd) {
  Tensor t = test::random_tensor({3, 4}, DType::F64, -1, 1, 143);
  Tensor mask =
      lt(test::random_tensor({4}, DType::F64, -1, 1, 144), scalar_tensor(0.0, {DType::F64}));
  Tensor g = test::random_tensor({3, 4}, DType::F64, -1, 1, 145);
  Tensor got = masked_fill_backward(g, mask);
  test::expect_same(
      got, test::autograd_grad([&](const Tensor& x) { return masked_fill(x, mask, 7.0); }, t, g),
      0);
  test::expect_same(got, where(mask, scalar_tensor(0.0, {DType::F64}), g), 0);
  Tensor sel = masked_select(t, mask);
  Tensor gs = test::random_tensor(sel.shape(), DType::F64, -1, 1, 146);
  test::expect_same(
      masked_select_backward(gs, mask, t.shape()),
      test::autograd_grad([&](const Tensor& x) { return masked_select(x, mask); }, t, gs), 0);
}

}  // namespace
}  // namespace fk
