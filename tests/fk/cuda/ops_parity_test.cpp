// Parity of the indexing, joining, reduction and FFT ops on CUDA tensors with
// the same ops on the CPU: values and gradients (the same graph run on both
// devices). The GPU tests skip themselves where no GPU is usable;
// MissingDeviceErrors checks the errors a missing device gives, everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "../test_util.h"
#include "fk/cuda/kernels.h"
#include "fk/cuda/runtime.h"

namespace fk {
namespace {

#define SKIP_WITHOUT_GPU() \
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device"

const Device kGpu = cuda_device(0);

// gpu (on the device) equals cpu within tol relative to 1 + |cpu|; complex
// tensors are compared part by part. NaNs and infinities must match exactly.
void expect_same(const Tensor& gpu, const Tensor& cpu, double tol, const std::string& what = "") {
  ASSERT_TRUE(gpu.device().is_cuda()) << what;
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  if (is_complex(cpu.dtype())) {
    expect_same(gpu.real(), cpu.real(), tol, what + " (real part)");
    expect_same(gpu.imag(), cpu.imag(), tol, what + " (imaginary part)");
    return;
  }
  auto g = gpu.to(kCPU).to_vector<double>(), c = cpu.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(c[i]) || std::isinf(c[i])) {
      EXPECT_TRUE(std::isnan(c[i]) ? std::isnan(g[i]) : g[i] == c[i]) << what << " at " << i;
      continue;
    }
    EXPECT_NEAR(g[i], c[i], tol * (1 + std::abs(c[i]))) << what << " at " << i;
  }
}

// Runs `f` on x (copied to `device`, requiring grad), backpropagates
// sum(f(x) * w) with fixed weights w, and returns (f(x), x.grad).
std::pair<Tensor, Tensor> value_and_grad(const Tensor& x, Device device,
                                         const std::function<Tensor(const Tensor&)>& f) {
  Tensor xd = x.to(device).detach().set_requires_grad(true);
  Tensor y = f(xd);
  Tensor w = test::random_tensor(y.shape(), DType::F64, 0.5, 1.5, 99).to(real_type(y.dtype()));
  Tensor loss = is_complex(y.dtype()) ? sum(mul(abs(y), w.to(device))) : sum(mul(y, w.to(device)));
  loss.backward();
  return {y.detach(), xd.grad()};
}

// f on the GPU against f on the CPU: values and the gradient w.r.t. x.
void expect_parity(const Tensor& x, const std::function<Tensor(const Tensor&)>& f, double tol,
                   const std::string& what) {
  auto [gy, gg] = value_and_grad(x, kGpu, f);
  auto [cy, cg] = value_and_grad(x, kCPU, f);
  expect_same(gy, cy, tol, what + " value");
  expect_same(gg, cg, tol, what + " grad");
}

// A tensor argument made on the CPU and moved to the device f runs on.
Tensor like(const Tensor& host, const Tensor& x) {
  return host.to(x.device());
}

Tensor i64s(const std::vector<int64_t>& v, const Dims& shape) {
  return from_vector(v, shape);
}
Tensor bools(const std::vector<bool>& v, const Dims& shape) {
  return from_vector(v, shape);
}

TEST(CudaOps, IndexSelectGatherScatterIndexAdd) {
  SKIP_WITHOUT_GPU();
  Tensor x = test::random_tensor({5, 6}, DType::F64, -1, 1, 21);
  Tensor idx = i64s({4, 0, 4, 2}, {4});  // repeats: the backward accumulates
  Tensor g0 = i64s({0, 2, 1, 4, 4, 3, 0, 1, 2, 3, 3, 3}, {2, 6});
  Tensor g1 = i64s({5, 0, 5, 1, 1, 2, 3, 3, 0, 4, 4, 4, 2, 5, 0}, {5, 3});
  Tensor src2 = test::random_tensor({2, 6}, DType::F64, -1, 1, 22);
  Tensor src4 = test::random_tensor({4, 6}, DType::F64, -1, 1, 23);
  for (DType dt : {DType::F64, DType::F32}) {
    const double tol = dt == DType::F64 ? 1e-12 : 1e-5;
    const std::string tag = std::string(" ") + name(dt);
    Tensor xt = x.to(dt), s2 = src2.to(dt), s4 = src4.to(dt);
    expect_parity(
        xt, [&](const Tensor& t) { return index_select(t, 0, like(idx, t)); }, tol,
        "index_select dim 0" + tag);
    expect_parity(
        xt, [&](const Tensor& t) { return index_select(t.t(), 1, like(idx.to(DType::I32), t)); },
        tol, "index_select of a transpose, i32 index" + tag);
    expect_parity(
        xt, [&](const Tensor& t) { return gather(t, 0, like(g0, t)); }, tol, "gather dim 0" + tag);
    expect_parity(
        xt, [&](const Tensor& t) { return gather(t, 1, like(g1, t)); }, tol, "gather dim 1" + tag);
    expect_parity(
        xt, [&](const Tensor& t) { return scatter_add(t, 0, like(g0, t), like(s2, t)); }, tol,
        "scatter_add (self)" + tag);
    expect_parity(
        s2, [&](const Tensor& s) { return scatter_add(like(xt, s), 0, like(g0, s), s); }, tol,
        "scatter_add (src)" + tag);
    expect_parity(
        xt, [&](const Tensor& t) { return index_add(t, 0, like(idx, t), like(s4, t), 2.0); }, tol,
        "index_add (self)" + tag);
    expect_parity(
        s4, [&](const Tensor& s) { return index_add(like(xt, s), 0, like(idx, s), s, -0.5); }, tol,
        "index_add (src)" + tag);
  }
  // Integer scatter and in-place forms (values only).
  Tensor xi = mul(x, 10.0).to(DType::I64);
  Tensor si = mul(src2, 10.0).to(DType::I64);
  expect_same(scatter_add(xi.to(kGpu), 0, g0.to(kGpu), si.to(kGpu)), scatter_add(xi, 0, g0, si), 0,
              "scatter_add i64");
  Tensor gc = x.clone().to(kGpu), cc = x.clone();
  scatter_add_(gc, 0, g0.to(kGpu), src2.to(kGpu));
  scatter_add_(cc, 0, g0, src2);
  expect_same(gc, cc, 1e-12, "scatter_add_");
  index_add_(gc, 0, idx.to(kGpu), src4.to(kGpu), 3.0);
  index_add_(cc, 0, idx, src4, 3.0);
  expect_same(gc, cc, 1e-12, "index_add_");
  // A half tensor accumulates in f32, as on the CPU.
  expect_same(index_add(x.to(DType::F16).to(kGpu), 0, idx.to(kGpu), src4.to(DType::F16).to(kGpu)),
              index_add(x.to(DType::F16), 0, idx, src4.to(DType::F16)), 1e-3, "index_add f16");
}

TEST(CudaOps, IndexErrors) {
  SKIP_WITHOUT_GPU();
  Tensor g = test::random_tensor({4, 3}, DType::F32).to(kGpu);
  EXPECT_THROW(index_select(g, 0, i64s({0, 4}, {2}).to(kGpu)), Error);
  EXPECT_THROW(index_select(g, 0, i64s({-1}, {1}).to(kGpu)), Error);
  EXPECT_THROW(gather(g, 1, i64s({0, 3, 0, 0}, {4, 1}).to(kGpu)), Error);
  EXPECT_THROW(index_add(g, 0, i64s({7}, {1}).to(kGpu), ones({1, 3}, {DType::F32, kGpu})), Error);
  // The message names the offending index.
  try {
    scatter_add(g, 0, i64s({0, 9, 0}, {1, 3}).to(kGpu), ones({1, 3}, {DType::F32, kGpu}));
    ADD_FAILURE() << "no error for index 9";
  } catch (const Error& e) {
    EXPECT_NE(e.given().find("9"), std::string::npos) << e.what();
  }
  // Operands on another device.
  EXPECT_THROW(index_select(g, 0, i64s({0}, {1})), Error);
  EXPECT_THROW(masked_fill(g, bools({true, false, true}, {3}), 1.0), Error);
  EXPECT_THROW(cat({g, ones({4, 3})}, 0), Error);
}

TEST(CudaOps, Masks) {
  SKIP_WITHOUT_GPU();
  Tensor x = test::random_tensor({4, 5}, DType::F64, -1, 1, 31);
  std::vector<bool> mv;
  for (int i = 0; i < 20; ++i) mv.push_back(i % 3 == 0 || i == 7);
  Tensor mask = bools(mv, {4, 5});
  Tensor row = bools({true, false, false, true, true}, {5});
  for (DType dt : {DType::F64, DType::F32}) {
    const double tol = dt == DType::F64 ? 1e-12 : 1e-6;
    Tensor xt = x.to(dt);
    expect_parity(
        xt, [&](const Tensor& t) { return masked_fill(t, like(mask, t), -3.5); }, tol,
        "masked_fill");
    expect_parity(
        xt, [&](const Tensor& t) { return masked_fill(t.t(), like(mask.t(), t), 2.0); }, tol,
        "masked_fill of a transpose");
    expect_parity(
        xt, [&](const Tensor& t) { return masked_select(t, like(mask, t)); }, tol, "masked_select");
    expect_parity(
        xt, [&](const Tensor& t) { return masked_select(t, like(row, t)); }, tol,
        "masked_select, broadcast mask");
    expect_parity(
        xt.narrow(0, 0, 1), [&](const Tensor& t) { return masked_select(t, like(mask, t)); }, tol,
        "masked_select, broadcast input");
  }
  expect_same(masked_select(x.to(kGpu), zeros({4, 5}, {DType::Bool, kGpu})),
              masked_select(x, zeros({4, 5}, {DType::Bool})), 0, "masked_select, nothing");
  // In place, contiguous and strided.
  Tensor g = x.clone().to(kGpu), c = x.clone();
  masked_fill_(g, mask.to(kGpu), 7.0);
  masked_fill_(c, mask, 7.0);
  expect_same(g, c, 0, "masked_fill_");
  Tensor gt = g.t(), ct = c.t();
  masked_fill_(gt, row.narrow(0, 0, 4).to(kGpu), -1.0);
  masked_fill_(ct, row.narrow(0, 0, 4), -1.0);
  expect_same(g, c, 0, "masked_fill_ of a transpose");
  expect_same(masked_fill(x.to(DType::I32).to(kGpu), mask.to(kGpu), 4.0),
              masked_fill(x.to(DType::I32), mask, 4.0), 0, "masked_fill i32");
}

TEST(CudaOps, CatStackSplit) {
  SKIP_WITHOUT_GPU();
  Tensor a = test::random_tensor({3, 2}, DType::F64, -1, 1, 41);
  Tensor b = test::random_tensor({3, 4}, DType::F64, -1, 1, 42);
  expect_parity(
      a,
      [&](const Tensor& t) {
        return cat({t, like(b, t), t}, 1);
      },
      0, "cat dim 1");
  expect_parity(
      a,
      [&](const Tensor& t) {
        return cat({t.t(), like(b, t).t()}, 0);
      },
      0, "cat of transposes");
  expect_parity(
      a,
      [&](const Tensor& t) {
        return stack({t, mul(t, 2.0)}, 1);
      },
      1e-12, "stack");
  expect_parity(
      b,
      [&](const Tensor& t) {
        return mul(split(t, {1, 2, 1}, 1)[1], 3.0);
      },
      1e-12, "split");
  // Promotion: f32 and f64 give f64.
  expect_same(cat({a.to(DType::F32).to(kGpu), b.to(kGpu)}, 1), cat({a.to(DType::F32), b}, 1), 0,
              "cat f32 + f64");
  expect_same(cat({a.to(kGpu), zeros({3, 0}, {DType::F64, kGpu})}, 1), a, 0, "cat with empty");
}

TEST(CudaOps, PadRollFlip) {
  SKIP_WITHOUT_GPU();
  Tensor x = test::random_tensor({3, 4}, DType::F64, -1, 1, 51);
  for (PadMode mode :
       {PadMode::Constant, PadMode::Reflect, PadMode::Replicate, PadMode::Circular}) {
    expect_parity(
        x,
        [&](const Tensor& t) {
          return pad(t, {1, 2, 2, 1}, mode, 1.5);
        },
        1e-12, std::string("pad ") + name(mode));
    expect_parity(
        x,
        [&](const Tensor& t) {
          return pad(t.t(), {0, 2}, mode, -2.0);
        },
        1e-12, std::string("pad of a transpose ") + name(mode));
  }
  expect_parity(
      x,
      [&](const Tensor& t) {
        return pad(t, {-1, 2, 1, -2}, PadMode::Constant, 0.5);
      },
      0, "pad with crops");
  expect_same(pad(x.to(kGpu), {-3, -1}, PadMode::Constant, 0.5),
              pad(x, {-3, -1}, PadMode::Constant, 0.5), 0, "pad cropping everything");
  expect_parity(
      x,
      [&](const Tensor& t) {
        return roll(t, {1, -3}, {0, 1});
      },
      0, "roll");
  expect_parity(
      x, [&](const Tensor& t) { return roll(t, {5}, {}); }, 0, "roll flattened");
  expect_parity(
      x,
      [&](const Tensor& t) {
        return flip(t, {0, 1});
      },
      0, "flip both");
  expect_parity(
      x, [&](const Tensor& t) { return flip(t.t(), {1}); }, 0, "flip of a transpose");
  expect_parity(
      x, [&](const Tensor& t) { return flip(t, {}); }, 0, "flip nothing");
  expect_same(flip(x.to(DType::C64).to(kGpu), {1}), flip(x.to(DType::C64), {1}), 0, "flip c64");
}

TEST(CudaOps, ProdNormVarLogsumexp) {
  SKIP_WITHOUT_GPU();
  Tensor x = test::random_tensor({4, 5}, DType::F64, -1.5, 1.5, 61);
  // Row 1 holds one zero, row 2 two: prod's gradient must stay exact there.
  std::vector<double> v = x.to_vector<double>();
  v[7] = 0;
  v[10] = 0;
  v[13] = 0;
  Tensor xz = from_vector(v, {4, 5});
  for (DType dt : {DType::F64, DType::F32}) {
    const double tol = dt == DType::F64 ? 1e-11 : 2e-5;
    const std::string tag = std::string(" ") + name(dt);
    Tensor t = x.to(dt), tz = xz.to(dt);
    expect_parity(
        tz, [](const Tensor& u) { return prod(u, {1}); }, tol, "prod dim 1" + tag);
    expect_parity(
        tz, [](const Tensor& u) { return prod(u, {0}, true); }, tol, "prod dim 0 keepdim" + tag);
    expect_parity(
        t, [](const Tensor& u) { return prod(u); }, tol, "prod all" + tag);
    for (double p : {1.0, 2.0, 3.0, std::numeric_limits<double>::infinity()}) {
      const std::string pn = " p=" + std::to_string(p) + tag;
      expect_parity(
          tz, [p](const Tensor& u) { return norm(u, p, {1}); }, tol, "norm dim 1" + pn);
      expect_parity(
          t, [p](const Tensor& u) { return norm(u.t(), p, {}, true); }, tol, "norm all" + pn);
    }
    expect_parity(
        t, [](const Tensor& u) { return var(u, {1}); }, tol, "var dim 1" + tag);
    expect_parity(
        t, [](const Tensor& u) { return var(u, {0}, 0, true); }, tol, "var dim 0" + tag);
    expect_parity(
        t, [](const Tensor& u) { return fk::std(u, {}, 1); }, tol, "std all" + tag);
    expect_parity(
        t, [](const Tensor& u) { return logsumexp(u, {1}); }, tol, "logsumexp dim 1" + tag);
    expect_parity(
        t,
        [](const Tensor& u) {
          return logsumexp(u.t(), {0, 1}, true);
        },
        tol, "logsumexp all" + tag);
  }
  // A zero row: norm 0, gradient 0.
  expect_parity(
      zeros({2, 3}, {DType::F64}), [](const Tensor& u) { return norm(u, 2.0, {1}); }, 0,
      "norm of zeros");
  // Complex inputs.
  Tensor z = test::random_complex({3, 4}, 62);
  expect_parity(
      z, [](const Tensor& u) { return prod(u, {1}); }, 1e-11, "prod c128");
  expect_parity(
      z, [](const Tensor& u) { return norm(u, 2.0, {0}); }, 1e-11, "norm c128");
  expect_parity(
      z, [](const Tensor& u) { return norm(u, 1.0, {1}); }, 1e-11, "norm p=1 c128");
  expect_parity(
      z, [](const Tensor& u) { return var(u, {1}); }, 1e-11, "var c128");
  // Integers, a row of -inf, empty rows (values only).
  Tensor xi = mul(x, 3.0).to(DType::I32);
  expect_same(prod(xi.to(kGpu), {1}), prod(xi, {1}), 0, "prod i32");
  std::vector<double> w = v;
  for (int j = 0; j < 5; ++j) w[j] = -std::numeric_limits<double>::infinity();
  Tensor xi2 = from_vector(w, {4, 5});
  expect_same(logsumexp(xi2.to(kGpu), {1}), logsumexp(xi2, {1}), 1e-12, "logsumexp with infs");
  expect_same(prod(zeros({2, 0}, {DType::F64, kGpu}), {1}), prod(zeros({2, 0}, {DType::F64}), {1}),
              0, "prod of empty rows");
}

TEST(CudaOps, Fft) {
  SKIP_WITHOUT_GPU();
  Tensor z = test::random_complex({4, 6}, 71);
  Tensor r = test::random_tensor({4, 6}, DType::F64, -1, 1, 72);
  for (DType dt : {DType::C128, DType::C64}) {
    const double tol = dt == DType::C128 ? 1e-11 : 2e-5;
    const std::string tag = std::string(" ") + name(dt);
    Tensor zt = z.to(dt), rt = r.to(real_type(dt));
    for (FFTNorm nm : {FFTNorm::Backward, FFTNorm::Ortho, FFTNorm::Forward}) {
      const std::string nn = " norm " + std::to_string(static_cast<int>(nm)) + tag;
      expect_parity(
          zt, [nm](const Tensor& u) { return fft(u, -1, 1, nm); }, tol, "fft" + nn);
      expect_parity(
          zt, [nm](const Tensor& u) { return ifft(u, -1, 0, nm); }, tol, "ifft" + nn);
      expect_parity(
          rt, [nm](const Tensor& u) { return rfft(u, -1, 1, nm); }, tol, "rfft" + nn);
      expect_parity(
          rt, [nm](const Tensor& u) { return rfftn(u, {}, {}, nm); }, tol, "rfftn" + nn);
      expect_parity(
          zt,
          [nm](const Tensor& u) {
            return irfftn(u, {4, 6}, {}, nm);
          },
          tol, "irfftn (a non-Hermitian spectrum)" + nn);
    }
    expect_parity(
        zt,
        [](const Tensor& u) {
          return fftn(u, {3, 8}, {}, FFTNorm::Ortho);
        },
        tol, "fftn truncated and padded" + tag);
    expect_parity(
        zt, [](const Tensor& u) { return ifftn(u.t(), {}, {}, FFTNorm::Backward); }, tol,
        "ifftn of a transpose" + tag);
    expect_parity(
        rt, [](const Tensor& u) { return rfft(u, 5, 1, FFTNorm::Backward); }, tol,
        "rfft odd length" + tag);
    expect_parity(
        rt, [](const Tensor& u) { return rfft(u, -1, 0, FFTNorm::Backward); }, tol,
        "rfft along dim 0" + tag);
    expect_parity(
        zt, [](const Tensor& u) { return irfft(u, 7, 1, FFTNorm::Backward); }, tol,
        "irfft odd length" + tag);
    expect_parity(
        zt, [](const Tensor& u) { return irfft(u, -1, 0, FFTNorm::Ortho); }, tol,
        "irfft along dim 0" + tag);
  }
  // More than 3 transformed dims: split into cuFFT-sized parts.
  Tensor z5 = test::random_complex({2, 3, 2, 2, 3}, 73);
  expect_parity(
      z5, [](const Tensor& u) { return fftn(u, {}, {}, FFTNorm::Ortho); }, 1e-11, "fftn 5-d");
  expect_parity(
      z5.real(), [](const Tensor& u) { return rfftn(u, {}, {}, FFTNorm::Backward); }, 1e-11,
      "rfftn 5-d");
  expect_parity(
      z5, [](const Tensor& u) { return irfftn(u, {}, {}, FFTNorm::Backward); }, 1e-11,
      "irfftn 5-d");
  // Half inputs compute in f32; a round trip gives the signal back.
  expect_same(rfft(r.to(DType::F16).to(kGpu)), rfft(r.to(DType::F16)), 2e-3, "rfft f16");
  Tensor rg = r.to(kGpu);
  expect_same(irfftn(rfftn(rg), {4, 6}), r, 1e-12, "round trip");
}

// fk::testing::gradcheck with the inputs on the device: autograd's gradients
// of the CUDA ops against central differences of the same CUDA ops (f64), an
// independent check of the device backward paths beside the CPU/GPU parity.
TEST(CudaOps, GradcheckOnTheDevice) {
  SKIP_WITHOUT_GPU();
  Tensor a = test::random_tensor({3, 4}, DType::F64, -1, 1, 31).to(kGpu);
  Tensor b = test::random_tensor({4, 2}, DType::F64, -1, 1, 32).to(kGpu);
  a.set_requires_grad(true);
  b.set_requires_grad(true);
  Tensor idx = i64s({2, 0, 2, 1}, {4}).to(kGpu);  // a repeat: the backward accumulates
  // Every evaluation (analytic and perturbed) must run on the device.
  auto on_gpu = [](testing::TensorFn f) {
    return [f](const std::vector<Tensor>& xs) {
      for (const Tensor& x : xs) EXPECT_TRUE(x.device().is_cuda());
      Tensor y = f(xs);
      EXPECT_TRUE(y.device().is_cuda());
      return y;
    };
  };
  const std::vector<std::pair<std::string, testing::TensorFn>> unary_cases = {
      {"tanh(x) * exp(x)", [](const auto& xs) { return mul(tanh(xs[0]), exp(xs[0])); }},
      {"softmax dim 1", [](const auto& xs) { return softmax(xs[0], 1); }},
      {"sum of squares dim 1", [](const auto& xs) { return sum(mul(xs[0], xs[0]), {1}); }},
      {"index_select dim 0", [&](const auto& xs) { return index_select(xs[0], 0, idx); }},
      {"rfftn (complex output)", [](const auto& xs) { return rfftn(xs[0]); }},
      {"irfftn of a scaled rfftn",
       [](const auto& xs) {
         return irfftn(mul(rfftn(xs[0]), 0.5), {3, 4});
       }},
  };
  for (const auto& [what, f] : unary_cases) {
    EXPECT_EQ(testing::gradcheck(on_gpu(f), {a}), "") << what;
  }
  EXPECT_EQ(testing::gradcheck(on_gpu([](const auto& xs) { return matmul(xs[0], xs[1]); }), {a, b}),
            "")
      << "matmul";
}

TEST(CudaOps, FactoriesOnDevice) {
  SKIP_WITHOUT_GPU();
  // Made on the host and copied: the same values as on the CPU.
  expect_same(arange(2.0, 9.0, 1.5, {DType::F32, kGpu}), arange(2.0, 9.0, 1.5, {DType::F32}), 0,
              "arange");
  expect_same(linspace(-1, 1, 7, {DType::F64, kGpu}), linspace(-1, 1, 7, {DType::F64}), 0,
              "linspace");
  expect_same(eye(3, {DType::F32, kGpu}), eye(3, {DType::F32}), 0, "eye");
  Generator a(5), b(5);
  expect_same(randn({3, 4}, {DType::F32, kGpu}, &a), randn({3, 4}, {DType::F32}, &b), 0, "randn");
  expect_same(randint(0, 9, {6}, {DType::I64, kGpu}, &a), randint(0, 9, {6}, {DType::I64}, &b), 0,
              "randint");
  expect_same(randperm(7, {DType::I64, kGpu}, &a), randperm(7, {DType::I64}, &b), 0, "randperm");
}

// A CUDA tensor on a device that does not exist (any device on a machine
// without a usable GPU, as in CPU-only builds) cannot be made, and says why;
// the CUDA launchers of a CPU-only build throw instead of doing nothing.
// Runs everywhere (gpu-check treats a skip as a failure).
TEST(CudaOps, MissingDeviceErrors) {
  const Device missing = cuda_device(cuda::device_count());
  try {
    zeros({2, 3}, {DType::F32, missing});
    ADD_FAILURE() << "made a tensor on " << missing.str();
  } catch (const Error& e) {
    EXPECT_NE(e.expected().find("available device"), std::string::npos) << e.what();
  }
  Tensor x = ones({2, 3});
  EXPECT_THROW(x.to(missing), Error);
  EXPECT_THROW(arange(4, {DType::I64, missing}), Error);
  if (!cuda::built_with_cuda()) {
    try {
      cuda::launch_prod_backward_lastdim(cuda::kF32, nullptr, nullptr, nullptr, 1, 1, nullptr);
      ADD_FAILURE() << "a CPU-only build ran a CUDA launcher";
    } catch (const Error& e) {
      EXPECT_NE(e.given().find("CPU-only"), std::string::npos) << e.what();
    }
    EXPECT_THROW(
        cuda::launch_index_select(cuda::kF32, nullptr, nullptr, nullptr, 1, 1, 1, 1, {}, nullptr),
        Error);
  }
}

}  // namespace
}  // namespace fk
