#include "fk/autograd.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <vector>

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

// The gradient given to backward takes the output's dtype, as torch's: two
// bool ones summed were an or (x.grad 1, not 2), two f16 ones lost a digit,
// an f64 one for an f32 matmul failed inside its backward; complex for a
// real output (its imaginary part would be dropped) is refused.
TEST(Autograd, TheGivenGradientTakesTheOutputsDtype) {
  Tensor x = from_vector(std::vector<double>{1, 2}).set_requires_grad(true);
  Tensor a = mul(x, 1.0), b = mul(x, 1.0);
  const Tensor t = from_vector(std::vector<double>{1, 1}).to(DType::Bool);
  autograd::backward({a, b}, {t, t});
  test::expect_close(x.grad(), {2, 2});
  x.set_grad(Tensor());
  a = mul(x, 1.0);
  b = mul(x, 1.0);
  autograd::backward({a, b}, {full({2}, 1025.0, {DType::F16}), full({2}, 1024.0, {DType::F16})});
  test::expect_close(x.grad(), {2049, 2049});
  Tensor w = ones({2, 2}, {DType::F32}).set_requires_grad(true);
  Tensor m = matmul(w, ones({2, 2}, {DType::F32}));
  m.backward(ones({2, 2}, {DType::F64}));
  EXPECT_EQ(w.grad().dtype(), DType::F32);
  test::expect_close(w.grad(), {2, 2, 2, 2});
  Tensor y = mul(x, 2.0);
  const std::string what = test::error_of([&] { y.backward(ones({2}, {DType::C128})); });
  EXPECT_NE(what.find("expected a gradient of the output's dtype f64, got c128"), std::string::npos)
      << what;
  // Complex of another precision is cast, as torch does.
  Tensor z = test::random_complex({2}).to(DType::C64).set_requires_grad(true);
  mul(z, 2.0).backward(ones({2}, {DType::C128}));
  EXPECT_EQ(z.grad().dtype(), DType::C64);
}

// grad() runs only the nodes on a path to its inputs: a shared node's other
// branch is left with its saved tensors (it was run and freed, and a later
// backward through it failed).
TEST(Autograd, GradRunsOnlyThePathsToItsInputs) {
  Tensor x = from_vector(std::vector<double>{1, 2}).set_requires_grad(true);
  Tensor w = from_vector(std::vector<double>{0.5, 1.5}).set_requires_grad(true);
  Tensor h = exp(w);
  Tensor y = sum(mul(x, h));
  Tensor z = sum(mul(h, h));
  const auto g = autograd::grad({y}, {Tensor()}, {x});
  test::expect_close(g[0], {std::exp(0.5), std::exp(1.5)}, 1e-12);
  EXPECT_FALSE(w.grad().defined());
  z.backward();  // exp's node was not run by grad(): still holds its output
  test::expect_close(w.grad(), {2 * std::exp(1.0), 2 * std::exp(3.0)}, 1e-12);
  // A non-leaf input: the nodes below it are not run either.
  Tensor u = exp(w), v = mul(u, 3.0);
  const auto gu = autograd::grad({sum(v)}, {Tensor()}, {u});
  test::expect_close(gu[0], {3, 3});
  sum(u).backward();
  test::expect_close(w.grad(),
                     {2 * std::exp(1.0) + std::exp(0.5), 2 * std::exp(3.0) + std::exp(1.5)}, 1e-12);
}

// A leaf that stops requiring grad after its graph was built takes no
// gradient (torch's rule: it was accumulated regardless).
TEST(Autograd, ALeafNoLongerRequiringGradTakesNone) {
  Tensor x = from_vector(std::vector<double>{1, 2}).set_requires_grad(true);
  Tensor p = from_vector(std::vector<double>{3, 4}).set_requires_grad(true);
  Tensor y = sum(mul(x, p));
  x.set_requires_grad(false);
  y.backward();
  EXPECT_FALSE(x.grad().defined());
  test::expect_close(p.grad(), {1, 2});
}

// A node whose backward is itself a nested pass (autograd::grad) through a
// parameter the outer pass also reaches, as a checkpointed solve's adjoint:
// d/dx sum(x p) = p, so the node's output x p has gradient g p w.r.t. x.
struct NestedVjp : autograd::Node {
  Tensor x, p;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    autograd::EnableGradGuard enable;
    Tensor xin = x.detach().set_requires_grad(true);
    const std::vector<Tensor> d = autograd::grad({sum(mul(xin, p))}, {Tensor()}, {xin});
    autograd::NoGradGuard no_grad;
    return {mul(g[0], d[0])};
  }
  const char* name() const override { return "NestedVjp"; }
};

Tensor nested_vjp_product(const Tensor& x, const Tensor& p) {
  Tensor out;
  {
    autograd::NoGradGuard no_grad;
    out = mul(x, p);
  }
  auto node = std::make_shared<NestedVjp>();
  node->x = x.detach();
  node->p = p;
  autograd::record(node, {x}, out);
  return out;
}

// The pass's scratch is its own: the nested pass inside NestedVjp reached p's
// accumulator and reset the outer pass's buffers (p's gradient was dropped, or
// a later write went out of bounds).
TEST(Autograd, ABackwardMayRunANestedPassThroughSharedLeaves) {
  for (int order = 0; order < 2; ++order) {
    Tensor x = from_vector(std::vector<double>{1, 2, 3}).set_requires_grad(true);
    Tensor p = from_vector(std::vector<double>{10, 20, 30}).set_requires_grad(true);
    // (a) p * (x p): d/dx = p^2, d/dp = x p (only the direct factor: the node is x's alone).
    sum(mul(p, nested_vjp_product(x, p))).backward();
    test::expect_close(x.grad(), {100, 400, 900}, 0.0);
    test::expect_close(p.grad(), {10, 40, 90}, 0.0);
    // (b) 3 sum p + sum (x p) in either order: d/dp = 3.
    x.set_grad(Tensor());
    p.set_grad(Tensor());
    Tensor direct = sum(mul(p, 3.0)), nested = sum(nested_vjp_product(x, p));
    (order == 0 ? add(direct, nested) : add(nested, direct)).backward();
    test::expect_close(p.grad(), {3, 3, 3}, 0.0);
    test::expect_close(x.grad(), {10, 20, 30}, 0.0);
  }
}

// Passes over separate graphs on several threads may share a leaf: its
// accumulation is locked (gradients were lost to the race).
TEST(Autograd, PassesOnSeveralThreadsShareALeaf) {
  Tensor p = ones({4}, {DType::F64}).set_requires_grad(true);
  constexpr int kRuns = 500;
  auto work = [&p] {
    for (int i = 0; i < kRuns; ++i) {
      sum(mul(mul(from_vector(std::vector<double>{1, 2, 3, 4}), p), 1.0)).backward();
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(work);
  for (auto& t : threads) t.join();
  test::expect_close(p.grad(), {4 * kRuns, 8 * kRuns, 12 * kRuns, 16 * kRuns}, 0.0);
}

// sum(x^2) whose backward takes a while (a solve's, say), so that passes on
// several threads meet inside it: d/dx = 2 x g.
struct SlowSumOfSquares : autograd::Node {
  autograd::SavedTensor x;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return {mul(mul(x.unpack(name()), 2.0), g[0])};
  }
  const char* name() const override { return "SlowSumOfSquares"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override { fn(x); }
};

// Threads running backward through one graph take turns at each node: with
// retain_graph every pass adds its gradients; without it exactly one pass
// runs and the others are told the graph was freed (they ran the node at once
// and read its saved tensors as they were freed).
TEST(Autograd, PassesOnSeveralThreadsThroughOneGraph) {
  constexpr int kThreads = 4;
  for (bool retain : {true, false}) {
    const Tensor p = from_vector(std::vector<double>{1, 2, 3}).set_requires_grad(true);
    Tensor y = p;
    for (int i = 0; i < 50; ++i) y = mul(y, exp(mul(p, 0.0)));  // saves p and its exp
    Tensor loss;
    {
      autograd::NoGradGuard no_grad;
      loss = sum(mul(y, y));
    }
    auto node = std::make_shared<SlowSumOfSquares>();
    node->x = y;
    autograd::record(node, {y}, loss);
    std::atomic<int> ready{0}, ran{0}, refused{0};
    auto work = [&] {
      ++ready;  // all start together, so the passes meet in the slow node
      while (ready.load() < kThreads) std::this_thread::yield();
      try {
        loss.backward(Tensor(), retain);
        ++ran;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("freed"), std::string::npos) << e.what();
        ++refused;
      }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(work);
    for (auto& t : threads) t.join();
    EXPECT_EQ(ran.load(), retain ? kThreads : 1);
    EXPECT_EQ(refused.load(), retain ? 0 : kThreads - 1);
    const double runs = ran.load();
    test::expect_close(p.grad(), {2 * runs, 4 * runs, 6 * runs}, 1e-12);
  }
}

// A graph of 200k chained ops is freed without recursing once per node (the
// default 8 MiB stack overflowed near 150k): a plain chain, a chain whose
// nodes are each reached twice (an explicit time step y + f(y)), and one whose
// nodes save their input (which holds the node before it), never run.
TEST(Autograd, ADeepGraphIsFreedWithoutDeepRecursion) {
  constexpr int kOps = 200000;
  Tensor x = from_vector(std::vector<double>{1}).set_requires_grad(true);
  Tensor w = from_vector(std::vector<double>{1}).set_requires_grad(true);
  {
    Tensor y = x;
    for (int i = 0; i < kOps; ++i) y = mul(y, 1.0);
    y.backward();
  }
  {
    Tensor y = x;
    for (int i = 0; i < kOps; ++i) y = add(y, mul(y, 0.0));
  }
  {
    Tensor y = x;
    for (int i = 0; i < kOps; ++i) y = mul(y, w);
  }
  EXPECT_DOUBLE_EQ(x.grad().item(), 1.0);
}

// set_grad takes a gradient of the tensor's own shape, dtype and device (one of
// shape [2, 1] on a [2] tensor was broadcast to [2, 2] by the next backward);
// requires_grad is a leaf's to change either way.
TEST(Autograd, SetGradAndRequiresGradCheckTheirTensor) {
  Tensor x = ones({2}, {DType::F32}).set_requires_grad(true);
  for (const Tensor& bad : {zeros({2, 1}), zeros({2}, {DType::F64})}) {
    try {
      x.set_grad(bad);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("shape [2], dtype f32"), std::string::npos) << e.what();
    }
  }
  x.set_grad(full({2}, 2.0));
  sum(x).backward();
  test::expect_close(x.grad(), {3, 3}, 0.0);
  Tensor y = mul(x, 2.0);
  EXPECT_THROW(y.set_requires_grad(false), Error);
  EXPECT_THROW(y.set_requires_grad(true), Error);
  EXPECT_TRUE(y.requires_grad());
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
