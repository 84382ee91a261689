// unary.cu's kernels run on the emulated device (emulated_device.h): every
// op forward and backward on f32 f64 f16 bf16, the integer-preserving ops on
// i32 i64 (clamp bounds saturating), the complex ops on c64 c128 (abs writing
// the real type), contiguous and over a transposed input into a padded
// output, against fk's CPU unary_forward / unary_backward over the same
// bytes. Bit for bit where the CPU runs the same formula (unary_formulas.h,
// the C library's functions); the CPU's AVX2 f32 approximations (exp log tanh
// sigmoid silu softplus) are replaced by the scalar formula they approximate;
// complex exp, log, sqrt, reciprocal and the complex gradients (std::complex
// on the CPU) within a few ulp. NaN, infinities and signed zeros included;
// both thread orders.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/fk/emulated_fk_test_util.h"
#include "fk/cuda/kernels.h"
#include "fk/error.h"
#include "fk/half.h"
#include "fk/ops/copy.h"
#include "fk/ops/unary.h"
#include "fk/ops/unary_formulas.h"

// The emulated launchers this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link).
namespace fk::cuda::emu {
void launch_unary(int op, int dtype, const void* in, void* out, int64_t n, double a, double b,
                  void* stream);
void launch_unary_strided(int op, int dtype, const void* in, void* out, int ndim,
                          const int64_t* shape, const int64_t* in_strides,
                          const int64_t* out_strides, double a, double b, void* stream);
void launch_unary_backward(int op, int dtype, const void* grad, const void* ref, void* grad_in,
                           int64_t n, double a, double b, void* stream);
}  // namespace fk::cuda::emu

namespace {

using fk::Dims;
using fk::DType;
using fk::UnaryOp;
using fk::UnaryParams;
using fk_emu_test::Buffer;
using fk_emu_test::code;

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kNumOps = static_cast<int>(UnaryOp::Reciprocal) + 1;

UnaryParams params_of(UnaryOp op) {
  switch (op) {
    case UnaryOp::LeakyRelu:
      return {0.1, 0.0};
    case UnaryOp::Elu:
      return {1.3, 0.0};
    case UnaryOp::Softplus:
      return {2.0, 5.0};  // beta 2, threshold 5: both branches
    case UnaryOp::PowScalar:
      return {2.5, 0.0};
    case UnaryOp::Clamp:
      return {-1.0, 2.5};
    default:
      return {};
  }
}

// Values over the ops' interesting ranges: [-4, 4], small integers and
// halves, and with `specials` NaN, infinities and signed zeros (either part).
Buffer values(DType t, int64_t n, uint32_t seed, bool specials) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(-4.0, 4.0);
  const double special[] = {kNaN, kInf, -kInf, 0.0, -0.0};
  auto value = [&]() -> double {
    if (t == DType::I32 || t == DType::I64) return static_cast<double>(rng() % 2001) - 1000.0;
    const uint32_t r = rng() % 10;
    if (specials && r == 0) return special[rng() % 5];
    if (r < 3) return (static_cast<double>(rng() % 17) - 8.0) / 2.0;
    return unit(rng);
  };
  Buffer b(t, n);
  for (int64_t i = 0; i < n; ++i) {
    const double re = value();
    b.set(i, re, value());
  }
  return b;
}

// Element i of an f32, f16 or bf16 buffer as f32.
float load_float(const Buffer& b, int64_t i) {
  const unsigned char* at = b.bytes() + static_cast<size_t>(i) * b.itemsize();
  if (b.dtype == DType::F32) {
    float f;
    std::memcpy(&f, at, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, at, 2);
  return b.dtype == DType::F16 ? fk::half_to_float(fk::Half{h})
                               : fk::bf16_to_float(fk::BFloat16{h});
}

// The CPU runs these f32 ops through AVX2 approximations (cpu/vec_math.h)
// when the machine has AVX2; their scalar formula is the reference here.
bool has_avx2_kernel(UnaryOp op) {
  return op == UnaryOp::Exp || op == UnaryOp::Log || op == UnaryOp::Tanh ||
         op == UnaryOp::Sigmoid || op == UnaryOp::Silu || op == UnaryOp::Softplus;
}

float scalar_formula(UnaryOp op, float v, UnaryParams p) {
  namespace uf = fk::unary_formulas;
  switch (op) {
    case UnaryOp::Exp:
      return uf::math::exp(v);
    case UnaryOp::Log:
      return uf::math::log(v);
    case UnaryOp::Tanh:
      return uf::math::tanh(v);
    case UnaryOp::Sigmoid:
      return uf::sigmoid(v);
    case UnaryOp::Silu:
      return uf::silu(v);
    default:
      return uf::softplus(v, static_cast<float>(p.a), static_cast<float>(p.b));
  }
}

// y = op(x) as the CPU computes it, into `out` viewed with out_shape/out_strides.
void cpu_forward(UnaryOp op, Buffer& x, const Dims& shape, const Dims& x_strides, Buffer& out,
                 const Dims& out_strides) {
  const UnaryParams p = params_of(op);
  fk::Tensor xv = fk_emu_test::view_of(x, shape, x_strides);
  fk::Tensor ov = fk_emu_test::view_of(out, shape, out_strides);
  if (has_avx2_kernel(op) && fk::compute_type(x.dtype) == DType::F32) {
    // Elementwise over contiguous copies of both, then back into the view.
    fk::Tensor xc = xv.contiguous();
    Buffer xs(x.dtype, shape.numel()), ys(x.dtype, shape.numel());
    if (xs.n > 0) std::memcpy(xs.data(), xc.data_ptr(), xs.nbytes());
    for (int64_t i = 0; i < xs.n; ++i)
      ys.set(i, static_cast<double>(scalar_formula(op, load_float(xs, i), p)));
    ov.copy_(fk_emu_test::view_of(ys, shape, fk_emu_test::contiguous_strides(shape)));
    return;
  }
  ov.copy_(fk::unary_forward(op, xv, p));
}

bool exact_for_complex(UnaryOp op) {
  return op == UnaryOp::Neg || op == UnaryOp::Conj || op == UnaryOp::Abs || op == UnaryOp::Square;
}

void expect_results(DType out_t, UnaryOp op, const Buffer& got, const Buffer& want,
                    const std::string& what) {
  if (fk::is_complex(out_t) && !exact_for_complex(op)) {
    if (out_t == DType::C64) {
      fk_emu_test::expect_close_complex<float>(got.bytes(), want.bytes(), got.n, what);
    } else {
      fk_emu_test::expect_close_complex<double>(got.bytes(), want.bytes(), got.n, what);
    }
    return;
  }
  fk_emu_test::expect_same_elements(out_t, got.bytes(), want.bytes(), got.n, what);
}

DType out_dtype(UnaryOp op, DType t) {
  if (op != UnaryOp::Abs) return t;
  return t == DType::C64 ? DType::F32 : t == DType::C128 ? DType::F64 : t;
}

// launch_unary over n contiguous elements, then launch_unary_strided over a
// transposed [13, 23] input into rows padded to 32, each against the CPU.
void check_forward(UnaryOp op, DType t, uint32_t seed) {
  const std::string what = std::string(fk::name(op)) + " " + fk::name(t);
  SCOPED_TRACE(what);
  const UnaryParams p = params_of(op);
  const DType out_t = out_dtype(op, t);
  const int64_t n = 300;
  // Complex infinities and NaN: the CPU's std::complex follows C's Annex G,
  // the kernel the plain formulas.
  const bool specials =
      !fk::is_complex(t) || op == UnaryOp::Neg || op == UnaryOp::Conj || op == UnaryOp::Abs;
  Buffer x = values(t, n, seed, specials);
  Buffer want = fk_emu_test::random_buffer(out_t, n, 1);
  cpu_forward(op, x, Dims{n}, Dims{1}, want, Dims{1});
  const Dims shape{13, 23}, x_strides{1, 13}, out_strides{32, 1};
  Buffer xt = values(t, 13 * 23, seed + 1, specials);
  Buffer want_t = fk_emu_test::random_buffer(out_t, 12 * 32 + 23, 2);
  cpu_forward(op, xt, shape, x_strides, want_t, out_strides);
  fkemu_test::in_both_orders([&](fkemu::Order) {
    Buffer got = fk_emu_test::random_buffer(out_t, n, 1);
    fk::cuda::emu::launch_unary(static_cast<int>(op), code(t), x.data(), got.data(), n, p.a, p.b,
                                nullptr);
    expect_results(out_t, op, got, want, what + ", contiguous");
    Buffer got_t = fk_emu_test::random_buffer(out_t, want_t.n, 2);
    fk::cuda::emu::launch_unary_strided(static_cast<int>(op), code(t), xt.data(), got_t.data(), 2,
                                        shape.data(), x_strides.data(), out_strides.data(), p.a,
                                        p.b, nullptr);
    expect_results(out_t, op, got_t, want_t, what + ", strided");
  });
}

bool accepts_complex(UnaryOp op) {
  return op == UnaryOp::Neg || op == UnaryOp::Abs || op == UnaryOp::Exp || op == UnaryOp::Log ||
         op == UnaryOp::Sqrt || op == UnaryOp::Conj || op == UnaryOp::Square ||
         op == UnaryOp::Reciprocal;
}

bool keeps_integers(UnaryOp op) {
  return op == UnaryOp::Neg || op == UnaryOp::Abs || op == UnaryOp::Sign || op == UnaryOp::Relu ||
         op == UnaryOp::Clamp || op == UnaryOp::Square || op == UnaryOp::Conj;
}

TEST(EmulatedFkUnary, RealForwardOfEveryOpAsTheCpu) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    for (int op = 0; op < kNumOps; ++op) check_forward(static_cast<UnaryOp>(op), t, 10 + op);
  }
}

TEST(EmulatedFkUnary, IntegerOpsKeepIntegers) {
  for (DType t : {DType::I32, DType::I64}) {
    for (int op = 0; op < kNumOps; ++op) {
      if (keeps_integers(static_cast<UnaryOp>(op))) check_forward(static_cast<UnaryOp>(op), t, 40);
    }
  }
}

TEST(EmulatedFkUnary, IntegerClampBoundsSaturate) {
  const double bounds[][2] = {{-kInf, 250.5}, {-1e30, 1e30}, {-7.9, kInf}};
  for (DType t : {DType::I32, DType::I64}) {
    for (const auto& ab : bounds) {
      SCOPED_TRACE(std::string(fk::name(t)) + " clamp to [" + std::to_string(ab[0]) + ", " +
                   std::to_string(ab[1]) + "]");
      const int64_t n = 300;
      Buffer x = values(t, n, 50, false);
      Buffer want(t, n);
      fk_emu_test::view_of(want).copy_(
          fk::unary_forward(UnaryOp::Clamp, fk_emu_test::view_of(x), {ab[0], ab[1]}));
      fkemu_test::in_both_orders([&](fkemu::Order) {
        Buffer got(t, n);
        fk::cuda::emu::launch_unary(static_cast<int>(UnaryOp::Clamp), code(t), x.data(), got.data(),
                                    n, ab[0], ab[1], nullptr);
        fk_emu_test::expect_same_elements(t, got.data(), want.data(), n, "clamp");
      });
    }
  }
}

TEST(EmulatedFkUnary, ComplexForwardAsTheCpu) {
  for (DType t : {DType::C64, DType::C128}) {
    for (int op = 0; op < kNumOps; ++op) {
      if (accepts_complex(static_cast<UnaryOp>(op))) check_forward(static_cast<UnaryOp>(op), t, 60);
    }
  }
}

// uses_output in unary.cpp: the backward reads y for these, x for the others.
bool reads_output(UnaryOp op) {
  return op == UnaryOp::Exp || op == UnaryOp::Expm1 || op == UnaryOp::Sqrt ||
         op == UnaryOp::Rsqrt || op == UnaryOp::Tanh || op == UnaryOp::Sigmoid ||
         op == UnaryOp::Reciprocal;
}

void check_backward(UnaryOp op, DType t, bool specials) {
  const std::string what = std::string(fk::name(op)) + " backward " + fk::name(t);
  SCOPED_TRACE(what);
  const UnaryParams p = params_of(op);
  const int64_t n = 300;
  Buffer x = values(t, n, 70 + static_cast<uint32_t>(op), specials);
  // The reference input: y = op(x) (as the CPU computes it) or x itself.
  Buffer ref = x;
  if (reads_output(op)) cpu_forward(op, x, Dims{n}, Dims{1}, ref, Dims{1});
  const DType g_t = out_dtype(op, t);
  Buffer g = values(g_t, n, 80, specials);
  fk::Tensor ref_view = fk_emu_test::view_of(ref);
  Buffer want(t, n);
  fk_emu_test::view_of(want).copy_(
      fk::unary_backward(op, fk_emu_test::view_of(g), ref_view, ref_view, p));
  fkemu_test::in_both_orders([&](fkemu::Order) {
    Buffer got(t, n);
    fk::cuda::emu::launch_unary_backward(static_cast<int>(op), code(t), g.data(), ref.data(),
                                         got.data(), n, p.a, p.b, nullptr);
    if (t == DType::C64) {
      fk_emu_test::expect_close_complex<float>(got.bytes(), want.bytes(), n, what);
    } else if (t == DType::C128) {
      fk_emu_test::expect_close_complex<double>(got.bytes(), want.bytes(), n, what);
    } else {
      fk_emu_test::expect_same_elements(t, got.data(), want.data(), n, what);
    }
  });
}

TEST(EmulatedFkUnary, RealBackwardOfEveryOpAsTheCpu) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    for (int op = 0; op < kNumOps; ++op) check_backward(static_cast<UnaryOp>(op), t, true);
  }
}

TEST(EmulatedFkUnary, ComplexBackwardAsTheCpu) {
  // Finite values: the CPU's complex products and quotients follow C's
  // Annex G for infinite parts, the kernel's the plain formulas.
  for (DType t : {DType::C64, DType::C128}) {
    for (int op = 0; op < kNumOps; ++op) {
      if (accepts_complex(static_cast<UnaryOp>(op)))
        check_backward(static_cast<UnaryOp>(op), t, false);
    }
  }
}

TEST(EmulatedFkUnary, EmptyLaunchesWriteNothing) {
  std::vector<float> in(4, 1.0f), out(4, 7.0f);
  fk::cuda::emu::launch_unary(static_cast<int>(UnaryOp::Exp), code(DType::F32), in.data(),
                              out.data(), 0, 0.0, 0.0, nullptr);
  const int64_t shape[2] = {4, 0};
  fk::cuda::emu::launch_unary_strided(static_cast<int>(UnaryOp::Exp), code(DType::F32), in.data(),
                                      out.data(), 2, shape, nullptr, nullptr, 0.0, 0.0, nullptr);
  fk::cuda::emu::launch_unary_backward(static_cast<int>(UnaryOp::Exp), code(DType::F32), in.data(),
                                       in.data(), out.data(), 0, 0.0, 0.0, nullptr);
  EXPECT_EQ(out, std::vector<float>(4, 7.0f));
}

TEST(EmulatedFkUnary, RefusesOpsADtypeDoesNotTake) {
  std::vector<double> x(8);
  const auto launch = [&](UnaryOp op, DType t) {
    fk::cuda::emu::launch_unary(static_cast<int>(op), code(t), x.data(), x.data(), 4, 0.0, 0.0,
                                nullptr);
  };
  EXPECT_THROW(launch(UnaryOp::Exp, DType::I32), fk::Error);
  EXPECT_THROW(launch(UnaryOp::Sin, DType::C64), fk::Error);
  EXPECT_THROW(launch(UnaryOp::Neg, DType::Bool), fk::Error);
  EXPECT_THROW(fk::cuda::emu::launch_unary(kNumOps, code(DType::F32), x.data(), x.data(), 4, 0.0,
                                           0.0, nullptr),
               fk::Error);
  EXPECT_THROW(
      fk::cuda::emu::launch_unary_backward(static_cast<int>(UnaryOp::Neg), code(DType::I32),
                                           x.data(), x.data(), x.data(), 4, 0.0, 0.0, nullptr),
      fk::Error);
  EXPECT_THROW(
      fk::cuda::emu::launch_unary_backward(static_cast<int>(UnaryOp::Sin), code(DType::C128),
                                           x.data(), x.data(), x.data(), 4, 0.0, 0.0, nullptr),
      fk::Error);
}

}  // namespace
