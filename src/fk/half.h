#pragma once
// Conversions between f32 and the two 16-bit float formats. The scalar forms are
// exact IEEE round-to-nearest-even; the bulk forms use F16C / AVX-512 BF16 when
// the CPU has them (checked at run time) and are what kernels call.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "fk/dtype.h"

namespace fk {

inline float bf16_to_float(BFloat16 h) {
  uint32_t u = static_cast<uint32_t>(h.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline BFloat16 float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return BFloat16{static_cast<uint16_t>((u >> 16) | 0x40)};  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);                             // round to nearest even
  return BFloat16{static_cast<uint16_t>(u >> 16)};
}

inline float half_to_float(Half h) {
  uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  uint32_t exp = (h.bits >> 10) & 0x1fu;
  uint32_t man = h.bits & 0x3ffu;
  uint32_t u;
  if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while ((man & 0x400u) == 0);
      u = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (man & 0x3ffu) << 13;
    }
  } else if (exp == 31) {  // a NaN quieted, as F16C's vcvtph2ps (the bulk path) does
    u = sign | 0x7f800000u | man << 13 | (man != 0 ? 0x400000u : 0u);
  } else {
    u = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline Half float_to_half(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t absu = u & 0x7fffffffu;
  // NaN: quieted, the payload's top bits kept, as F16C's vcvtps2ph does (the
  // bulk path): one value converts alike wherever it lies in a tensor.
  if (absu > 0x7f800000u)
    return Half{static_cast<uint16_t>(sign | 0x7e00u | ((absu >> 13) & 0x3ffu))};
  if (absu >= 0x477ff000u) return Half{static_cast<uint16_t>(sign | 0x7c00u)};  // overflow -> inf
  if (absu < 0x38800000u) {  // result is subnormal or zero
    // Add 0.5 so that the float adder does round-to-nearest-even on the shifted bits.
    float a;
    std::memcpy(&a, &absu, 4);
    a += 0.5f;
    uint32_t r;
    std::memcpy(&r, &a, 4);
    return Half{static_cast<uint16_t>(sign | (r - 0x3f000000u))};
  }
  uint32_t mant_odd = (absu >> 13) & 1u;
  absu += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return Half{static_cast<uint16_t>(sign | (absu >> 13))};
}

template <typename T>
inline float to_float(T v) {
  if constexpr (std::is_same_v<T, Half>) {
    return half_to_float(v);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return bf16_to_float(v);
  } else {
    return static_cast<float>(v);
  }
}

// Bulk conversions (n elements); vectorised where the CPU allows.
void half_to_float(const Half* in, float* out, int64_t n);
void float_to_half(const float* in, Half* out, int64_t n);
void bf16_to_float(const BFloat16* in, float* out, int64_t n);
void float_to_bf16(const float* in, BFloat16* out, int64_t n);

// A double or an integer as an f32 rounded *to odd*: exact when it can be,
// else the f32 neighbour whose last mantissa bit is set. f32 keeps at least
// 13 more bits than f16 and 16 more than bf16, so that f32 rounded to nearest
// even is the f16/bf16 correctly rounded from the source; two roundings to
// nearest (f64 -> f32 -> f16) missed ties: 1 + 2^-11 + 2^-40 became 1.
inline float double_to_f32_odd(double d) {
  const float f = static_cast<float>(d);
  if (d != d || static_cast<double>(f) == d || f - f != 0.0f) return f;  // NaN, exact, past f32
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (u & 1u) return f;
  // The other neighbour, toward d (an even one beside an inexact d is the nearer).
  u = static_cast<double>(f) < d ? (f >= 0 ? u + 1 : u - 1) : (f > 0 ? u - 1 : u + 1);
  if (f == 0) u = (d > 0 ? 0u : 0x80000000u) | 1u;
  float g;
  std::memcpy(&g, &u, 4);
  return g;
}

inline float int_to_f32_odd(int64_t v) {
  const uint64_t m = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  const int shift = std::max(0, static_cast<int>(std::bit_width(m)) - 24);
  uint64_t kept = m >> shift;
  if (shift > 0 && (m & ((uint64_t{1} << shift) - 1)) != 0) kept |= 1;  // the sticky bit
  const float f = std::ldexp(static_cast<float>(kept), shift);          // exact: below 2^24
  return v < 0 ? -f : f;
}

}  // namespace fk
