#include "fk/ops/join/pad.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "../../test_util.h"
#include "../backward_check.h"
#include "helpers.h"

namespace fk {
namespace {

using namespace join_test;
using Fn = testing::TensorFn;

TEST(Pad, OneDimHandComputed) {
  Tensor x = vec({1, 2, 3, 4}, {4});
  test::expect_close(pad(x, {2, 1}, PadMode::Constant, 9), {9, 9, 1, 2, 3, 4, 9}, 0.0);
  test::expect_close(pad(x, {2, 1}, PadMode::Reflect), {3, 2, 1, 2, 3, 4, 3}, 0.0);
  test::expect_close(pad(x, {2, 1}, PadMode::Replicate), {1, 1, 1, 2, 3, 4, 4}, 0.0);
  test::expect_close(pad(x, {2, 1}, PadMode::Circular), {3, 4, 1, 2, 3, 4, 1}, 0.0);
  test::expect_close(pad(x, {4, 0}, PadMode::Circular), {1, 2, 3, 4, 1, 2, 3, 4}, 0.0);
  // Negative constant pads crop.
  test::expect_close(pad(x, {-1, 1}), {2, 3, 4, 0}, 0.0);
  test::expect_close(pad(x, {-1, -2}), {2}, 0.0);
  EXPECT_EQ(pad(x, {-2, -2}).shape(), (Dims{0}));
}

TEST(Pad, TwoDimHandComputed) {
  Tensor x = vec({1, 2, 3, 4}, {2, 2});
  // Last dim: 1 before; first dim: 1 after.
  std::vector<int64_t> p = {1, 0, 0, 1};
  test::expect_close(pad(x, p), {0, 1, 2, 0, 3, 4, 0, 0, 0}, 0.0);
  test::expect_close(pad(x, p, PadMode::Reflect), {2, 1, 2, 4, 3, 4, 2, 1, 2}, 0.0);
  test::expect_close(pad(x, p, PadMode::Replicate), {1, 1, 2, 3, 3, 4, 3, 3, 4}, 0.0);
  test::expect_close(pad(x, p, PadMode::Circular), {2, 1, 2, 4, 3, 4, 2, 1, 2}, 0.0);
  Tensor xt = x.t();  // [[1, 3], [2, 4]], strided
  test::expect_close(pad(xt, {0, 1}, PadMode::Replicate), {1, 3, 3, 2, 4, 4}, 0.0);
}

// Generic reference: out[i, j, k] = x[map(i), map(j), map(k)] per mode.
int64_t ref_map(int64_t i, int64_t n, int64_t l, PadMode m) {
  int64_t s = i - l;
  switch (m) {
    case PadMode::Reflect:
      return s < 0 ? -s : (s >= n ? 2 * n - 2 - s : s);
    case PadMode::Replicate:
      return s < 0 ? 0 : (s >= n ? n - 1 : s);
    case PadMode::Circular:
      return (s + n) % n;
    default:
      return (s >= 0 && s < n) ? s : -1;
  }
}

TEST(Pad, ThreeDimAgainstLoops) {
  Tensor x = test::random_tensor({2, 3, 4}, DType::F32, -1, 1, 4);
  auto xv = x.to_vector<double>();
  for (PadMode m : {PadMode::Constant, PadMode::Reflect, PadMode::Replicate, PadMode::Circular}) {
    std::vector<int64_t> p = {3, 1, 2, 0, 0, 1};  // last dim (3, 1), middle (2, 0), first (0, 1)
    Tensor out = pad(x, p, m, -2.0);
    ASSERT_EQ(out.shape(), (Dims{3, 5, 8})) << name(m);
    EXPECT_EQ(out.dtype(), DType::F32);
    std::vector<double> want;
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 5; ++j) {
        for (int64_t k = 0; k < 8; ++k) {
          int64_t a = ref_map(i, 2, 0, m), b = ref_map(j, 3, 2, m), c = ref_map(k, 4, 3, m);
          want.push_back(a < 0 || b < 0 || c < 0 ? -2.0 : xv[(a * 3 + b) * 4 + c]);
        }
      }
    }
    test::expect_close(out, want, 0.0);
  }
}

TEST(Pad, BackwardAccumulatesIntoSources) {
  Tensor x = vec({1, 2, 3, 4}, {4}).set_requires_grad(true);
  pad(x, {2, 1}, PadMode::Reflect).backward(ones({7}, {DType::F64}));
  test::expect_close(x.grad(), {1, 2, 3, 1}, 0.0);  // sources 2,1,0,1,2,3,2
  Tensor y = vec({1, 2, 3, 4}, {4}).set_requires_grad(true);
  pad(y, {2, 1}, PadMode::Replicate).backward(vec({1, 2, 3, 4, 5, 6, 7}, {7}));
  test::expect_close(y.grad(), {6, 4, 5, 13}, 0.0);
  Tensor z = vec({1, 2, 3, 4}, {4}).set_requires_grad(true);
  pad(z, {2, 1}, PadMode::Circular).backward(vec({1, 2, 3, 4, 5, 6, 7}, {7}));
  test::expect_close(z.grad(), {3 + 7, 4, 5 + 1, 6 + 2}, 0.0);
  Tensor w = vec({1, 2, 3, 4}, {4}).set_requires_grad(true);
  pad(w, {-1, 2}, PadMode::Constant, 5.0).backward(vec({1, 2, 3, 4, 5}, {5}));
  test::expect_close(w.grad(), {0, 1, 2, 3}, 0.0);
}

TEST(Pad, GradcheckEachMode) {
  Tensor x = test::random_tensor({3, 4}, DType::F64, -1, 1, 5).set_requires_grad(true);
  for (PadMode m : {PadMode::Constant, PadMode::Reflect, PadMode::Replicate, PadMode::Circular}) {
    Fn f = [m](const std::vector<Tensor>& in) { return pad(in[0].t(), {2, 1, 1, 2}, m, 0.5); };
    EXPECT_GRADCHECK(f, (std::vector<Tensor>{x})) << name(m);
    Fn g = [m](const std::vector<Tensor>& in) { return pad(in[0], {1, 2}, m); };
    EXPECT_GRADCHECK(g, (std::vector<Tensor>{x})) << name(m);
  }
  Fn crop = [](const std::vector<Tensor>& in) { return pad(in[0], {-1, 2, 1, -2}); };
  EXPECT_GRADCHECK(crop, (std::vector<Tensor>{x}));
  Tensor z = test::random_complex({5}).set_requires_grad(true);
  Fn c = [](const std::vector<Tensor>& in) { return pad(in[0], {3, 2}, PadMode::Reflect); };
  EXPECT_GRADCHECK(c, (std::vector<Tensor>{z}));
}

TEST(Pad, PureBackwardMatchesAutograd) {
  Tensor x = test::random_tensor({3, 4}, DType::F64, -1, 1, 155);
  for (PadMode mode :
       {PadMode::Constant, PadMode::Reflect, PadMode::Replicate, PadMode::Circular}) {
    const std::vector<int64_t> pads = {2, 1, 1, 2};
    auto f = [&](const Tensor& t) { return pad(t, pads, mode, 0.5); };
    Tensor g = test::random_tensor(f(x).shape(), DType::F64, -1, 1, 156);
    test::expect_same(pad_backward(g, x.shape(), pads, mode), test::autograd_grad(f, x, g), 1e-15);
  }
}

}  // namespace
}  // namespace fk
