// copy.cu's kernels run on the emulated device (emulated_device.h): every one
// of the 81 dtype conversions, NaN/inf/overflow/subnormal values into the
// floating dtypes, strided same-dtype copies of every element size (1 to 16
// bytes) and converting ones over geometries make_geometry cannot merge
// (transposes, steps, padding, broadcast and expanded dims, 8 dims, a scalar,
// empty shapes), and contiguous and strided fills; each against fk's CPU
// copy_ / fill_ over the same bytes, bit for bit (any NaN matches any NaN),
// in both thread orders.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/fk/emulated_fk_test_util.h"
#include "fk/cuda/kernels.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/copy.h"

// The emulated launchers this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link).
namespace fk::cuda::emu {
void launch_fill(int dtype, void* out, int64_t n, double re, double im, void* stream);
void launch_fill_strided(int dtype, void* out, int ndim, const int64_t* shape,
                         const int64_t* strides, double re, double im, void* stream);
void launch_copy_strided(int src_dtype, const void* src, const int64_t* src_strides, int dst_dtype,
                         void* dst, const int64_t* dst_strides, int ndim, const int64_t* shape,
                         void* stream);
void launch_convert(int src_dtype, const void* src, int dst_dtype, void* dst, int64_t n,
                    void* stream);
}  // namespace fk::cuda::emu

namespace {

using fk::DType;
using fk_emu_test::Buffer;
using fk_emu_test::code;

std::string pair_name(DType from, DType to) {
  return std::string(fk::name(from)) + " -> " + fk::name(to);
}

TEST(EmulatedFkCopy, EveryDtypePairConvertsAsTheCpu) {
  const int64_t n = 300;  // one full block of 256 and a partial one
  for (DType from : fk_emu_test::kAllDTypes) {
    Buffer src = fk_emu_test::random_buffer(from, n, 7 + code(from));
    for (DType to : fk_emu_test::kAllDTypes) {
      SCOPED_TRACE(pair_name(from, to));
      Buffer want = fk_emu_test::random_buffer(to, n, 99);
      fk_emu_test::view_of(want).copy_(fk_emu_test::view_of(src));
      fkemu_test::in_both_orders([&](fkemu::Order) {
        Buffer got = fk_emu_test::random_buffer(to, n, 99);
        fk::cuda::emu::launch_convert(code(from), src.data(), code(to), got.data(), n, nullptr);
        fk_emu_test::expect_same_elements(to, got.data(), want.data(), n, pair_name(from, to));
      });
    }
  }
}

// src (n elements) converted to `to` on the device: the CPU's bytes.
void expect_converts_as_the_cpu(Buffer& src, DType to, int64_t n) {
  const DType from = src.dtype;
  SCOPED_TRACE(pair_name(from, to));
  Buffer want(to, n);
  fk_emu_test::view_of(want).copy_(fk_emu_test::view_of(src));
  fkemu_test::in_both_orders([&](fkemu::Order) {
    Buffer got(to, n);
    fk::cuda::emu::launch_convert(code(from), src.data(), code(to), got.data(), n, nullptr);
    fk_emu_test::expect_same_elements(to, got.data(), want.data(), n, pair_name(from, to));
  });
}

TEST(EmulatedFkCopy, SpecialValuesIntoFloatingDtypesAndBool) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // NaN, infinities, signed zeros, f16's overflow (65520 rounds to inf) and
  // largest value, f16 and f32 subnormals and underflow, f64 past f32's range,
  // bf16's and f16's round-to-even ties.
  const std::vector<double> values = {
      nan, -nan, inf, -inf, 0.0, -0.0, 65504, 65520, -70000, 5.96e-8, 2.9e-8, 1e-40, -1e-300, 1e300,
      -3.5e38, 1.00390625, 1.01171875, 1.0 + std::ldexp(1.0, -11), 2049.0, -0.1, 16777217.0,
      0.333333333333333,
      // just past a half tie: f64 -> f32 -> half to nearest
      // twice fell back to the tie's even side
      1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40), 2049.0 + std::ldexp(1.0, -30),
      -(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)),
      std::ldexp(1.0, -30) * (1.0 + std::ldexp(1.0, -45))};
  const int64_t n = static_cast<int64_t>(values.size());
  const DType floating[] = {DType::F16, DType::BF16, DType::F32,
                            DType::F64, DType::C64,  DType::C128};
  for (DType from : floating) {
    Buffer src(from, n);
    for (int64_t i = 0; i < n; ++i)
      src.set(i, values[static_cast<size_t>(i)], values[static_cast<size_t>(n - 1 - i)]);
    for (DType to :
         {DType::Bool, DType::F16, DType::BF16, DType::F32, DType::F64, DType::C64, DType::C128}) {
      expect_converts_as_the_cpu(src, to, n);
    }
  }
}

// Integers past f32's 24 bits into f16/bf16, rounded once (as the CPU).
TEST(EmulatedFkCopy, WideIntegersRoundOnceIntoHalves) {
  const std::vector<int64_t> values = {(int64_t{1} << 24) + (1 << 16) + 1,
                                       -((int64_t{1} << 24) + (1 << 16) + 1),
                                       (int64_t{1} << 60) + (int64_t{1} << 52) + 1,
                                       std::numeric_limits<int64_t>::min(),
                                       2049,
                                       -2051,
                                       0};
  const int64_t n = static_cast<int64_t>(values.size());
  for (DType from : {DType::I64, DType::I32}) {
    Buffer src(from, n);
    for (int64_t i = 0; i < n; ++i) {  // the bits themselves (a double would round them)
      const int64_t v = values[static_cast<size_t>(i)];
      const auto v32 = static_cast<int32_t>(v);  // the low 32 bits, for i32
      std::memcpy(src.bytes() + i * static_cast<int64_t>(src.itemsize()),
                  from == DType::I64 ? static_cast<const void*>(&v) : &v32, src.itemsize());
    }
    for (DType to : {DType::F16, DType::BF16}) {
      expect_converts_as_the_cpu(src, to, n);
    }
  }
}

// One strided copy: dst[dst_offset + p . dst_strides] = src[src_offset + p . src_strides].
struct StridedCase {
  const char* name;
  fk::Dims shape, src_strides;
  int64_t src_offset;
  fk::Dims dst_strides;
  int64_t dst_offset;
};

// Elements a view reaches, plus its offset (at least one).
int64_t extent(const fk::Dims& shape, const fk::Dims& strides, int64_t offset) {
  int64_t last = offset;
  for (int d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return offset + 1;
    last += (shape[d] - 1) * strides[d];
  }
  return last + 1;
}

std::vector<StridedCase> strided_cases() {
  using fk::Dims;
  return {
      // A transposed source, then a transposed destination: no dim merges.
      {"transposed source", Dims{37, 41}, Dims{1, 37}, 0, Dims{41, 1}, 0},
      {"transposed destination", Dims{19, 23}, Dims{23, 1}, 0, Dims{1, 19}, 0},
      // x[1:6, :7, ::2] of a [6, 8, 20] array.
      {"sliced with a step", Dims{5, 7, 10}, Dims{160, 20, 2}, 160, Dims{70, 10, 1}, 0},
      // Rows padded to 40: the inner two dims merge, the outer cannot.
      {"padded outer dim", Dims{4, 5, 6}, Dims{40, 6, 1}, 3, Dims{30, 6, 1}, 0},
      // Destination rows padded to 16: the gaps keep their old values.
      {"padded destination", Dims{10, 13}, Dims{13, 1}, 0, Dims{16, 1}, 5},
      {"broadcast row", Dims{33, 29}, Dims{0, 1}, 2, Dims{29, 1}, 0},
      {"broadcast column", Dims{29, 33}, Dims{1, 0}, 0, Dims{33, 1}, 0},
      // Size-1 dims with arbitrary strides, and an expanded dim.
      {"expanded with unit dims", Dims{3, 1, 4, 1, 5}, Dims{5, 999, 0, 7, 1}, 1,
       Dims{20, 20, 5, 5, 1}, 0},
      // Eight dims, the source's order reversed (a full permutation).
      {"eight dims permuted", Dims{2, 3, 2, 3, 2, 3, 2, 3}, Dims{1, 2, 6, 12, 36, 72, 216, 432}, 0,
       Dims{648, 216, 108, 36, 18, 6, 3, 1}, 0},
      {"one strided dim past a block", Dims{257}, Dims{3}, 1, Dims{1}, 0},
      {"contiguous", Dims{300}, Dims{1}, 0, Dims{1}, 0},
      {"contiguous with offsets", Dims{6, 50}, Dims{50, 1}, 4, Dims{50, 1}, 9},
      {"scalar", Dims{}, Dims{}, 3, Dims{}, 2},
      {"empty", Dims{4, 0, 3}, Dims{0, 3, 1}, 0, Dims{3, 3, 1}, 0},
  };
}

void check_strided(DType from, DType to, const StridedCase& c) {
  SCOPED_TRACE(std::string(c.name) + ", " + pair_name(from, to));
  const int64_t src_n = extent(c.shape, c.src_strides, c.src_offset);
  const int64_t dst_n = extent(c.shape, c.dst_strides, c.dst_offset);
  Buffer src = fk_emu_test::random_buffer(from, src_n, 3);
  Buffer want = fk_emu_test::random_buffer(to, dst_n, 4);
  fk_emu_test::view_of(want, c.shape, c.dst_strides, c.dst_offset)
      .copy_(fk_emu_test::view_of(src, c.shape, c.src_strides, c.src_offset));
  fkemu_test::in_both_orders([&](fkemu::Order) {
    Buffer got = fk_emu_test::random_buffer(to, dst_n, 4);
    fk::cuda::emu::launch_copy_strided(
        code(from), src.bytes() + c.src_offset * static_cast<int64_t>(src.itemsize()),
        c.src_strides.data(), code(to),
        got.bytes() + c.dst_offset * static_cast<int64_t>(got.itemsize()), c.dst_strides.data(),
        c.shape.size(), c.shape.data(), nullptr);
    fk_emu_test::expect_same_elements(to, got.data(), want.data(), dst_n, c.name);
  });
}

TEST(EmulatedFkCopy, StridedSameDtypeCopiesOfEveryElementSize) {
  for (const StridedCase& c : strided_cases()) {
    for (DType t : {DType::Bool, DType::BF16, DType::I32, DType::F64, DType::C128})
      check_strided(t, t, c);
  }
}

TEST(EmulatedFkCopy, StridedConvertingCopies) {
  const std::pair<DType, DType> pairs[] = {{DType::F32, DType::F16},  {DType::C128, DType::C64},
                                           {DType::I32, DType::F64},  {DType::BF16, DType::F32},
                                           {DType::C64, DType::Bool}, {DType::F64, DType::I64}};
  for (const StridedCase& c : strided_cases()) {
    for (auto [from, to] : pairs) check_strided(from, to, c);
  }
}

TEST(EmulatedFkCopy, NullStridesAreContiguous) {
  const fk::Dims shape{7, 3, 11};
  Buffer src = fk_emu_test::random_buffer(DType::F64, shape.numel(), 5);
  Buffer want = fk_emu_test::random_buffer(DType::BF16, shape.numel(), 6);
  const fk::Dims strides = fk_emu_test::contiguous_strides(shape);
  fk_emu_test::view_of(want, shape, strides).copy_(fk_emu_test::view_of(src, shape, strides));
  for (bool null_src : {false, true}) {
    Buffer got = fk_emu_test::random_buffer(DType::BF16, shape.numel(), 6);
    fk::cuda::emu::launch_copy_strided(
        code(DType::F64), src.data(), null_src ? nullptr : strides.data(), code(DType::BF16),
        got.data(), null_src ? strides.data() : nullptr, 3, shape.data(), nullptr);
    fk_emu_test::expect_same_elements(DType::BF16, got.data(), want.data(), shape.numel(),
                                      null_src ? "null source strides" : "null dest strides");
  }
}

TEST(EmulatedFkCopy, FillsEveryDtypeAsTheCpu) {
  const int64_t n = 300;
  // (0, 0) takes the memset path; -0.0 is not zero bytes for the floating
  // dtypes; 2.75 truncates for the integers; -6e4 is near f16's largest.
  const std::complex<double> values[] = {{2.75, -1.5}, {0.0, 0.0}, {-0.0, 0.0}, {-6e4, 3.0}};
  for (DType t : fk_emu_test::kAllDTypes) {
    for (std::complex<double> v : values) {
      // A real tensor takes a real value (fill_ refuses an imaginary part;
      // the launcher reads re only, kernels.h).
      if (!fk::is_complex(t)) v = {v.real(), 0.0};
      SCOPED_TRACE(std::string(fk::name(t)) + " fill " + std::to_string(v.real()));
      Buffer want = fk_emu_test::random_buffer(t, n, 8);
      fk::Tensor view = fk_emu_test::view_of(want);
      fk::fill_(view, v);
      fkemu_test::in_both_orders([&](fkemu::Order) {
        Buffer got = fk_emu_test::random_buffer(t, n, 8);
        fk::cuda::emu::launch_fill(code(t), got.data(), n, v.real(), v.imag(), nullptr);
        fk_emu_test::expect_same_elements(t, got.data(), want.data(), n, "fill");
      });
    }
  }
}

TEST(EmulatedFkCopy, StridedFillsLeaveTheGaps) {
  struct FillCase {
    const char* name;
    fk::Dims shape, strides;
    int64_t offset;
  };
  const FillCase cases[] = {
      {"padded rows", fk::Dims{7, 45}, fk::Dims{64, 1}, 3},
      {"every other element", fk::Dims{300}, fk::Dims{2}, 1},
      {"transposed with a unit dim", fk::Dims{3, 1, 4}, fk::Dims{1, 5, 3}, 0},
      {"contiguous", fk::Dims{2, 150}, fk::Dims{150, 1}, 0},
      {"empty", fk::Dims{0, 5}, fk::Dims{5, 1}, 0},
  };
  for (const FillCase& c : cases) {
    for (DType t : {DType::Bool, DType::F16, DType::I32, DType::F64, DType::C128}) {
      for (double re : {0.0, -3.25}) {
        SCOPED_TRACE(std::string(c.name) + ", " + fk::name(t) + " fill " + std::to_string(re));
        const int64_t n = extent(c.shape, c.strides, c.offset);
        Buffer want = fk_emu_test::random_buffer(t, n, 9);
        fk::Tensor view = fk_emu_test::view_of(want, c.shape, c.strides, c.offset);
        fk::fill_(view, re);
        fkemu_test::in_both_orders([&](fkemu::Order) {
          Buffer got = fk_emu_test::random_buffer(t, n, 9);
          fk::cuda::emu::launch_fill_strided(
              code(t), got.bytes() + c.offset * static_cast<int64_t>(got.itemsize()),
              c.shape.size(), c.shape.data(), c.strides.data(), re, 0.0, nullptr);
          fk_emu_test::expect_same_elements(t, got.data(), want.data(), n, c.name);
        });
      }
    }
  }
}

TEST(EmulatedFkCopy, BadArgumentsThrowBeforeAnyLaunch) {
  std::vector<float> a(8), b(8);
  const int64_t shape[2] = {2, 4};
  const int64_t negative[2] = {4, -1};
  EXPECT_THROW(
      fk::cuda::emu::launch_copy_strided(code(DType::F32), a.data(), negative, code(DType::F32),
                                         b.data(), nullptr, 2, shape, nullptr),
      fk::Error);
  EXPECT_THROW(fk::cuda::emu::launch_convert(9, a.data(), code(DType::F32), b.data(), 8, nullptr),
               fk::Error);
  EXPECT_THROW(fk::cuda::emu::launch_convert(code(DType::F32), a.data(), -1, b.data(), 8, nullptr),
               fk::Error);
  EXPECT_THROW(fk::cuda::emu::launch_fill(9, a.data(), 8, 1.0, 0.0, nullptr), fk::Error);
  const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 8};
  EXPECT_THROW(fk::cuda::emu::launch_fill_strided(code(DType::F32), a.data(), 9, nine, nullptr, 1.0,
                                                  0.0, nullptr),
               fk::Error);
}

}  // namespace
