// implicit_conv_mma.cu's tensor-core tiles on the emulated device, WMMA and
// cp.async through the stand-ins in tests/cuda_emu/include (which say what
// they model). Each product runs in both thread orders, with WMMA's warp
// barriers and without (they keep the warps in step, see mma.h), against a
// plain host loop in double: bit for bit where every product and partial
// sum is exact (small dyadic operands: any order of the sum gives the same
// f32), else within the error the operands' precision allows. TF32's
// rounding of f32 operands is pinned down where one product per output
// makes the result exact, and the tiles agree with implicit_conv.cu's FMA
// tiles on the same problem.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>
// The emulator's stand-in (tests/cuda_emu/include), for its switch of warp barriers.
#include <mma.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "cuda_emu/minkowski/device_pairs.h"
#include "fk/cuda/kernels.h"
#include "fk/error.h"
#include "minkowski/cuda/kernels.h"

// The emulated launchers this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link).
namespace minkowski::cuda::emu {
void launch_implicit_conv(int dtype, const ImplicitConvArgs& args, void* stream);
void launch_implicit_conv_mma(int dtype, const ImplicitConvArgs& args, void* stream);
bool implicit_mma_supported(int device);
}  // namespace minkowski::cuda::emu

namespace mc = minkowski::cuda;

using fkemu_test::DevicePairs;
using fkemu_test::dtype_code;
using fkemu_test::in_both_orders;
using fkemu_test::narrow;
using fkemu_test::order_name;
using fkemu_test::random_pairs;
using fkemu_test::row_index;
using fkemu_test::RowIndex;
using fkemu_test::widen;

namespace {

// check(order) in both thread orders, with WMMA's warp barriers and without.
template <typename F>
void in_every_schedule(F&& check) {
  for (bool barriers : {true, false}) {
    fkemu::set_wmma_barriers(barriers);
    SCOPED_TRACE(barriers ? "WMMA calls at warp barriers" : "WMMA calls without warp barriers");
    in_both_orders(check);
  }
  fkemu::set_wmma_barriers(true);
}

// How the operands' values are drawn.
enum class Values {
  kUniform,  // uniform in [-1, 1), rounded to S
  kDyadic,   // multiples of 1/16 in [-4, 4]: 7 significant bits at most, so
             // exact in TF32, f16 and bf16, every product and sum of this
             // size exact in f32
};

// One product (forward, or input gradient when `transposed`) as the caller
// (implicit_conv.cpp) sets it up: rows ordered by their offset masks, W
// K x C_in x C_out (W_k^T for the input gradient), 16-byte chunks where
// the pointers and row lengths allow.
template <typename S>
struct Problem {
  int64_t rows = 0, src_rows = 0, inner = 0, cols = 0, volume = 0;
  int64_t w_k = 0, w_c = 0, w_n = 0;
  bool transposed = false;
  RowIndex index;
  std::vector<int64_t> offset_begin;
  std::vector<int32_t> other, order;
  std::vector<uint64_t> mask;
  std::vector<S> src, w;

  int offset_of(int32_t p) const {
    int k = 0;
    while (offset_begin[static_cast<size_t>(k + 1)] <= p) ++k;
    return k;
  }

  mc::ImplicitConvArgs args(void* dst) const {
    mc::ImplicitConvArgs a{};
    a.src = src.data();
    a.inner = inner;
    a.w = w.data();
    a.w_k = w_k;
    a.w_c = w_c;
    a.w_n = w_n;
    a.cols = cols;
    a.order = order.data();
    a.begin = index.begin.data();
    a.pair = index.pair.data();
    a.other = other.data();
    a.mask = mask.data();
    a.rows = rows;
    a.dst = dst;
    a.transposed = transposed;
    const int64_t chunk = 16 / static_cast<int64_t>(sizeof(S));
    auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    a.vec_src = aligned(a.src) && inner % chunk == 0;
    a.vec_w = aligned(a.w) && (transposed ? inner : cols) % chunk == 0;
    return a;
  }
};

template <typename S>
S draw(Values values, std::mt19937& rng) {
  if (values == Values::kDyadic)
    return narrow<S>(std::uniform_int_distribution<int>(-64, 64)(rng) / 16.0);
  return narrow<S>(std::uniform_real_distribution<double>(-1, 1)(rng));
}

template <typename S>
Problem<S> make_problem(const DevicePairs& m, int64_t cin, int64_t cout, bool transposed,
                        Values values, uint32_t seed) {
  Problem<S> p;
  p.transposed = transposed;
  p.rows = transposed ? m.n_in : m.n_out;
  p.src_rows = transposed ? m.n_out : m.n_in;
  p.inner = transposed ? cout : cin;
  p.cols = transposed ? cin : cout;
  p.volume = m.volume;
  p.w_k = cin * cout;
  p.w_c = transposed ? 1 : cout;  // W_k^T: element (c, n) is W_k[n, c]
  p.w_n = transposed ? cout : 1;
  p.offset_begin = m.offset_begin;
  p.index = row_index(transposed ? m.in_rows : m.out_rows, p.rows);
  p.other = transposed ? m.out_rows : m.in_rows;
  p.mask.assign(static_cast<size_t>(p.rows), 0);
  for (int64_t r = 0; r < p.rows; ++r)
    for (int32_t e = p.index.begin[static_cast<size_t>(r)];
         e < p.index.begin[static_cast<size_t>(r + 1)]; ++e)
      p.mask[static_cast<size_t>(r)] |= uint64_t{1}
                                        << p.offset_of(p.index.pair[static_cast<size_t>(e)]);
  p.order.resize(static_cast<size_t>(p.rows));
  std::iota(p.order.begin(), p.order.end(), 0);
  std::stable_sort(p.order.begin(), p.order.end(), [&](int32_t a, int32_t b) {
    return p.mask[static_cast<size_t>(a)] < p.mask[static_cast<size_t>(b)];
  });
  std::mt19937 rng(seed);
  p.src.resize(static_cast<size_t>(p.src_rows * p.inner));
  p.w.resize(static_cast<size_t>(m.volume * cin * cout));
  for (S& v : p.src) v = draw<S>(values, rng);
  for (S& v : p.w) v = draw<S>(values, rng);
  return p;
}

// The product in double, from the operands as stored (`operand` maps each
// one first), and the sum of the terms' magnitudes (for error bounds).
struct Reference {
  std::vector<double> value, magnitude;
  int64_t terms = 0;  // the most terms of one output
};
template <typename S, typename Operand>
Reference reference(const Problem<S>& p, Operand operand) {
  Reference ref;
  ref.value.assign(static_cast<size_t>(p.rows * p.cols), 0.0);
  ref.magnitude = ref.value;
  for (int64_t r = 0; r < p.rows; ++r) {
    const int32_t e0 = p.index.begin[static_cast<size_t>(r)],
                  e1 = p.index.begin[static_cast<size_t>(r + 1)];
    ref.terms = std::max(ref.terms, (e1 - e0) * p.inner);
    for (int64_t n = 0; n < p.cols; ++n) {
      double sum = 0, magnitude = 0;
      for (int32_t e = e0; e < e1; ++e) {
        const int32_t q = p.index.pair[static_cast<size_t>(e)];
        const int64_t k = p.offset_of(q), i = p.other[static_cast<size_t>(q)];
        for (int64_t c = 0; c < p.inner; ++c) {
          const double t =
              operand(static_cast<double>(widen(p.src[static_cast<size_t>(i * p.inner + c)]))) *
              operand(static_cast<double>(
                  widen(p.w[static_cast<size_t>(k * p.w_k + c * p.w_c + n * p.w_n)])));
          sum += t;
          magnitude += std::abs(t);
        }
      }
      ref.value[static_cast<size_t>(r * p.cols + n)] = sum;
      ref.magnitude[static_cast<size_t>(r * p.cols + n)] = magnitude;
    }
  }
  return ref;
}
template <typename S>
Reference reference(const Problem<S>& p) {
  return reference(p, [](double v) { return v; });
}

// The tiles' output, every element poisoned first (each must be written).
template <typename S>
std::vector<S> run_mma(const Problem<S>& p) {
  std::vector<S> got(static_cast<size_t>(p.rows * p.cols), narrow<S>(NAN));
  mc::emu::launch_implicit_conv_mma(dtype_code<S>(), p.args(got.data()), nullptr);
  return got;
}

// The unit roundoff of S's significand (TF32's for f32 operands, which the
// tensor cores multiply as TF32), and of S as the output is stored.
template <typename S>
double operand_roundoff() {
  return std::is_same_v<S, float> ? 0x1p-11 : 0.0;  // f16/bf16 operands are exact
}
template <typename S>
double output_roundoff() {
  if constexpr (std::is_same_v<S, __half>)
    return 0x1p-11;
  else if constexpr (std::is_same_v<S, __nv_bfloat16>)
    return 0x1p-8;
  else
    return 0x1p-24;
}

// Every S as float (exact, and one to one but for NaN payloads): what the
// bitwise comparisons print.
template <typename S>
std::vector<float> as_floats(const std::vector<S>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<float>(widen(v[i]));
  return out;
}

std::string shape(int64_t rows, int64_t inner, int64_t cols, bool transposed) {
  return std::string(transposed ? "input gradient" : "forward") + ", rows " + std::to_string(rows) +
         ", inner " + std::to_string(inner) + ", cols " + std::to_string(cols);
}

// Uniform operands: within the error TF32 operands (two roundings of 2^-11
// each per product), f32 sums (one of 2^-24 per term) and the output's one
// rounding allow; every schedule gives the same bits.
template <typename S>
void check_within_precision(const DevicePairs& m, int64_t cin, int64_t cout, bool transposed,
                            uint32_t seed) {
  const Problem<S> p = make_problem<S>(m, cin, cout, transposed, Values::kUniform, seed);
  const Reference ref = reference(p);
  const std::string what = shape(p.rows, p.inner, p.cols, transposed);
  std::vector<S> first;
  in_every_schedule([&](fkemu::Order o) {
    const std::vector<S> got = run_mma(p);
    int64_t wrong = 0;
    for (size_t e = 0; e < got.size(); ++e) {
      const double tol =
          (2.5 * operand_roundoff<S>() + static_cast<double>(ref.terms + 1) * 0x1p-24) *
              ref.magnitude[e] +
          output_roundoff<S>() * std::abs(ref.value[e]) + 1e-7;
      const double g = static_cast<double>(widen(got[e]));
      if (!(std::abs(g - ref.value[e]) <= tol) && wrong++ < 5)
        ADD_FAILURE() << what << ": row " << e / static_cast<size_t>(p.cols) << " channel "
                      << e % static_cast<size_t>(p.cols) << " is " << g << ", want " << ref.value[e]
                      << " within " << tol;
    }
    EXPECT_EQ(wrong, 0) << what;
    if (first.empty())
      first = got;
    else
      fkemu_test::expect_same_bits(as_floats(got), as_floats(first), p.cols,
                                   what + ": " + order_name(o) + " vs the first schedule");
  });
}

// Dyadic operands: the exact sum, rounded once to S, bit for bit.
template <typename S>
void check_exact(const DevicePairs& m, int64_t cin, int64_t cout, bool transposed, uint32_t seed) {
  const Problem<S> p = make_problem<S>(m, cin, cout, transposed, Values::kDyadic, seed);
  const Reference ref = reference(p);
  std::vector<S> want(ref.value.size());
  for (size_t e = 0; e < want.size(); ++e) want[e] = narrow<S>(ref.value[e]);
  const std::string what = shape(p.rows, p.inner, p.cols, transposed);
  in_every_schedule([&](fkemu::Order) {
    fkemu_test::expect_same_bits(as_floats(run_mma(p)), as_floats(want), p.cols, what);
  });
}

TEST(EmulatedImplicitConvMma, ReportsTheEmulatedDeviceAsSupported) {
  // The emulated device is an H200 running code built for sm_90.
  EXPECT_TRUE(mc::emu::implicit_mma_supported(0));
}

TEST(EmulatedImplicitConvMma, Tf32ExactOperandsGiveTheExactSum) {
  // 150 rows: two 128-row tiles or three 64-row ones, the last partial.
  const DevicePairs m = random_pairs(140, 150, 6, 0.5, 1);
  check_exact<float>(m, 5, 3, false, 10);    // 32-wide tiles, element loads, one product
  check_exact<float>(m, 16, 32, false, 11);  // 16-byte chunks, one whole slice
  check_exact<float>(m, 37, 70, false, 12);  // 64-wide tiles, the second partial; 16 + 16 + 5
  check_exact<float>(m, 9, 36, false, 37);   // element loads of src, W in chunks
}

TEST(EmulatedImplicitConvMma, Tf32InputGradientExact) {
  const DevicePairs m = random_pairs(150, 140, 5, 0.5, 2);
  check_exact<float>(m, 33, 20, true, 13);  // W_k^T in chunks (inner 20)
  check_exact<float>(m, 7, 45, true, 14);   // element loads, inner 16 + 16 + 13
}

TEST(EmulatedImplicitConvMma, HalfAndBFloat16ExactOperandsGiveTheExactSum) {
  const DevicePairs m = random_pairs(140, 150, 5, 0.5, 3);
  check_exact<__half>(m, 24, 40, false, 15);         // chunks, 64-wide tiles
  check_exact<__half>(m, 40, 13, false, 16);         // element W loads, inner 32 + 8
  check_exact<__half>(m, 12, 10, true, 17);          // W_k^T, element loads
  check_exact<__nv_bfloat16>(m, 24, 40, false, 18);  // chunks
  check_exact<__nv_bfloat16>(m, 17, 64, true, 19);   // W_k^T in chunks, 2 slices
  check_exact<__nv_bfloat16>(m, 9, 33, false, 20);   // element loads everywhere
}

TEST(EmulatedImplicitConvMma, SixtyFourOffsetsAndRowsWithoutPairs) {
  // Sparse: many rows have no pair (zeros written), and offset 63 is used.
  const DevicePairs m = random_pairs(100, 100, 64, 0.05, 4);
  ASSERT_GT(m.offset_begin[64], m.offset_begin[63]);
  check_exact<float>(m, 9, 17, false, 21);
  check_exact<__half>(m, 16, 16, true, 22);
  // 27 offsets, every one present in the tile's rows.
  const DevicePairs dense = random_pairs(60, 60, 27, 0.6, 8);
  check_exact<__nv_bfloat16>(dense, 20, 12, false, 36);
}

TEST(EmulatedImplicitConvMma, UniformF32OperandsWithinTf32Precision) {
  const DevicePairs m = random_pairs(140, 150, 5, 0.5, 5);
  check_within_precision<float>(m, 37, 70, false, 23);
  check_within_precision<float>(m, 24, 12, true, 24);
}

TEST(EmulatedImplicitConvMma, UniformHalfAndBFloat16OperandsWithinTheirPrecision) {
  const DevicePairs m = random_pairs(140, 150, 5, 0.5, 5);
  check_within_precision<__half>(m, 24, 40, false, 25);
  check_within_precision<__half>(m, 40, 12, true, 26);
  check_within_precision<__nv_bfloat16>(m, 24, 40, false, 27);
  check_within_precision<__nv_bfloat16>(m, 9, 33, true, 28);
}

// One pair per output row and one inner channel: each output is one TF32
// product (exact in f32) plus the zero-padded rest, whatever order the
// tensor cores sum in. Operands are f32 values TF32 cannot hold, some of
// them halfway between two TF32 values: the kernel must round both to
// nearest, ties away from zero (cvt.rna), not truncate or round ties to even.
TEST(EmulatedImplicitConvMma, F32OperandsAreRoundedToTf32) {
  const int64_t n = 150;
  DevicePairs m{n, n, 1, {0, n}, {}, {}};
  for (int32_t i = 0; i < n; ++i) {
    m.in_rows.push_back(n - 1 - i);
    m.out_rows.push_back(i);
  }
  Problem<float> p = make_problem<float>(m, 1, 20, false, Values::kUniform, 29);
  // Ties: the 13 dropped bits exactly 1000...0, above an even and an odd
  // kept significand.
  auto with_low_bits = [](float v, uint32_t low) {
    uint32_t b = 0;
    std::memcpy(&b, &v, 4);
    b = (b & 0xffffc000u) | low;  // bit 13, the last kept, from `low`
    std::memcpy(&v, &b, 4);
    return v;
  };
  for (size_t i = 0; i < p.src.size(); i += 3)
    p.src[i] = with_low_bits(p.src[i], i % 2 == 0 ? 0x1000u : 0x3000u);
  for (size_t i = 0; i < p.w.size(); i += 4) p.w[i] = with_low_bits(p.w[i], 0x1000u);
  auto rna = [](double v) {
    const float f = static_cast<float>(v);
    uint32_t b = 0;
    std::memcpy(&b, &f, 4);
    b = (b + 0x1000u) & 0xffffe000u;
    float r;
    std::memcpy(&r, &b, 4);
    return static_cast<double>(r);
  };
  const Reference ref = reference(p, rna);
  std::vector<float> want(ref.value.size());
  for (size_t e = 0; e < want.size(); ++e) want[e] = static_cast<float>(ref.value[e]);
  // The test can fail: plain f32 products differ from TF32's.
  const Reference plain = reference(p);
  int64_t differ = 0;
  for (size_t e = 0; e < want.size(); ++e) differ += static_cast<float>(plain.value[e]) != want[e];
  ASSERT_GT(differ, static_cast<int64_t>(want.size()) / 2);
  in_every_schedule([&](fkemu::Order) {
    fkemu_test::expect_same_bits(run_mma(p), want, p.cols, "one TF32 product per output");
  });
}

// implicit_conv.cu's FMA tiles on the same problem: one f32 FMA per term,
// the same order of offsets and channels. f16/bf16 operands multiply
// exactly in both, so they differ only by the order the tensor cores sum
// in; f32 ones also by TF32's rounding of the operands.
template <typename S>
void check_against_fma(const DevicePairs& m, int64_t cin, int64_t cout, bool transposed,
                       uint32_t seed) {
  const Problem<S> p = make_problem<S>(m, cin, cout, transposed, Values::kUniform, seed);
  const Reference ref = reference(p);
  const std::string what = shape(p.rows, p.inner, p.cols, transposed);
  std::vector<S> fma(static_cast<size_t>(p.rows * p.cols), narrow<S>(NAN));
  mc::emu::launch_implicit_conv(dtype_code<S>(), p.args(fma.data()), nullptr);
  in_every_schedule([&](fkemu::Order) {
    const std::vector<S> got = run_mma(p);
    int64_t wrong = 0;
    for (size_t e = 0; e < got.size(); ++e) {
      const double a = static_cast<double>(widen(got[e])), b = static_cast<double>(widen(fma[e]));
      const double tol =
          (2.5 * operand_roundoff<S>() + 2.0 * static_cast<double>(ref.terms + 1) * 0x1p-24) *
              ref.magnitude[e] +
          2.0 * output_roundoff<S>() * std::abs(ref.value[e]) + 1e-7;
      if (!(std::abs(a - b) <= tol) && wrong++ < 5)
        ADD_FAILURE() << what << ": row " << e / static_cast<size_t>(p.cols) << " channel "
                      << e % static_cast<size_t>(p.cols) << ": tensor cores " << a << ", FMA " << b
                      << " (tolerance " << tol << ")";
    }
    EXPECT_EQ(wrong, 0) << what;
  });
}

TEST(EmulatedImplicitConvMma, AgreesWithTheFmaTiles) {
  const DevicePairs m = random_pairs(140, 130, 5, 0.5, 6);
  check_against_fma<float>(m, 20, 36, false, 30);
  check_against_fma<__half>(m, 24, 40, true, 31);
  check_against_fma<__nv_bfloat16>(m, 33, 8, false, 32);
}

TEST(EmulatedImplicitConvMma, EmptyProblemsWriteNothingOrZeros) {
  // No rows, no channels: nothing launched, nothing written.
  const DevicePairs none{0, 0, 27, std::vector<int64_t>(28, 0), {}, {}};
  const Problem<float> p = make_problem<float>(none, 8, 8, false, Values::kUniform, 33);
  mc::emu::launch_implicit_conv_mma(fk::cuda::kF32, p.args(nullptr), nullptr);
  // Rows without any pair, and no inner channels: zeros everywhere.
  const DevicePairs lonely{40, 40, 27, std::vector<int64_t>(28, 0), {}, {}};
  check_exact<float>(lonely, 8, 8, false, 34);
  const DevicePairs m = random_pairs(40, 40, 27, 0.5, 7);
  check_exact<__half>(m, 0, 24, false, 35);
}

TEST(EmulatedImplicitConvMma, RefusesF64ByName) {
  mc::ImplicitConvArgs a{};
  a.rows = 1;
  a.cols = 1;
  try {
    mc::emu::launch_implicit_conv_mma(fk::cuda::kF64, a, nullptr);
    FAIL() << "f64 ran";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("f32 (TF32), f16 or bf16"), std::string::npos) << e.what();
  }
}

}  // namespace
