// binary.cu's kernels run on the emulated device (emulated_device.h): every
// op on every dtype the launcher takes (f32 f64 f16 bf16 all 14; i32 i64 the
// integer ones and the comparisons; c64 c128 add sub mul div eq ne), over
// contiguous, broadcast (stride-0 rows and columns), transposed and padded
// geometries, a scalar b, in place, and empty and 0-dim shapes, against fk's
// CPU binary_forward over the same bytes: bit for bit, except complex
// division (the CPU's is libgcc's scaled division, the kernel's Smith's; a
// few ulp apart). Also scale and where (every element size, broadcast
// condition) against host loops. Both thread orders.
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
#include "fk/ops/binary/binary.h"
#include "fk/ops/copy.h"

// The emulated launchers this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link).
namespace fk::cuda::emu {
void launch_binary(int op, int dtype, const void* a, const void* b, void* out, int ndim,
                   const int64_t* shape, const int64_t* a_strides, const int64_t* b_strides,
                   const int64_t* out_strides, double alpha, double b_scalar, void* stream);
void launch_scale(int dtype, void* data, int64_t n, double s, void* stream);
void launch_where(int dtype, const void* cond, const void* a, const void* b, void* out, int ndim,
                  const int64_t* shape, const int64_t* cond_strides, const int64_t* a_strides,
                  const int64_t* b_strides, void* stream);
}  // namespace fk::cuda::emu

namespace {

using fk::BinaryOp;
using fk::Dims;
using fk::DType;
using fk_emu_test::Buffer;
using fk_emu_test::code;

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Operand values: small integers often (so that comparisons see equal
// pairs), and with `specials` NaN, infinities and signed zeros (in either
// part of a complex number). Integers stay small: their ops must not overflow.
Buffer operand(DType t, int64_t n, uint32_t seed, bool specials) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(-4.0, 4.0);
  const double special[] = {kNaN, kInf, -kInf, 0.0, -0.0};
  auto value = [&]() -> double {
    if (t == DType::I32 || t == DType::I64) return static_cast<double>(rng() % 101) - 50.0;
    const uint32_t r = rng() % 8;
    if (specials && r == 0) return special[rng() % 5];
    if (r < 4) return static_cast<double>(rng() % 9) - 4.0 + (r == 1 ? 0.0 : 0.5);
    double v = unit(rng);
    return v == 0.0 ? 1.0 : v;
  };
  Buffer b(t, n);
  for (int64_t i = 0; i < n; ++i) {
    const double re = value();
    b.set(i, re, value());
  }
  return b;
}

int64_t extent(const Dims& shape, const Dims& strides) {
  int64_t last = 0;
  for (int d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return 1;
    last += (shape[d] - 1) * strides[d];
  }
  return last + 1;
}

struct Geometry {
  const char* name;
  Dims shape, a_strides, b_strides, out_strides;
};

std::vector<Geometry> geometries() {
  return {
      {"contiguous", Dims{300}, Dims{1}, Dims{1}, Dims{1}},
      {"broadcast row", Dims{7, 45}, Dims{45, 1}, Dims{0, 1}, Dims{45, 1}},
      {"transposed a, broadcast column", Dims{13, 29}, Dims{1, 13}, Dims{1, 0}, Dims{29, 1}},
      {"padded output", Dims{5, 6, 7}, Dims{42, 7, 1}, Dims{0, 7, 1}, Dims{64, 8, 1}},
      {"unit dims", Dims{3, 1, 40}, Dims{40, 5, 1}, Dims{1, 9, 0}, Dims{40, 40, 1}},
      {"0-dim", Dims{}, Dims{}, Dims{}, Dims{}},
      {"empty", Dims{3, 0}, Dims{0, 1}, Dims{1, 1}, Dims{1, 1}},
  };
}

bool is_comparison(BinaryOp op) {
  return op >= BinaryOp::Eq;
}

// out = a op b on the emulated device against the CPU's binary_forward; b
// scalar when b_scalar is given (b then unused).
void check_binary(BinaryOp op, DType t, const Geometry& g, double alpha, bool specials,
                  const double* b_scalar = nullptr) {
  const std::string what = std::string(fk::name(op)) + " " + fk::name(t) + ", " + g.name +
                           ", alpha " + std::to_string(alpha) + (b_scalar ? ", scalar b" : "");
  SCOPED_TRACE(what);
  const DType out_t = is_comparison(op) ? DType::Bool : t;
  Buffer a = operand(t, extent(g.shape, g.a_strides), 1 + code(t), specials);
  Buffer b = operand(t, extent(g.shape, g.b_strides), 2 + code(t), specials);
  fk::Tensor b_view = fk_emu_test::view_of(b, g.shape, g.b_strides);
  Buffer b_one(t, 1);
  if (b_scalar) {
    b_one.set(0, *b_scalar);
    b_view = fk_emu_test::view_of(b_one, Dims{}, Dims{});
  }
  const int64_t out_n = extent(g.shape, g.out_strides);
  Buffer want = fk_emu_test::random_buffer(out_t, out_n, 3);
  fk::Tensor cpu =
      fk::binary_forward(op, fk_emu_test::view_of(a, g.shape, g.a_strides), b_view, alpha);
  ASSERT_EQ(cpu.dtype(), out_t);
  fk_emu_test::view_of(want, g.shape, g.out_strides).copy_(cpu);
  fkemu_test::in_both_orders([&](fkemu::Order) {
    Buffer got = fk_emu_test::random_buffer(out_t, out_n, 3);
    fk::cuda::emu::launch_binary(static_cast<int>(op), code(t), a.data(),
                                 b_scalar ? nullptr : b.data(), got.data(), g.shape.size(),
                                 g.shape.data(), g.a_strides.data(), g.b_strides.data(),
                                 g.out_strides.data(), alpha, b_scalar ? *b_scalar : 0.0, nullptr);
    if (op == BinaryOp::Div && t == DType::C64) {
      fk_emu_test::expect_close_complex<float>(got.data(), want.data(), out_n, what);
    } else if (op == BinaryOp::Div && t == DType::C128) {
      fk_emu_test::expect_close_complex<double>(got.data(), want.data(), out_n, what);
    } else {
      fk_emu_test::expect_same_elements(out_t, got.data(), want.data(), out_n, what);
    }
  });
}

const BinaryOp kAllOps[] = {BinaryOp::Add, BinaryOp::Sub,     BinaryOp::Mul,     BinaryOp::Div,
                            BinaryOp::Pow, BinaryOp::Maximum, BinaryOp::Minimum, BinaryOp::Atan2,
                            BinaryOp::Eq,  BinaryOp::Ne,      BinaryOp::Lt,      BinaryOp::Le,
                            BinaryOp::Gt,  BinaryOp::Ge};

bool takes(DType t, BinaryOp op) {
  if (t == DType::I32 || t == DType::I64)
    return op != BinaryOp::Div && op != BinaryOp::Atan2;  // integer powers are exact
  if (t == DType::C64 || t == DType::C128)
    return op <= BinaryOp::Div || op == BinaryOp::Eq || op == BinaryOp::Ne;
  return true;
}

TEST(EmulatedFkBinary, EveryOpAndDtypeOverEveryGeometryAsTheCpu) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64,
                  DType::C64, DType::C128}) {
    for (BinaryOp op : kAllOps) {
      if (!takes(t, op)) continue;
      for (const Geometry& g : geometries()) {
        // Complex products and quotients with infinite or NaN parts: the
        // CPU's std::complex follows C's Annex G (recovering infinities),
        // the kernel the plain formulas.
        const bool specials = !((op == BinaryOp::Mul || op == BinaryOp::Div) && fk::is_complex(t));
        check_binary(op, t, g, 1.0, specials);
      }
    }
  }
}

TEST(EmulatedFkBinary, AlphaScalesB) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64,
                  DType::C64, DType::C128}) {
    for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub}) {
      // The CPU multiplies a complex alpha: 0 * inf would be NaN there.
      const bool specials = !fk::is_complex(t);
      // Integer tensors take a whole alpha only.
      const double alpha = fk::is_integral(t) ? -2.0 : -2.5;
      for (const Geometry& g : geometries()) check_binary(op, t, g, alpha, specials);
    }
  }
}

TEST(EmulatedFkBinary, ComplexAddKeepsInfiniteParts) {
  // (1 + 0i) + (0 + inf i) is 1 + inf i: multiplying b by a complex alpha of
  // 1 would make its real part 0 * inf - ... = NaN.
  for (DType t : {DType::C64, DType::C128}) {
    Buffer a(t, 2), b(t, 2);
    a.set(0, 1.0, 0.0);
    b.set(0, 0.0, kInf);
    a.set(1, 2.0, 3.0);
    b.set(1, -kInf, 1.0);
    Buffer got(t, 2), want(t, 2);
    want.set(0, 1.0, kInf);
    want.set(1, -kInf, 4.0);
    const int64_t n = 2;
    fk::cuda::emu::launch_binary(static_cast<int>(BinaryOp::Add), code(t), a.data(), b.data(),
                                 got.data(), 1, &n, nullptr, nullptr, nullptr, 1.0, 0.0, nullptr);
    fk_emu_test::expect_same_elements(t, got.data(), want.data(), n, fk::name(t));
  }
}

TEST(EmulatedFkBinary, ScalarB) {
  // Values every dtype holds exactly, so the CPU's 0-dim b is the same number.
  const double scalars[] = {2.5, -3.0};
  const Geometry flat{"contiguous", Dims{300}, Dims{1}, Dims{1}, Dims{1}};
  const Geometry strided{"transposed", Dims{13, 29}, Dims{1, 13}, Dims{0, 0}, Dims{29, 1}};
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64,
                  DType::C64, DType::C128}) {
    for (BinaryOp op : {BinaryOp::Add, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Maximum,
                        BinaryOp::Pow, BinaryOp::Lt, BinaryOp::Eq}) {
      if (!takes(t, op)) continue;
      const bool specials = !fk::is_complex(t);
      for (double s : scalars) {
        for (const Geometry* g : {&flat, &strided}) check_binary(op, t, *g, 1.0, specials, &s);
      }
    }
  }
}

TEST(EmulatedFkBinary, InPlaceOutputAliasingA) {
  for (DType t : {DType::F32, DType::BF16, DType::C128}) {
    SCOPED_TRACE(fk::name(t));
    const Dims shape{17, 19};
    const Dims a_strides{1, 17}, b_strides{0, 1};
    Buffer a = operand(t, 17 * 19, 4, false);
    Buffer b = operand(t, 19, 5, false);
    fk::Tensor cpu = fk::binary_forward(BinaryOp::Mul, fk_emu_test::view_of(a, shape, a_strides),
                                        fk_emu_test::view_of(b, shape, b_strides));
    Buffer want = a;
    fk_emu_test::view_of(want, shape, a_strides).copy_(cpu);
    fkemu_test::in_both_orders([&](fkemu::Order) {
      Buffer got = a;
      fk::cuda::emu::launch_binary(static_cast<int>(BinaryOp::Mul), code(t), got.data(), b.data(),
                                   got.data(), 2, shape.data(), a_strides.data(), b_strides.data(),
                                   a_strides.data(), 1.0, 0.0, nullptr);
      fk_emu_test::expect_same_elements(t, got.data(), want.data(), got.n, "in place");
    });
  }
}

TEST(EmulatedFkBinary, ScaleMultipliesInPlace) {
  const int64_t n = 300;
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::C64, DType::C128}) {
    SCOPED_TRACE(fk::name(t));
    Buffer data = operand(t, n, 6, !fk::is_complex(t));
    const double s = 0.1;
    // The kernel multiplies in the compute type by s rounded to it; complex
    // numbers by the real s.
    Buffer want(t, n);
    for (int64_t i = 0; i < n; ++i) {
      const unsigned char* at = data.bytes() + static_cast<size_t>(i) * data.itemsize();
      switch (t) {
        case DType::F32: {
          float v;
          std::memcpy(&v, at, 4);
          want.set(i, static_cast<double>(v * static_cast<float>(s)));
          break;
        }
        case DType::F64: {
          double v;
          std::memcpy(&v, at, 8);
          want.set(i, v * s);
          break;
        }
        case DType::F16:
        case DType::BF16: {
          uint16_t h;
          std::memcpy(&h, at, 2);
          const float v =
              t == DType::F16 ? fk::half_to_float(fk::Half{h}) : fk::bf16_to_float(fk::BFloat16{h});
          want.set(i, static_cast<double>(v * static_cast<float>(s)));
          break;
        }
        case DType::C64: {
          std::complex<float> v;
          std::memcpy(&v, at, 8);
          want.set(i, v.real() * static_cast<float>(s), v.imag() * static_cast<float>(s));
          break;
        }
        default: {
          std::complex<double> v;
          std::memcpy(&v, at, 16);
          want.set(i, v.real() * s, v.imag() * s);
          break;
        }
      }
    }
    fkemu_test::in_both_orders([&](fkemu::Order) {
      Buffer got = data;
      fk::cuda::emu::launch_scale(code(t), got.data(), n, s, nullptr);
      fk_emu_test::expect_same_elements(t, got.data(), want.data(), n, "scale");
    });
  }
  std::vector<int32_t> ints(4);
  EXPECT_THROW(fk::cuda::emu::launch_scale(code(DType::I32), ints.data(), 4, 2.0, nullptr),
               fk::Error);
}

TEST(EmulatedFkBinary, WhereMovesEveryElementSize) {
  const Dims shape{6, 5, 11};
  const Dims cond_strides{0, 11, 1}, a_strides{1, 6, 30}, b_strides{11, 0, 1};
  const int64_t n = shape.numel();
  Buffer cond = fk_emu_test::random_buffer(DType::Bool, extent(shape, cond_strides), 7);
  for (DType t : {DType::Bool, DType::F16, DType::I32, DType::F64, DType::C128}) {
    SCOPED_TRACE(fk::name(t));
    Buffer a = fk_emu_test::random_buffer(t, extent(shape, a_strides), 8);
    Buffer b = fk_emu_test::random_buffer(t, extent(shape, b_strides), 9);
    Buffer want(t, n);
    const size_t es = want.itemsize();
    for (int64_t p = 0; p < n; ++p) {
      int64_t c = 0, ao = 0, bo = 0, rest = p;
      for (int d = shape.size() - 1; d >= 0; --d) {
        const int64_t i = rest % shape[d];
        rest /= shape[d];
        c += i * cond_strides[d];
        ao += i * a_strides[d];
        bo += i * b_strides[d];
      }
      const bool pick_a = cond.bytes()[c] != 0;
      std::memcpy(want.bytes() + p * es, (pick_a ? a.bytes() + ao * es : b.bytes() + bo * es), es);
    }
    fkemu_test::in_both_orders([&](fkemu::Order) {
      Buffer got(t, n);
      fk::cuda::emu::launch_where(code(t), cond.data(), a.data(), b.data(), got.data(),
                                  shape.size(), shape.data(), cond_strides.data(), a_strides.data(),
                                  b_strides.data(), nullptr);
      fk_emu_test::expect_same_elements(t, got.data(), want.data(), n, "where");
    });
  }
}

TEST(EmulatedFkBinary, RefusesOpsADtypeDoesNotTake) {
  std::vector<double> x(8);
  const int64_t n = 4;
  EXPECT_THROW(fk::cuda::emu::launch_binary(static_cast<int>(BinaryOp::Div), code(DType::I32),
                                            x.data(), x.data(), x.data(), 1, &n, nullptr, nullptr,
                                            nullptr, 1.0, 0.0, nullptr),
               fk::Error);
  EXPECT_THROW(fk::cuda::emu::launch_binary(static_cast<int>(BinaryOp::Lt), code(DType::C64),
                                            x.data(), x.data(), x.data(), 1, &n, nullptr, nullptr,
                                            nullptr, 1.0, 0.0, nullptr),
               fk::Error);
  EXPECT_THROW(fk::cuda::emu::launch_binary(static_cast<int>(BinaryOp::Add), code(DType::Bool),
                                            x.data(), x.data(), x.data(), 1, &n, nullptr, nullptr,
                                            nullptr, 1.0, 0.0, nullptr),
               fk::Error);
  EXPECT_THROW(fk::cuda::emu::launch_binary(14, code(DType::F32), x.data(), x.data(), x.data(), 1,
                                            &n, nullptr, nullptr, nullptr, 1.0, 0.0, nullptr),
               fk::Error);
}

}  // namespace
