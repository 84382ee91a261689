#include "fk/autograd.h"

#include "test_util.h"

namespace fk {
namespace {

TEST(Autograd, ChainRuleAndAccumulation) {
  Tensor x = from_vector(std::vector<double>{1, 2, 3}).set_requires_grad(true);
  Tensor y = sum(mul(x, x));  // d/dx = 2x
  y.backward();
  test::expect_close(x.grad(), {2, 4, 6});
  Tensor y2 = sum(mul(x, 3.0));  // accumulates +3
  y2.backward();
  test::expect_close(x.grad(), {5, 7, 9});
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_STREQ(y.grad_fn()->name(), "SumBackward");
}

TEST(Autograd, SharedSubexpressionAndBroadcast) {
  Tensor a = from_vector(std::vector<double>{1, 2}, {2, 1}).set_requires_grad(true);
  Tensor b = from_vector(std::vector<double>{3, 4, 5}, {1, 3}).set_requires_grad(true);
  Tensor c = add(a, b);       // [2, 3]
  Tensor d = sum(mul(c, c));  // sum (a+b)^2
  d.backward();
  // dd/da_i = sum_j 2(a_i + b_j)
  test::expect_close(a.grad(), {2 * (4 + 5 + 6), 2 * (5 + 6 + 7)});
  test::expect_close(b.grad(), {2 * (4 + 5), 2 * (5 + 6), 2 * (6 + 7)});
}

TEST(Autograd, NoGradGuardStopsRecording) {
  Tensor x = ones({2}, {DType::F64}).set_requires_grad(true);
  {
    autograd::NoGradGuard g;
    Tensor y = mul(x, x);
    EXPECT_FALSE(y.requires_grad());
    {
      autograd::EnableGradGuard e;
      EXPECT_TRUE(mul(x, x).requires_grad());
    }
  }
  EXPECT_TRUE(mul(x, x).requires_grad());
}

TEST(Autograd, InPlaceModificationOfSavedTensorIsAnError) {
  Tensor x = ones({3}, {DType::F64}).set_requires_grad(true);
  Tensor w = full({3}, 2.0, {DType::F64});
  Tensor y = sum(mul(x, w));  // saves w
  add_(w, ones({3}, {DType::F64}));
  try {
    y.backward();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("modified by an in-place op"), std::string::npos)
        << e.what();
  }
}

TEST(Autograd, InPlaceOnTrackedTensorIsRefused) {
  Tensor x = ones({3}, {DType::F64}).set_requires_grad(true);
  EXPECT_THROW(add_(x, ones({3}, {DType::F64})), Error);
  autograd::NoGradGuard g;
  EXPECT_NO_THROW(add_(x, ones({3}, {DType::F64})));  // optimizer-style update
}

TEST(Autograd, RetainGraph) {
  Tensor x = from_vector(std::vector<double>{2}).set_requires_grad(true);
  Tensor y = sum(exp(x));
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  EXPECT_NEAR(x.grad().item(), 2 * std::exp(2.0), 1e-12);
  EXPECT_THROW(y.backward(), Error);  // graph freed
}

TEST(Autograd, BackwardNeedsScalarOrGradient) {
  Tensor x = ones({3}, {DType::F64}).set_requires_grad(true);
  Tensor y = mul(x, 2.0);
  EXPECT_THROW(y.backward(), Error);
  EXPECT_THROW(ones({2}).backward(), Error);
  y.backward(ones({3}, {DType::F64}));
  test::expect_close(x.grad(), {2, 2, 2});
}

TEST(Autograd, GradFunctionDoesNotTouchDotGrad) {
  Tensor x = from_vector(std::vector<double>{1, 2}).set_requires_grad(true);
  Tensor h = mul(x, x);
  Tensor y = sum(mul(h, x));  // x^3
  auto g = autograd::grad({y}, {Tensor()}, {x, h});
  test::expect_close(g[0], {3, 12});
  test::expect_close(g[1], {1, 2});
  EXPECT_FALSE(x.grad().defined());
}

TEST(Autograd, SavedBytesCountedOncePerStorage) {
  Tensor x = ones({256}, {DType::F64}).set_requires_grad(true);
  Tensor y = mul(x, x);  // saves x twice (as a and b): one storage
  auto s = autograd::saved_stats(y);
  EXPECT_EQ(s.tensors, 2);
  EXPECT_EQ(s.storages, 1);
  EXPECT_EQ(s.bytes, 256 * 8);
  Tensor z = sum(exp(y));  // exp saves its output (another 2 KiB)
  auto s2 = autograd::saved_stats(z);
  EXPECT_EQ(s2.bytes, 2 * 256 * 8);
  EXPECT_EQ(s2.nodes, 4);  // sum, exp, mul, accumulate
}

TEST(Autograd, ViewsAreDifferentiable) {
  Tensor x = test::random_tensor({3, 4}).set_requires_grad(true);
  auto f = [](const std::vector<Tensor>& in) {
    const Tensor& t = in[0];
    Tensor a = t.t().slice(0, 1, 4, 2);  // [2, 3]
    Tensor b = t.select(1, 0).unsqueeze(0).expand({2, 3});
    return sum(mul(a, b).reshape({-1}).narrow(0, 1, 4).unsqueeze(1).squeeze(1).permute({0}));
  };
  EXPECT_GRADCHECK(f, std::vector<Tensor>{x});
}

// real() and imag() share one backward node that routes the gradient into one
// half of a complex zeros tensor: each part alone, both in one expression, and
// imag of a transposed view.
TEST(Autograd, ComplexPartsAreDifferentiable) {
  Tensor z = test::random_complex({2, 3}).set_requires_grad(true);
  Tensor w = test::random_tensor({2, 3}, DType::F64, -1, 1, 4);
  using Fn = testing::TensorFn;
  Fn im = [w](const std::vector<Tensor>& in) { return mul(in[0].imag(), w); };
  EXPECT_GRADCHECK(im, std::vector<Tensor>{z});
  Fn re = [w](const std::vector<Tensor>& in) { return mul(in[0].real(), w); };
  EXPECT_GRADCHECK(re, std::vector<Tensor>{z});
  Fn both = [](const std::vector<Tensor>& in) {
    return sub(mul(in[0].real(), in[0].imag()), in[0].t().imag().t());
  };
  EXPECT_GRADCHECK(both, std::vector<Tensor>{z});
}

TEST(Autograd, ConversionsAreDifferentiable) {
  Tensor x = test::random_tensor({4}).set_requires_grad(true);
  auto f = [](const std::vector<Tensor>& in) {
    Tensor c = in[0].to(DType::C128);
    return sum(mul(real(mul(c, c)), in[0].clone().contiguous()));
  };
  EXPECT_GRADCHECK(f, std::vector<Tensor>{x});
  // Through f32 and back: gradient flows, with f32 rounding.
  Tensor y = sum(mul(x.to(DType::F32), x.to(DType::F32)));
  y.backward();
  EXPECT_EQ(x.grad().dtype(), DType::F64);
  auto xv = x.to_vector<double>(), gv = x.grad().to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(gv[i], 2 * xv[i], 1e-6);
}

}  // namespace
}  // namespace fk
