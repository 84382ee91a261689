// reduce.cu's kernels run on the emulated device (emulated_device.h): row
// sum / prod / max / min of every dtype each takes (the two-pass path of rows
// longer than one 16K chunk included), argmax / argmin, softmax and
// log-softmax with their backward, against fk's CPU sum / prod / amax / amin /
// argmax / argmin / softmax over the same bytes, in both thread orders.
//
// Sums and products are compared bit for bit on inputs whose f64 (c128, i64)
// accumulation is exact, where the kernel's strided-then-tree order and the
// CPU's lane order cannot differ (complex products up to the sign of a zero
// part); arbitrary float sums within the two orders' rounding bound. max/min
// are exact up to the sign of a zero maximum, the arg-reductions exact;
// softmax within a few ulp (the kernel sums exps in f32, the CPU in f64).
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
#include "fk/factory.h"
#include "fk/half.h"
#include "fk/ops/copy.h"
#include "fk/ops/reduce/extremes.h"
#include "fk/ops/reduce/prod.h"
#include "fk/ops/reduce/softmax.h"
#include "fk/ops/reduce/sum.h"

// The emulated launchers this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link).
namespace fk::cuda::emu {
void launch_reduce_lastdim(int op, int dtype, const void* in, void* out, int64_t outer,
                           int64_t inner, void* stream);
int reduce_out_dtype(int op, int dtype);
void launch_argreduce_lastdim(bool is_max, int dtype, const void* in, int64_t* out, int64_t outer,
                              int64_t inner, void* stream);
void launch_softmax_lastdim(int dtype, const void* in, void* out, int64_t outer, int64_t inner,
                            bool log, void* stream);
void launch_softmax_backward_lastdim(int dtype, const void* grad, const void* out, void* grad_in,
                                     int64_t outer, int64_t inner, bool log, void* stream);
}  // namespace fk::cuda::emu

namespace {

using fk::Dims;
using fk::DType;
using fk_emu_test::Buffer;
using fk_emu_test::code;
namespace emu = fk::cuda::emu;

constexpr int64_t kChunk = 16384;  // reduce.cu's piece of a long row (its kChunk)
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const char* op_name(int op) {
  static const char* names[] = {"sum", "prod", "max", "min"};
  return names[op];
}

std::string describe(const std::string& what, DType t, int64_t outer, int64_t inner) {
  return what + " " + fk::name(t) + " [" + std::to_string(outer) + ", " + std::to_string(inner) +
         "]";
}

// Element i, exactly (every dtype's values are doubles or pairs of them).
std::complex<double> value_at(const Buffer& b, int64_t i) {
  const unsigned char* at = b.bytes() + static_cast<size_t>(i) * b.itemsize();
  auto get = [&](auto v) {
    std::memcpy(&v, at, sizeof(v));
    return v;
  };
  switch (b.dtype) {
    case DType::Bool:
      return get(uint8_t{}) != 0 ? 1.0 : 0.0;
    case DType::I32:
      return static_cast<double>(get(int32_t{}));
    case DType::I64:
      return static_cast<double>(get(int64_t{}));
    case DType::F16:
      return fk::half_to_float(get(fk::Half{}));
    case DType::BF16:
      return fk::bf16_to_float(get(fk::BFloat16{}));
    case DType::F32:
      return get(float{});
    case DType::F64:
      return get(double{});
    case DType::C64: {
      auto c = get(std::complex<float>{});
      return {c.real(), c.imag()};
    }
    case DType::C128:
      return get(std::complex<double>{});
  }
  return 0.0;
}

bool is_nan(std::complex<double> v) {
  return std::isnan(v.real()) || std::isnan(v.imag());
}

// The CPU's result copied into a buffer of its dtype.
Buffer bytes_of(const fk::Tensor& cpu) {
  Buffer b(cpu.dtype(), cpu.numel());
  if (b.n > 0)
    fk_emu_test::view_of(b, cpu.shape(), fk_emu_test::contiguous_strides(cpu.shape())).copy_(cpu);
  return b;
}

fk::Tensor rows_view(Buffer& b, int64_t outer, int64_t inner) {
  return fk_emu_test::view_of(b, Dims{outer, inner}, Dims{inner, 1});
}

fk::Tensor cpu_reduce(int op, const fk::Tensor& x) {
  switch (op) {
    case fk::cuda::kReduceSum:
      return fk::sum(x, Dims{1});
    case fk::cuda::kReduceProd:
      return fk::prod(x, Dims{1});
    case fk::cuda::kReduceMax:
      return fk::amax(x, Dims{1});
    default:
      return fk::amin(x, Dims{1});
  }
}

Buffer run_reduce(int op, Buffer& x, int64_t outer, int64_t inner) {
  const auto out_t = static_cast<DType>(emu::reduce_out_dtype(op, code(x.dtype)));
  Buffer got = fk_emu_test::random_buffer(out_t, outer, 3);  // garbage the kernel must overwrite
  emu::launch_reduce_lastdim(op, code(x.dtype), x.data(), got.data(), outer, inner, nullptr);
  return got;
}

// Values whose sums and products the f64 / c128 / i64 accumulators hold
// exactly (so any order gives the CPU's bits): sums of k / 16 with |k| below
// the dtype's significand (ints: k itself, up to 2^30, so that i32 rows
// overflow i32), all positive in row 0 (a sum far from 0); products of +-1 (+-i) with, about 32
// times a row,
// +-2, 0.5 or 1 + i (no overflow), and a zero in row 1.
Buffer exact_rows(DType t, int op, int64_t outer, int64_t inner, uint32_t seed) {
  std::mt19937 rng(seed);
  const bool integral = fk::is_integral(t);
  const double scale = integral ? 1.0 : 1.0 / 16;
  const int64_t k_max = integral           ? int64_t{1} << 30
                        : t == DType::BF16 ? 255
                        : t == DType::F16  ? 2047
                                           : 1000000;
  auto k = [&] {
    return static_cast<double>(static_cast<int64_t>(rng() % (2 * k_max + 1)) - k_max);
  };
  Buffer b(t, outer * inner);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double re = 0.0, im = 0.0;
      if (op == fk::cuda::kReduceSum) {
        re = (o == 0 ? std::abs(k()) : k()) * scale;
        im = k() * scale;
      } else {
        re = rng() % 2 ? 1.0 : -1.0;
        if (fk::is_complex(t) && rng() % 2) std::swap(re, im);
        if (static_cast<int64_t>(rng() % static_cast<uint32_t>(inner)) < 32) {
          const uint32_t pick = rng() % 3;
          if (pick == 0) re *= 2.0;
          if (pick == 1 && !integral) re *= 0.5;
          if (pick == 2 && fk::is_complex(t)) re = im = 1.0;
        }
        if (o == 1 && i == inner / 2) re = im = 0.0;
      }
      b.set(o * inner + i, re, im);
    }
  }
  return b;
}

// Element i of an integer buffer set to v (i64's extremes are not doubles).
void set_integer(Buffer& b, int64_t i, int64_t v) {
  unsigned char* at = b.bytes() + static_cast<size_t>(i) * b.itemsize();
  if (b.dtype == DType::I64) {
    std::memcpy(at, &v, sizeof(v));
  } else if (b.dtype == DType::I32) {
    const auto v32 = static_cast<int32_t>(v);
    std::memcpy(at, &v32, sizeof(v32));
  } else {
    b.set(i, static_cast<double>(v));
  }
}

// Arbitrary values (random_buffer's); for max and min, rows 1 and 2 with NaN
// and infinities (floating dtypes) or all at the dtype's largest and smallest
// value (integers and bool: min's and max's identities).
Buffer ordered_rows(DType t, int64_t outer, int64_t inner, uint32_t seed) {
  Buffer b = fk_emu_test::random_buffer(t, outer * inner, seed);
  if (fk::is_integral(t) && outer > 2) {
    const int64_t largest = t == DType::I64   ? std::numeric_limits<int64_t>::max()
                            : t == DType::I32 ? std::numeric_limits<int32_t>::max()
                                              : 1;
    const int64_t smallest = t == DType::I64   ? std::numeric_limits<int64_t>::min()
                             : t == DType::I32 ? std::numeric_limits<int32_t>::min()
                                               : 0;
    for (int64_t i = 0; i < inner; ++i) {
      set_integer(b, inner + i, largest);
      set_integer(b, 2 * inner + i, smallest);
    }
  }
  if (fk::is_floating(t) && inner > 0) {
    if (outer > 1) b.set(1 * inner + inner / 2, kNaN);
    if (outer > 2) {
      b.set(2 * inner, -kInf);
      b.set(2 * inner + inner - 1, kInf);
    }
  }
  return b;
}

// Sum / real prod bit for bit; max / min by value (equal maxima -0 and +0
// may come out either way: the kernel's tree keeps the later of equals, the
// CPU the first), and complex prod by value (an exactly zero part's sign,
// e.g. of 1 * (-1) + 0 * 0, depends on the order of the products), NaN
// matching NaN.
void check_reduce(int op, Buffer& x, int64_t outer, int64_t inner) {
  const std::string what = describe(op_name(op), x.dtype, outer, inner);
  SCOPED_TRACE(what);
  Buffer want = bytes_of(cpu_reduce(op, rows_view(x, outer, inner)));
  ASSERT_EQ(code(want.dtype), emu::reduce_out_dtype(op, code(x.dtype)));
  fkemu_test::in_both_orders([&](fkemu::Order) {
    Buffer got = run_reduce(op, x, outer, inner);
    if (op == fk::cuda::kReduceSum || (op == fk::cuda::kReduceProd && !fk::is_complex(x.dtype))) {
      fk_emu_test::expect_same_elements(want.dtype, got.data(), want.data(), outer, what);
      return;
    }
    for (int64_t o = 0; o < outer; ++o) {
      const auto g = value_at(got, o), w = value_at(want, o);
      EXPECT_TRUE(g == w || (is_nan(g) && is_nan(w)))
          << what << " row " << o << ": got " << g << ", want " << w;
    }
  });
}

constexpr int64_t kShapes[][2] = {{3, 1}, {5, 33}, {40, 7}, {4, 257}, {2, 1000}};

TEST(EmulatedFkReduce, SumOfEveryDtypeAsTheCpu) {
  for (DType t : fk_emu_test::kAllDTypes) {
    for (const auto& s : kShapes) {
      Buffer x = exact_rows(t, fk::cuda::kReduceSum, s[0], s[1], 11);
      check_reduce(fk::cuda::kReduceSum, x, s[0], s[1]);
    }
  }
}

TEST(EmulatedFkReduce, ProdOfEveryDtypeAsTheCpu) {
  for (DType t : fk_emu_test::kAllDTypes) {
    for (const auto& s : kShapes) {
      Buffer x = exact_rows(t, fk::cuda::kReduceProd, s[0], s[1], 12);
      check_reduce(fk::cuda::kReduceProd, x, s[0], s[1]);
    }
  }
}

TEST(EmulatedFkReduce, MaxAndMinOfEveryRealDtypeAsTheCpu) {
  for (DType t : fk_emu_test::kAllDTypes) {
    if (fk::is_complex(t)) continue;
    for (const auto& s : kShapes) {
      Buffer x = ordered_rows(t, s[0], s[1], 13);
      for (int op : {fk::cuda::kReduceMax, fk::cuda::kReduceMin}) check_reduce(op, x, s[0], s[1]);
    }
  }
}

// Arbitrary bf16 f32 f64 values: the two summation orders differ, both
// accumulating in f64, so each result lies within n eps_f64 sum|x| of the
// exact sum, plus half an ulp of the output type's rounding on each side.
// f16 values (2^-24 to 2^16) sum exactly in f64: bit for bit.
TEST(EmulatedFkReduce, SumOfArbitraryFloatsWithinTheOrderBound) {
  for (DType t : {DType::F16, DType::BF16, DType::F32, DType::F64}) {
    const int64_t outer = 3, inner = 700;
    const std::string what = describe("sum", t, outer, inner);
    SCOPED_TRACE(what);
    Buffer x = fk_emu_test::random_buffer(t, outer * inner, 14);
    if (t == DType::F16) {  // below 65504 in sum: finite results
      for (int64_t i = 0; i < x.n; ++i) x.set(i, value_at(x, i).real() / 64);
    }
    Buffer want = bytes_of(fk::sum(rows_view(x, outer, inner), Dims{1}));
    const double out_eps = t == DType::BF16 ? 0x1p-8 : t == DType::F32 ? 0x1p-24 : 0.0;
    fkemu_test::in_both_orders([&](fkemu::Order) {
      Buffer got = run_reduce(fk::cuda::kReduceSum, x, outer, inner);
      for (int64_t o = 0; o < outer; ++o) {
        double magnitude = 0.0;
        for (int64_t i = 0; i < inner; ++i)
          magnitude += std::abs(value_at(x, o * inner + i).real());
        const double w = value_at(want, o).real(), g = value_at(got, o).real();
        const double bound =
            t == DType::F16 ? 0.0 : 2 * inner * 0x1p-53 * magnitude + 2 * out_eps * std::abs(w);
        if (g == w) continue;  // infinities included
        EXPECT_LE(std::abs(g - w), bound)
            << what << " row " << o << ": got " << g << ", want " << w;
      }
    });
  }
}

// Rows past one chunk: pass 1 reduces 64K pieces into f64 / i64 / c128
// partials (cudaMallocAsync), pass 2 reduces each row's partials. A row of
// exactly one chunk stays one pass; one element more makes a piece of one.
TEST(EmulatedFkReduce, LongRowsThroughTwoPassesAsTheCpu) {
  struct Case {
    DType t;
    int op;
    int64_t outer, inner;
  };
  const Case cases[] = {
      {DType::F32, fk::cuda::kReduceSum, 2, 2 * kChunk + 3},
      {DType::F32, fk::cuda::kReduceSum, 1, kChunk},
      {DType::F64, fk::cuda::kReduceSum, 1, kChunk + 1},
      {DType::I32, fk::cuda::kReduceSum, 2, kChunk + 100},
      {DType::Bool, fk::cuda::kReduceSum, 1, kChunk + 1},
      {DType::I64, fk::cuda::kReduceProd, 2, kChunk + 5},
      {DType::C64, fk::cuda::kReduceProd, 2, kChunk + 7},
      {DType::BF16, fk::cuda::kReduceProd, 1, 2 * kChunk + 1},
      {DType::F16, fk::cuda::kReduceMax, 3, kChunk + 9},
      {DType::I32, fk::cuda::kReduceMin, 1, 3 * kChunk},
      {DType::Bool, fk::cuda::kReduceMax, 2, kChunk + 2},
  };
  for (const Case& c : cases) {
    const bool ordered = c.op == fk::cuda::kReduceMax || c.op == fk::cuda::kReduceMin;
    Buffer x = ordered ? ordered_rows(c.t, c.outer, c.inner, 15)
                       : exact_rows(c.t, c.op, c.outer, c.inner, 15);
    if (c.t == DType::Bool && c.op == fk::cuda::kReduceMax) {
      // One true, in the last piece of row 1: a row of falses elsewhere.
      for (int64_t i = 0; i < x.n; ++i) x.set(i, 0.0);
      x.set(c.inner + c.inner - 1, 1.0);
    }
    check_reduce(c.op, x, c.outer, c.inner);
  }
}

TEST(EmulatedFkReduce, EmptyRowsGiveTheIdentityAndNoRowsWriteNothing) {
  std::vector<double> out(3, 7.0);
  emu::launch_reduce_lastdim(fk::cuda::kReduceSum, code(DType::F64), nullptr, out.data(), 3, 0,
                             nullptr);
  EXPECT_EQ(out, std::vector<double>(3, 0.0));
  std::vector<int64_t> iout(2, 7);
  emu::launch_reduce_lastdim(fk::cuda::kReduceProd, code(DType::I32), nullptr, iout.data(), 2, 0,
                             nullptr);
  EXPECT_EQ(iout, std::vector<int64_t>(2, 1));
  std::vector<std::complex<double>> cout(2, {7.0, 7.0});
  emu::launch_reduce_lastdim(fk::cuda::kReduceProd, code(DType::C128), nullptr, cout.data(), 2, 0,
                             nullptr);
  EXPECT_EQ(cout, std::vector<std::complex<double>>(2, {1.0, 0.0}));

  std::vector<double> untouched(2, 7.0);
  const std::vector<double> x(4, 1.0);
  for (int op = fk::cuda::kReduceSum; op <= fk::cuda::kReduceMin; ++op) {
    emu::launch_reduce_lastdim(op, code(DType::F64), x.data(), untouched.data(), 0, 4, nullptr);
  }
  int64_t index = 7;
  emu::launch_argreduce_lastdim(true, code(DType::F64), x.data(), &index, 0, 4, nullptr);
  emu::launch_softmax_lastdim(code(DType::F64), x.data(), untouched.data(), 0, 2, false, nullptr);
  emu::launch_softmax_lastdim(code(DType::F64), x.data(), untouched.data(), 2, 0, true, nullptr);
  emu::launch_softmax_backward_lastdim(code(DType::F64), x.data(), x.data(), untouched.data(), 2, 0,
                                       false, nullptr);
  emu::launch_softmax_backward_lastdim(code(DType::F64), x.data(), x.data(), untouched.data(), 0, 2,
                                       true, nullptr);
  EXPECT_EQ(untouched, std::vector<double>(2, 7.0));
  EXPECT_EQ(index, 7);
}

// A row holding +inf is NaN throughout (torch's; a shift of 0 gave 0s around
// one NaN); an all -inf row is NaN; a finite row is finite.
TEST(EmulatedFkReduce, SoftmaxOfAnInfiniteRowIsNaNAsTheCpu) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> x{-1.0, inf, 0.5, -inf, -inf, -inf, 1.0, 2.0, 3.0};
  for (bool log : {false, true}) {
    std::vector<double> out(9, 0.0);
    emu::launch_softmax_lastdim(code(DType::F64), x.data(), out.data(), 3, 3, log, nullptr);
    for (int i = 0; i < 6; ++i) EXPECT_TRUE(std::isnan(out[i])) << log << " " << i;
    for (int i = 6; i < 9; ++i) EXPECT_TRUE(std::isfinite(out[i])) << log << " " << i;
    const fk::Tensor cpu = log ? fk::log_softmax(fk::from_vector(x, {3, 3}), 1)
                               : fk::softmax(fk::from_vector(x, {3, 3}), 1);
    const std::vector<double> c = cpu.to_vector<double>();
    for (int i = 0; i < 6; ++i) EXPECT_TRUE(std::isnan(c[i])) << log << " " << i;
  }
}

TEST(EmulatedFkReduce, RefusesBadOpsDtypesAndSizes) {
  std::vector<std::complex<double>> x(4), out(4);
  int64_t index[4];
  for (int op : {-1, 4}) {
    EXPECT_THROW(
        emu::launch_reduce_lastdim(op, code(DType::F32), x.data(), out.data(), 1, 2, nullptr),
        fk::Error);
  }
  for (DType t : {DType::C64, DType::C128}) {
    for (int op : {fk::cuda::kReduceMax, fk::cuda::kReduceMin}) {
      EXPECT_THROW(emu::launch_reduce_lastdim(op, code(t), x.data(), out.data(), 1, 2, nullptr),
                   fk::Error);
    }
    EXPECT_THROW(emu::launch_argreduce_lastdim(true, code(t), x.data(), index, 1, 2, nullptr),
                 fk::Error);
  }
  EXPECT_THROW(emu::launch_reduce_lastdim(fk::cuda::kReduceSum, code(DType::F32), x.data(),
                                          out.data(), -1, 2, nullptr),
               fk::Error);
  EXPECT_THROW(emu::launch_reduce_lastdim(fk::cuda::kReduceSum, code(DType::F32), x.data(),
                                          out.data(), 1, -2, nullptr),
               fk::Error);
  EXPECT_THROW(
      emu::launch_argreduce_lastdim(false, code(DType::F32), x.data(), index, 2, 0, nullptr),
      fk::Error);
  EXPECT_THROW(
      emu::launch_argreduce_lastdim(false, code(DType::F32), x.data(), index, -1, 2, nullptr),
      fk::Error);
  for (DType t : {DType::Bool, DType::I32, DType::I64, DType::C64}) {
    EXPECT_THROW(emu::launch_softmax_lastdim(code(t), x.data(), out.data(), 1, 2, false, nullptr),
                 fk::Error)
        << fk::name(t);
    EXPECT_THROW(emu::launch_softmax_backward_lastdim(code(t), x.data(), x.data(), out.data(), 1, 2,
                                                      true, nullptr),
                 fk::Error)
        << fk::name(t);
  }
  EXPECT_THROW(
      emu::launch_softmax_lastdim(code(DType::F32), x.data(), out.data(), -1, 2, false, nullptr),
      fk::Error);
}

// --- arg-reductions ----------------------------------------------------------

// Few distinct values (many ties: the first index must win), signed zeros,
// and for floating dtypes NaN (two in row 1: the first wins) and infinities.
Buffer tied_rows(DType t, int64_t outer, int64_t inner, uint32_t seed) {
  std::mt19937 rng(seed);
  Buffer b(t, outer * inner);
  for (int64_t i = 0; i < b.n; ++i) {
    const uint32_t r = rng() % 8;
    b.set(i, r == 7 ? -0.0 : static_cast<double>(r % 4) - 1.5);
  }
  if (fk::is_floating(t) && inner > 2) {
    if (outer > 1) {
      b.set(inner + inner - 1, kNaN);
      b.set(inner + inner / 2, kNaN);
    }
    if (outer > 2) {
      b.set(2 * inner + 1, kInf);
      b.set(2 * inner + inner - 1, -kInf);
    }
  }
  return b;
}

TEST(EmulatedFkReduce, ArgmaxAndArgminOfEveryRealDtypeAsTheCpu) {
  for (DType t : fk_emu_test::kAllDTypes) {
    if (fk::is_complex(t)) continue;
    for (const auto& s : kShapes) {
      const int64_t outer = s[0], inner = s[1];
      Buffer x = tied_rows(t, outer, inner, 16 + static_cast<uint32_t>(inner));
      for (bool is_max : {true, false}) {
        const std::string what = describe(is_max ? "argmax" : "argmin", t, outer, inner);
        SCOPED_TRACE(what);
        fk::Tensor v = rows_view(x, outer, inner);
        Buffer want = bytes_of(is_max ? fk::argmax(v, 1) : fk::argmin(v, 1));
        fkemu_test::in_both_orders([&](fkemu::Order) {
          std::vector<int64_t> got(static_cast<size_t>(outer), -7);
          emu::launch_argreduce_lastdim(is_max, code(t), x.data(), got.data(), outer, inner,
                                        nullptr);
          fk_emu_test::expect_same_elements(DType::I64, got.data(), want.data(), outer, what);
        });
      }
    }
  }
}

// --- softmax -----------------------------------------------------------------

// Relative tolerance of a softmax result: the kernel sums exps in f32 (f64 for
// f64) over a stride-then-tree order, the CPU in f64 (f64) over its lanes,
// and they scale by 1 / sum (CPU: rounded from f64) and subtract the log-sum
// differently; a few ulp of the compute type, or one ulp of f16 / bf16 output.
double softmax_tolerance(DType t) {
  switch (t) {
    case DType::F16:
      return 0x1p-10;
    case DType::BF16:
      return 0x1p-7;
    case DType::F32:
      return 64 * 0x1p-24;
    default:
      return 64 * 0x1p-53;
  }
}

// got within tol * (|want| + floor[i]) of want; NaN and infinities equal.
void expect_close(const Buffer& got, const Buffer& want, double tol,
                  const std::vector<double>& floor, const std::string& what) {
  int64_t wrong = 0;
  for (int64_t i = 0; i < want.n; ++i) {
    const double g = value_at(got, i).real(), w = value_at(want, i).real();
    bool ok = g == w || (std::isnan(g) && std::isnan(w));
    if (!ok && std::isfinite(g) && std::isfinite(w))
      ok = std::abs(g - w) <= tol * (std::abs(w) + floor[static_cast<size_t>(i)]);
    if (!ok && wrong++ < 5) ADD_FAILURE() << what << " [" << i << "]: got " << g << ", want " << w;
  }
  EXPECT_EQ(wrong, 0) << what << ": elements outside the tolerance";
}

// Values in [-12, 12]; row 1 with -inf entries, row 2 all -inf, row 3 a NaN,
// row 4 a +inf, rows 5 and 6 near -1000 and +1000 (exp without the shift
// would underflow / overflow), when there are such rows.
Buffer softmax_rows(DType t, int64_t outer, int64_t inner, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> value(-12.0, 12.0);
  Buffer b(t, outer * inner);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double v = value(rng);
      if (o == 1 && i % 3 == 1) v = -kInf;
      if (o == 2) v = -kInf;
      if (o == 3 && i == inner / 2) v = kNaN;
      if (o == 4 && i == inner - 1) v = kInf;
      if (o == 5) v -= 1000.0;
      if (o == 6) v += 1000.0;
      b.set(o * inner + i, v);
    }
  }
  return b;
}

const int64_t kSoftmaxShapes[][2] = {{7, 1}, {7, 33}, {40, 7}, {7, 257}, {2, 1000}};

TEST(EmulatedFkReduce, SoftmaxAndLogSoftmaxAsTheCpu) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    for (const auto& s : kSoftmaxShapes) {
      const int64_t outer = s[0], inner = s[1];
      Buffer x = softmax_rows(t, outer, inner, 17 + static_cast<uint32_t>(inner));
      for (bool log : {false, true}) {
        const std::string what = describe(log ? "log_softmax" : "softmax", t, outer, inner);
        SCOPED_TRACE(what);
        fk::Tensor v = rows_view(x, outer, inner);
        Buffer want = bytes_of(log ? fk::log_softmax(v, 1) : fk::softmax(v, 1));
        // log-softmax subtracts numbers up to |x - max| + log n (the CPU: up
        // to |x|): its absolute error scales with them, not with the result.
        std::vector<double> floor(static_cast<size_t>(want.n), 0x1p-14);
        for (int64_t i = 0; log && i < want.n; ++i) {
          const double xi = value_at(x, i).real();
          floor[static_cast<size_t>(i)] = 30.0 + (std::isfinite(xi) ? std::abs(xi) : 0.0);
        }
        fkemu_test::in_both_orders([&](fkemu::Order) {
          Buffer got = fk_emu_test::random_buffer(t, want.n, 3);
          emu::launch_softmax_lastdim(code(t), x.data(), got.data(), outer, inner, log, nullptr);
          expect_close(got, want, softmax_tolerance(t), floor, what);
        });
      }
    }
  }
}

// The backward from the CPU's forward output y and a gradient in [-1, 1]. The
// row's dot (sum g y, or sum g) is summed in f32 by the kernel, in f64 by the
// CPU: the difference scales with sum |g y| (sum |g|), which the result, a
// difference with that dot, can be much smaller than. f16 / bf16 go through
// the CPU's f32 backward (the CPU's takes f32 and f64).
TEST(EmulatedFkReduce, SoftmaxBackwardAsTheCpu) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    const DType ct = t == DType::F64 ? DType::F64 : DType::F32;
    for (const auto& s : kSoftmaxShapes) {
      const int64_t outer = s[0], inner = s[1];
      for (bool log : {false, true}) {
        const std::string what =
            describe(log ? "log_softmax_backward" : "softmax_backward", t, outer, inner);
        SCOPED_TRACE(what);
        Buffer x = fk_emu_test::random_buffer(DType::F64, outer * inner, 18);
        for (int64_t i = 0; i < x.n; ++i) x.set(i, std::fmod(value_at(x, i).real(), 8.0));
        fk::Tensor xv = rows_view(x, outer, inner).to(t);
        Buffer y = bytes_of(log ? fk::log_softmax(xv, 1) : fk::softmax(xv, 1));
        Buffer g = fk_emu_test::random_buffer(DType::F64, outer * inner, 19);
        for (int64_t i = 0; i < g.n; ++i) g.set(i, std::fmod(value_at(g, i).real(), 1.0));
        Buffer gt = bytes_of(rows_view(g, outer, inner).to(t));
        fk::Tensor yc = rows_view(y, outer, inner).to(ct), gc = rows_view(gt, outer, inner).to(ct);
        Buffer want = bytes_of(
            (log ? fk::log_softmax_backward(gc, yc, 1) : fk::softmax_backward(gc, yc, 1)).to(t));
        std::vector<double> floor(static_cast<size_t>(want.n));
        for (int64_t o = 0; o < outer; ++o) {
          double dot = 0.0;
          for (int64_t i = 0; i < inner; ++i) {
            const double gi = value_at(gt, o * inner + i).real(),
                         yi = value_at(y, o * inner + i).real();
            dot += std::abs(log ? gi : gi * yi);
          }
          for (int64_t i = 0; i < inner; ++i) {
            const double gi = value_at(gt, o * inner + i).real(),
                         yi = value_at(y, o * inner + i).real();
            floor[static_cast<size_t>(o * inner + i)] =
                log ? std::abs(gi) + std::exp(yi) * dot : std::abs(yi) * (std::abs(gi) + dot);
          }
        }
        fkemu_test::in_both_orders([&](fkemu::Order) {
          Buffer got = fk_emu_test::random_buffer(t, want.n, 3);
          emu::launch_softmax_backward_lastdim(code(t), gt.data(), y.data(), got.data(), outer,
                                               inner, log, nullptr);
          expect_close(got, want, softmax_tolerance(t), floor, what);
        });
      }
    }
  }
}

}  // namespace
