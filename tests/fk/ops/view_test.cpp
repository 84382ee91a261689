#include "fk/ops/view.h"

#include <functional>
#include <tuple>
#include <vector>

#include "../test_util.h"
#include "backward_check.h"

namespace fk {
namespace {

// The exposed backward of each view op against autograd, on a 3-D input.
TEST(View, PureBackwardMatchesAutograd) {
  Tensor x = test::random_tensor({2, 3, 4}, DType::F64, -1, 1, 121);
  auto check = [&](const std::function<Tensor(const Tensor&)>& f,
                   const std::function<Tensor(const Tensor&)>& backward, const char* what) {
    SCOPED_TRACE(what);
    Tensor g = test::random_tensor(f(x).shape(), DType::F64, -1, 1, 122);
    test::expect_same(backward(g), test::autograd_grad(f, x, g), 0);
  };
  check(
      [](const Tensor& t) {
        return reshape(t, {6, -1});
      },
      [&](const Tensor& g) { return reshape_backward(g, x.shape()); }, "reshape");
  check([](const Tensor& t) { return unsqueeze(t, 1); },
        [&](const Tensor& g) { return reshape_backward(g, x.shape()); }, "unsqueeze");
  check(
      [](const Tensor& t) {
        return permute(t, {2, 0, 1});
      },
      [](const Tensor& g) {
        return permute_backward(g, {2, 0, 1});
      },
      "permute");
  check(
      [](const Tensor& t) {
        return expand(t.unsqueeze(0), {5, 2, 3, 4});
      },
      [&](const Tensor& g) {
        return reshape_backward(expand_backward(g, {1, 2, 3, 4}), x.shape());
      },
      "expand");
  check([](const Tensor& t) { return slice(t, 2, 1, 4, 2); },
        [&](const Tensor& g) { return slice_backward(g, x.shape(), 2, 1, 4, 2); }, "slice");
  check([](const Tensor& t) { return narrow(t, -2, 1, 2); },
        [&](const Tensor& g) { return slice_backward(g, x.shape(), -2, 1, 3); }, "narrow");
  check([](const Tensor& t) { return select(t, 1, -1); },
        [&](const Tensor& g) { return select_backward(g, x.shape(), 1, -1); }, "select");
  // slice_backward by hand: zeros with g at the sliced positions.
  Tensor g = from_vector(std::vector<double>{7, 8});
  test::expect_close(slice_backward(g, Dims{5}, 0, 1, 5, 2), {0, 7, 0, 8, 0}, 0);

  Tensor z = test::random_complex({3}, 123);
  Tensor gr = test::random_tensor({3}, DType::F64, -1, 1, 124);
  test::expect_same(real_backward(gr, z.dtype()),
                    test::autograd_grad([](const Tensor& t) { return real(t); }, z, gr), 0);
  test::expect_same(imag_backward(gr, z.dtype()),
                    test::autograd_grad([](const Tensor& t) { return imag(t); }, z, gr), 0);
  test::expect_same(real_backward(gr, DType::F64), gr, 0);
  EXPECT_THROW(imag_backward(gr, DType::F64), Error);
  EXPECT_THROW(permute_backward(x, {0, 1}), Error);
}

// as_strided views within the storage only, and refuses a tensor that
// needs a gradient (it records none: one through it was silently lost).
TEST(View, AsStridedStaysInItsStorageAndRecordsNoGradient) {
  const Tensor t = from_vector(std::vector<double>{0, 1, 2, 3, 4, 5});
  EXPECT_EQ(as_strided(t, {2, 2}, {2, 1}, 1).to_vector<double>(),
            (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(as_strided(t, {0, 3}, {1000, 1}, 5).numel(), 0);
  for (const auto& [shape, strides, offset] : std::vector<std::tuple<Dims, Dims, int64_t>>{
           {{4}, {1000000}, 5},
           {{2}, {1}, -4},
           {{2}, {1}, 5},
           {{2}, {-1}, 1},
           {{2}, {1, 1}, 0},
           {{2}, {INT64_MAX}, 1},  // an extent past 63 bits wrapped under the check
           {{3}, {int64_t{1} << 62}, 0}})
    EXPECT_THROW(as_strided(t, shape, strides, offset), Error) << shape.str() << offset;
  Tensor x = t.clone().set_requires_grad(true);
  EXPECT_THROW(as_strided(x, {2}, {2}, 1), Error);
}

// An empty tensor has no layout to keep: one of any strides views as any
// empty shape (stack and the products' backward view transposed empties).
// Shapes whose sizes multiply past int64 are refused: a wrapped count let
// [2, 2^62 + 1, 4] view 8 elements (its element [0, 2, 0] lay past them), an
// expand to [2^32, 2^32] count 0 elements, and an expand took a negative size.
TEST(View, ShapesWhoseCountPassesInt64AreRefused) {
  const Tensor t = ones({8});
  const int64_t big = (int64_t{1} << 62) + 1;
  EXPECT_THROW(t.view({2, big, 4}), Error);
  EXPECT_THROW(t.reshape({-1, big, 4}), Error);
  EXPECT_THROW(empty({0}).view({int64_t{1} << 32, int64_t{1} << 32}), Error);
  EXPECT_THROW(ones({1, 1}).expand({int64_t{1} << 32, int64_t{1} << 32}), Error);
  EXPECT_THROW(ones({1}).expand({-5}), Error);
  EXPECT_THROW(empty({0, int64_t{1} << 32, int64_t{1} << 32}), Error);  // its strides wrap
  EXPECT_EQ(ones({1, 1}).expand({int64_t{1} << 31, 4}).numel(), int64_t{1} << 33);
  EXPECT_EQ(t.view({2, -1, 2}).shape(), (Dims{2, 2, 2}));
}

TEST(View, AnEmptyTensorOfAnyStridesViews) {
  Tensor t = transpose(zeros({0, 3}), 0, 1);  // [3, 0], strides [1, 3]
  ASSERT_FALSE(t.is_contiguous());
  EXPECT_EQ(view(t, {0, 5}).shape(), (Dims{0, 5}));
  EXPECT_EQ(view(t, {3, 1, 0}).shape(), (Dims{3, 1, 0}));
  EXPECT_EQ(stack({t, t}, 1).shape(), (Dims{3, 2, 0}));
  EXPECT_THROW(view(transpose(zeros({2, 3}), 0, 1), {6}), Error);  // not contiguous, not empty
}

// A strided tensor views where the new shape splits or merges only dims
// contiguous with each other (torch's cases: they were all refused), reading
// the same elements as the copy would; other shapes are refused, naming
// reshape.
TEST(View, AStridedTensorViewsWhereItsLayoutAllows) {
  const Tensor a = arange(60).to(DType::F64).reshape({3, 4, 5});
  auto same = [](const Tensor& v, const Tensor& copy) {
    EXPECT_EQ(v.shape(), copy.shape());
    EXPECT_EQ(v.to_vector<double>(), copy.contiguous().to_vector<double>());
  };
  const Tensor tr = transpose(a, 0, 2);  // [5, 4, 3]
  same(view(tr, {5, 2, 2, 3}), reshape(tr, {5, 2, 2, 3}));
  const Tensor nar = narrow(a, 2, 0, 3);  // [3, 4, 3], strides [20, 5, 1]
  same(view(nar, {12, 3}), reshape(nar, {12, 3}));
  same(view(narrow(a, 1, 1, 2), {3, 10}), reshape(narrow(a, 1, 1, 2), {3, 10}));
  const Tensor ex = narrow(a, 0, 0, 1).expand({4, 4, 5});  // stride 0 on dim 0
  same(view(ex, {4, 20}), reshape(ex, {4, 20}));
  same(view(tr, {5, 4, 3, 1}), reshape(tr, {5, 4, 3, 1}));
  EXPECT_EQ(view(nar, {12, 3}).data_ptr(), nar.data_ptr());  // a view: no copy
  EXPECT_NE(test::error_of([&] { view(tr, {60}); }).find("use reshape"), std::string::npos);
  EXPECT_THROW(view(nar, {36}), Error);
  EXPECT_THROW(view(tr, {4, 5, 3}), Error);
  // The gradient reaches the strided source.
  Tensor x = arange(12).to(DType::F64).reshape({3, 4}).set_requires_grad(true);
  Tensor v = view(transpose(x, 0, 1), {2, 2, 3});
  sum(mul(v, v)).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), mul(x.detach(), 2.0).to_vector<double>());
}

// slice, narrow and select index a dim a 0-d tensor lacks (select made a
// tensor of rank -1).
TEST(View, IndexingOpsRefuseA0dTensor) {
  const Tensor s = scalar_tensor(2.5);
  for (auto f : std::vector<std::function<void()>>{
           [&] { select(s, 0, 0); }, [&] { narrow(s, 0, 0, 1); }, [&] { slice(s, 0, 0, 1, 1); }})
    EXPECT_NE(test::error_of(f).find("a 0-d tensor"), std::string::npos);
}

}  // namespace
}  // namespace fk
