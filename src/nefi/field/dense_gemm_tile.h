#pragma once
// dense_gemm_tile: what the f32 (dense_gemm.cpp) and bf16 (dense_gemm_bf16.cpp)
// register-tile kernels share: the 12 x 32 f32 output tile, its epilogue
// (accumulate into C, bias, activation) applied while the tile is in
// registers, edge tiles through a padded copy, and per-thread scratch.
// Internal to the two kernels.
#include <immintrin.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "nefi/field/dense.h"
#include "nefi/field/fast_tanh.h"

namespace nefi::dense_tile {

// 12 x 32 tile: 24 zmm accumulators, two B loads and 12 broadcasts a k step.
constexpr int kMR = 12, kNR = 32;

inline int64_t round_up(int64_t v, int64_t to) {
  return (v + to - 1) / to * to;
}

// A 64-byte aligned buffer, grown on demand and kept (one per thread).
template <typename T>
struct Scratch {
  T* p = nullptr;
  size_t cap = 0;
  ~Scratch() { std::free(p); }
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* get(size_t count) {
    if (count > cap) {
      std::free(p);
      p = static_cast<T*>(std::aligned_alloc(64, round_up(count * sizeof(T), 64)));
      cap = count;
    }
    return p;
  }
};

struct Epilogue {
  const float* bias;  // null: none (or not the last K block)
  DenseActivation act;
};

__attribute__((target("avx512f"), always_inline)) inline __m512 tanh16(__m512 v) {
  using namespace tanh_rational;
  v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-kClamp)), _mm512_set1_ps(kClamp));
  const __m512 v2 = _mm512_mul_ps(v, v);
  __m512 p = _mm512_fmadd_ps(v2, _mm512_set1_ps(a13), _mm512_set1_ps(a11));
  p = _mm512_fmadd_ps(p, v2, _mm512_set1_ps(a9));
  p = _mm512_fmadd_ps(p, v2, _mm512_set1_ps(a7));
  p = _mm512_fmadd_ps(p, v2, _mm512_set1_ps(a5));
  p = _mm512_fmadd_ps(p, v2, _mm512_set1_ps(a3));
  p = _mm512_fmadd_ps(p, v2, _mm512_set1_ps(a1));
  p = _mm512_mul_ps(p, v);
  __m512 q = _mm512_fmadd_ps(v2, _mm512_set1_ps(b6), _mm512_set1_ps(b4));
  q = _mm512_fmadd_ps(q, v2, _mm512_set1_ps(b2));
  q = _mm512_fmadd_ps(q, v2, _mm512_set1_ps(b0));
  return _mm512_div_ps(p, q);
}

// One row of the tile after the epilogue: act(acc [+ c when load_c] + bias),
// x0 columns 0-15 and x1 columns 16-31 (bias0/1 the bias, zero when none).
__attribute__((target("avx512f"), always_inline)) inline void epilogue_row(
    __m512& x0, __m512& x1, const float* cr, bool load_c, const Epilogue& ep, __m512 bias0,
    __m512 bias1) {
  const __m512 zero = _mm512_setzero_ps();
  if (load_c) {
    x0 = _mm512_add_ps(_mm512_loadu_ps(cr), x0);
    x1 = _mm512_add_ps(_mm512_loadu_ps(cr + 16), x1);
  }
  if (ep.bias) {
    x0 = _mm512_add_ps(x0, bias0);
    x1 = _mm512_add_ps(x1, bias1);
  }
  if (ep.act == DenseActivation::Relu) {
    // fk's relu: x where x > 0 or x is NaN, else +0 (max_ps would drop a NaN)
    const __mmask16 keep0 =
        _mm512_cmp_ps_mask(x0, zero, _CMP_GT_OQ) | _mm512_cmp_ps_mask(x0, x0, _CMP_UNORD_Q);
    const __mmask16 keep1 =
        _mm512_cmp_ps_mask(x1, zero, _CMP_GT_OQ) | _mm512_cmp_ps_mask(x1, x1, _CMP_UNORD_Q);
    x0 = _mm512_maskz_mov_ps(keep0, x0);
    x1 = _mm512_maskz_mov_ps(keep1, x1);
  } else if (ep.act == DenseActivation::Tanh) {
    x0 = tanh16(x0);
    x1 = tanh16(x1);
  }
}

__attribute__((target("avx512f"), always_inline)) inline __m512 bias_lanes(const Epilogue& ep,
                                                                           int half) {
  return ep.bias ? _mm512_loadu_ps(ep.bias + 16 * half) : _mm512_setzero_ps();
}

// Stores the accumulated tile c[0:12, 0:32] = act(acc [+ c when load_c] +
// bias): lo[r] holds columns 0-15 of row r, hi[r] columns 16-31.
__attribute__((target("avx512f"), always_inline)) inline void finish_tile(const __m512 (&lo)[kMR],
                                                                          const __m512 (&hi)[kMR],
                                                                          float* c, int64_t ldc,
                                                                          bool load_c,
                                                                          const Epilogue& ep) {
  const __m512 bias0 = bias_lanes(ep, 0), bias1 = bias_lanes(ep, 1);
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) {
    float* cr = c + r * ldc;
    __m512 x0 = lo[r], x1 = hi[r];
    epilogue_row(x0, x1, cr, load_c, ep, bias0, bias1);
    _mm512_storeu_ps(cr, x0);
    _mm512_storeu_ps(cr + 16, x1);
  }
}

// An edge tile of C (mr x nr valid, mr <= 12, nr <= 32): the kernel
// run(c, ldc, epilogue) writes a zero-padded copy of C (and of the bias), and
// the valid part is copied back.
template <typename Run>
void through_padded_tile(float* c, int64_t ldc, int64_t mr, int64_t nr, bool load_c,
                         const Epilogue& ep, Run&& run) {
  alignas(64) float t[kMR * kNR] = {};
  alignas(64) float bias[kNR] = {};
  if (load_c)
    for (int64_t r = 0; r < mr; ++r) std::memcpy(t + r * kNR, c + r * ldc, sizeof(float) * nr);
  if (ep.bias) std::memcpy(bias, ep.bias, sizeof(float) * nr);
  run(t, int64_t{kNR}, Epilogue{ep.bias ? bias : nullptr, ep.act});
  for (int64_t r = 0; r < mr; ++r) std::memcpy(c + r * ldc, t + r * kNR, sizeof(float) * nr);
}

}  // namespace nefi::dense_tile
