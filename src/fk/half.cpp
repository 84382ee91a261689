#include "fk/half.h"

#include <immintrin.h>

#include "fk/cpu_isa.h"

namespace fk {
namespace {

bool cpu_has_f16c() {
  return cpu_isa() >= CpuIsa::Avx2;
}

__attribute__((target("f16c,avx2"))) void half_to_float_f16c(const Half* in, float* out,
                                                             int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = half_to_float(in[i]);
}

__attribute__((target("f16c,avx2"))) void float_to_half_f16c(const float* in, Half* out,
                                                             int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = float_to_half(in[i]);
}

}  // namespace

void half_to_float(const Half* in, float* out, int64_t n) {
  if (cpu_has_f16c()) return half_to_float_f16c(in, out, n);
  for (int64_t i = 0; i < n; ++i) out[i] = half_to_float(in[i]);
}

void float_to_half(const float* in, Half* out, int64_t n) {
  if (cpu_has_f16c()) return float_to_half_f16c(in, out, n);
  for (int64_t i = 0; i < n; ++i) out[i] = float_to_half(in[i]);
}

// bf16 <-> f32 is a shift and a rounding add: plain loops vectorise well at -O2.
void bf16_to_float(const BFloat16* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_float(in[i]);
}

void float_to_bf16(const float* in, BFloat16* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = float_to_bf16(in[i]);
}

}  // namespace fk
