#pragma once
// sum_i exp(x_i - m) over an f32 run with AVX2, in one pass: the softmax and
// logsumexp inner loop over the last dim (softmax also keeps each exp(x_i - m)).
// The exp is vec_math.h's (<= 1 ulp); the terms are widened to f64 and summed
// in exactly the order of cpu/lane_sums.h (element i to lane i mod 8 while in
// a full group of 8, lanes 0-3 and 4-7 being one f64 vector each, the lanes
// combined in fold_lanes.h's tree, then the last n mod 8 terms in order), so
// the result equals the chunked generic form's with the same exp and depends
// on n only. The last n mod 8 exps go through a padded vector, as in
// vec_math.h's apply_f32, so every term is the same vector exp.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "fk/ops/cpu/fold_lanes.h"
#include "fk/ops/cpu/vec_math.h"

namespace fk::cpu::avx2 {

// With kStore, y[i] = exp(x[i] - m) too.
template <bool kStore>
__attribute__((target("avx2,fma"))) double exp_shifted_sum_f32(const float* x, float* y, int64_t n,
                                                               float m) {
  const __m256 vm = _mm256_set1_ps(m);
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();  // lanes 0-3, 4-7
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    if constexpr (kStore) _mm256_storeu_ps(y + i, e);
    lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  alignas(32) double l[8];
  _mm256_store_pd(l, lo);
  _mm256_store_pd(l + 4, hi);
  double a = combine_lanes(l, [](double u, double v) { return u + v; });
  if (i < n) {
    alignas(32) float buf[8] = {};
    const size_t rest = static_cast<size_t>(n - i) * sizeof(float);
    std::memcpy(buf, x + i, rest);
    _mm256_store_ps(buf, exp_ps(_mm256_sub_ps(_mm256_load_ps(buf), vm)));
    if constexpr (kStore) std::memcpy(y + i, buf, rest);
    for (int64_t k = 0; k < n - i; ++k) a += static_cast<double>(buf[k]);
  }
  return a;
}

}  // namespace fk::cpu::avx2
