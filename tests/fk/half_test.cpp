// fk's host f32 -> f16 and f32 -> bf16 conversions (half.h: the scalar forms
// and the bulk ones, F16C where the CPU has it) round to nearest, ties to
// even, as CUDA's __float2half_rn and __float2bfloat16_rn do: the device
// parity tests compare conversions bit for bit on the strength of it
// (tests/fk/cuda/copy_parity_test.cpp). References independent of half.h,
// in f64 arithmetic: for f16 the value scaled to units of the f16 spacing
// and rounded half to even, for bf16 the nearer of the two bf16 neighbours.
// Inputs: every sign and exponent with the mantissas that sit on and beside
// each rounding point (ties with an even and an odd kept bit, carries into
// the exponent and into infinity), every f16 subnormal tie, and random bit
// patterns.
// NaNs are left out: their encodings differ from CUDA's (see
// docs/performance.md, "Exact device-vs-host claims in the device tests").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "fk/half.h"

namespace fk {
namespace {

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// f16 by scaling to units of the f16 spacing at |f| (2^-24 below 2^-14) in
// f64, where the quotient and its fraction are exact, and rounding the
// fraction half to even.
uint16_t f16_reference(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000u : 0u;
  if (std::isinf(f)) return static_cast<uint16_t>(sign | 0x7c00u);
  const double x = std::fabs(static_cast<double>(f));
  if (x == 0.0) return sign;
  int e = 0;
  std::frexp(x, &e);                    // x in [2^(e-1), 2^e)
  int exponent = std::max(e - 1, -14);  // the f16 exponent, subnormals at -14
  const double q = std::ldexp(x, 10 - exponent), below = std::floor(q), r = q - below;
  const bool odd = std::fmod(below, 2.0) == 1.0;
  double m = r > 0.5 || (r == 0.5 && odd) ? below + 1 : below;  // in [0, 2048]
  if (m == 2048) {
    m = 1024;
    ++exponent;
  }
  if (exponent > 15) return static_cast<uint16_t>(sign | 0x7c00u);
  const int mant = static_cast<int>(m);
  if (mant < 1024) return static_cast<uint16_t>(sign | mant);  // subnormal (or zero)
  return static_cast<uint16_t>(sign | (exponent + 15) << 10 | (mant - 1024));
}

// The bf16 neighbours of finite f are its bits with the low 16 cleared and
// the next bf16 up in magnitude (2^128 past the largest finite one).
uint16_t bf16_reference(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isinf(f)) return static_cast<uint16_t>(u >> 16);
  const uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
  const double x = std::fabs(static_cast<double>(f));
  const double a = std::fabs(static_cast<double>(float_of(lo)));
  const double b = (hi & 0x7fffffffu) >= 0x7f800000u ? std::ldexp(1.0, 128)
                                                     : std::fabs(static_cast<double>(float_of(hi)));
  if (x - a != b - x) return static_cast<uint16_t>((x - a < b - x ? lo : hi) >> 16);
  return static_cast<uint16_t>(((lo >> 16) & 1u ? hi : lo) >> 16);
}

std::vector<float> inputs() {
  std::vector<uint32_t> bits;
  // Kept-bit patterns (the last kept bit even and odd, all ones: a carry)
  // times dropped-bit patterns around the half-way point, for f16 (13
  // dropped bits) and bf16 (16).
  const uint32_t f16_kept[] = {0x000u, 0x001u, 0x1feu, 0x1ffu, 0x3feu, 0x3ffu};
  const uint32_t f16_dropped[] = {0x0000u, 0x0001u, 0x0fffu, 0x1000u, 0x1001u, 0x1fffu};
  const uint32_t bf16_kept[] = {0x00u, 0x01u, 0x3eu, 0x3fu, 0x7eu, 0x7fu};
  const uint32_t bf16_dropped[] = {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu};
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t e = 0; e < 255; ++e) {
      for (uint32_t k : f16_kept)
        for (uint32_t d : f16_dropped) bits.push_back(sign | e << 23 | k << 13 | d);
      for (uint32_t k : bf16_kept)
        for (uint32_t d : bf16_dropped) bits.push_back(sign | e << 23 | k << 16 | d);
    }
  std::vector<float> out;
  for (uint32_t u : bits) out.push_back(float_of(u));
  // f16 subnormals are multiples of 2^-24: every tie (k + 1/2) 2^-24 below
  // the smallest normal, and its f32 neighbours.
  for (int k = 0; k <= 1024; ++k) {
    const float tie = std::ldexp(static_cast<float>(k) + 0.5f, -24);
    for (float f : {tie, std::nextafter(tie, 0.0f), std::nextafter(tie, 1.0f)}) {
      out.push_back(f);
      out.push_back(-f);
    }
  }
  std::mt19937 g(7);
  for (int i = 0; i < 200000; ++i) {
    const float f = float_of(static_cast<uint32_t>(g()));
    if (!std::isnan(f)) out.push_back(f);
  }
  for (float f : {0.0f, -0.0f, INFINITY, -INFINITY}) out.push_back(f);
  return out;
}

TEST(FkHalf, FloatToHalfRoundsToNearestEven) {
  const std::vector<float> in = inputs();
  std::vector<Half> bulk(in.size());
  float_to_half(in.data(), bulk.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    const uint16_t want = f16_reference(in[i]);
    ASSERT_EQ(float_to_half(in[i]).bits, want) << std::hexfloat << in[i];
    ASSERT_EQ(bulk[i].bits, want) << std::hexfloat << in[i] << " (bulk)";
  }
}

// A NaN converts to the same bits in bulk (F16C when the CPU has it) and one
// at a time (the tail of a bulk call, strided copies): quieted, the sign and
// the payload's top 10 bits kept. Once the lone path dropped the payload.
TEST(FkHalf, ANanConvertsAlikeInBulkAndAlone) {
  std::vector<float> in;
  for (uint32_t bits : {0x7fbf12f2u, 0xffc00001u, 0x7f800001u, 0x7fffffffu, 0xff812345u})
    in.push_back(float_of(bits));
  std::vector<float> eight = in;  // one full vector: the bulk body, not its tail
  eight.resize(8, 1.0f);
  std::vector<Half> bulk(8);
  float_to_half(eight.data(), bulk.data(), 8);
  for (size_t i = 0; i < in.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &in[i], 4);
    const uint16_t want = static_cast<uint16_t>((u >> 16 & 0x8000u) | 0x7e00u | (u >> 13 & 0x3ffu));
    EXPECT_EQ(float_to_half(in[i]).bits, want) << std::hex << u;
    EXPECT_EQ(bulk[i].bits, want) << std::hex << u << " (bulk)";
  }
}

// An f16 NaN widens to the same f32 bits alone and in bulk (F16C when the
// CPU has it): quieted. The lone path kept a signalling NaN signalling, so
// the ninth element of a tensor (past one F16C vector) differed.
TEST(FkHalf, AHalfNanWidensAlikeInBulkAndAlone) {
  std::vector<Half> in(9, Half{0x7c01u});
  in[1] = Half{0xfd55u};
  in[2] = Half{0x7e00u};
  std::vector<float> bulk(in.size());
  half_to_float(in.data(), bulk.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    const uint32_t want = (in[i].bits & 0x8000u) << 16 | 0x7fc00000u | (in[i].bits & 0x3ffu) << 13;
    uint32_t lone, many;
    const float f = half_to_float(in[i]);
    std::memcpy(&lone, &f, 4);
    std::memcpy(&many, &bulk[i], 4);
    EXPECT_EQ(lone, want) << i;
    EXPECT_EQ(many, want) << i;
  }
}

TEST(FkHalf, FloatToBf16RoundsToNearestEven) {
  const std::vector<float> in = inputs();
  std::vector<BFloat16> bulk(in.size());
  float_to_bf16(in.data(), bulk.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    const uint16_t want = bf16_reference(in[i]);
    ASSERT_EQ(float_to_bf16(in[i]).bits, want) << std::hexfloat << in[i];
    ASSERT_EQ(bulk[i].bits, want) << std::hexfloat << in[i] << " (bulk)";
  }
}

// The references themselves: a tie goes to the even neighbour, and past the
// largest finite value to infinity.
TEST(FkHalf, TheReferencesRoundTiesToEven) {
  EXPECT_EQ(f16_reference(1.0f + 0x1p-11f), 0x3c00u);         // tie, even below
  EXPECT_EQ(f16_reference(1.0f + 3 * 0x1p-11f), 0x3c02u);     // tie, even above
  EXPECT_EQ(f16_reference(65520.0f), 0x7c00u);                // tie past 65504: inf
  EXPECT_EQ(bf16_reference(1.0f + 0x1p-8f), 0x3f80u);         // tie, even below
  EXPECT_EQ(bf16_reference(1.0f + 3 * 0x1p-8f), 0x3f82u);     // tie, even above
  EXPECT_EQ(bf16_reference(float_of(0x7f7fffffu)), 0x7f80u);  // the largest float: inf
  EXPECT_EQ(bf16_reference(float_of(0x00008000u)), 0x0000u);  // subnormal tie, even below
}

}  // namespace
}  // namespace fk
