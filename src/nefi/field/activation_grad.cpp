#include "nefi/field/activation_grad.h"

#include <immintrin.h>

#include "fk/cpu_isa.h"

namespace nefi {
namespace {

// The reference loop (f64, and f32 without AVX-512). With act None nothing is
// written to gz (it may be g).
template <typename T>
void activation_grad_plain(const T* g, const T* y, DenseActivation act, int64_t n, int64_t out,
                           T* gz, T* db) {
  if (db)
    for (int64_t j = 0; j < out; ++j) db[j] = T(0);
  for (int64_t i = 0; i < n; ++i) {
    const T* gr = g + i * out;
    const T* yr = y + i * out;
    T* zr = gz + i * out;
    if (act == DenseActivation::Tanh) {
      for (int64_t j = 0; j < out; ++j) zr[j] = gr[j] * (T(1) - yr[j] * yr[j]);
    } else if (act == DenseActivation::Relu) {
      for (int64_t j = 0; j < out; ++j) zr[j] = yr[j] > T(0) ? gr[j] : T(0);
    }
    const T* zs = act == DenseActivation::None ? gr : zr;
    if (db)
      for (int64_t j = 0; j < out; ++j) db[j] += zs[j];
  }
}

// 16 columns at a time, the last ones masked. The (masked) _round_ forms keep tanh's
// factor as three rounded operations (GCC would contract plain vector
// arithmetic into an FMA, which the plain loop does not have).
__attribute__((target("avx512f"))) void activation_grad_avx512(const float* g, const float* y,
                                                               DenseActivation act, int64_t n,
                                                               int64_t out, float* gz, float* db) {
  constexpr int kRound = _MM_FROUND_CUR_DIRECTION;
  const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
  if (db)
    for (int64_t j = 0; j < out; ++j) db[j] = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float* gr = g + i * out;
    const float* yr = y + i * out;
    float* zr = gz + i * out;
    for (int64_t j = 0; j < out; j += 16) {
      const __mmask16 m = static_cast<__mmask16>(out - j >= 16 ? 0xFFFF : (1u << (out - j)) - 1);
      __m512 z = _mm512_maskz_loadu_ps(m, gr + j);
      if (act == DenseActivation::Tanh) {
        const __m512 v = _mm512_maskz_loadu_ps(m, yr + j);
        const __m512 d =
            _mm512_maskz_sub_round_ps(m, one, _mm512_maskz_mul_round_ps(m, v, v, kRound), kRound);
        z = _mm512_maskz_mul_round_ps(m, z, d, kRound);
      } else if (act == DenseActivation::Relu) {
        const __m512 v = _mm512_maskz_loadu_ps(m, yr + j);
        z = _mm512_maskz_mov_ps(_mm512_mask_cmp_ps_mask(m, v, zero, _CMP_GT_OQ), z);
      }
      if (act != DenseActivation::None) _mm512_mask_storeu_ps(zr + j, m, z);
      if (db)
        _mm512_mask_storeu_ps(
            db + j, m, _mm512_maskz_add_round_ps(m, _mm512_maskz_loadu_ps(m, db + j), z, kRound));
    }
  }
}

}  // namespace

void activation_grad(const float* g, const float* y, DenseActivation act, int64_t n, int64_t out,
                     float* gz, float* db) {
  if (fk::cpu_avx512()) {
    activation_grad_avx512(g, y, act, n, out, gz, db);
  } else {
    activation_grad_plain(g, y, act, n, out, gz, db);
  }
}

void activation_grad(const double* g, const double* y, DenseActivation act, int64_t n, int64_t out,
                     double* gz, double* db) {
  activation_grad_plain(g, y, act, n, out, gz, db);
}

}  // namespace nefi
