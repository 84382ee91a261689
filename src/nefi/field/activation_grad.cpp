#include "nefi/field/activation_grad.h"

#include <immintrin.h>

#include <algorithm>

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

// Up to 8 x 16 columns at a time, a row after another, with db's partial
// sums in registers (a read-modify-write of db in memory each row was a
// store-to-load chain); only the last, narrower vector of a row is masked
// (masked stores are slow on Zen 4). The _round_ forms keep tanh's factor as
// three rounded operations (GCC would contract plain vector arithmetic into
// an FMA, which the plain loop does not have).
constexpr int kLanes = 16, kGroup = 8;

template <DenseActivation kAct>
__attribute__((target("avx512f"), always_inline)) inline __m512 grad16(const float* g,
                                                                       const float* y,
                                                                       __mmask16 m) {
  constexpr int kRound = _MM_FROUND_CUR_DIRECTION;
  const __m512 gv = _mm512_maskz_loadu_ps(m, g);
  if constexpr (kAct == DenseActivation::None) return gv;
  const __m512 v = _mm512_maskz_loadu_ps(m, y);
  if constexpr (kAct == DenseActivation::Relu)
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ), gv);
  const __m512 d = _mm512_maskz_sub_round_ps(m, _mm512_set1_ps(1.0f),
                                             _mm512_maskz_mul_round_ps(m, v, v, kRound), kRound);
  return _mm512_maskz_mul_round_ps(m, gv, d, kRound);
}

template <DenseActivation kAct>
__attribute__((target("avx512f"))) void activation_grad_avx512(const float* g, const float* y,
                                                               int64_t n, int64_t out, float* gz,
                                                               float* db) {
  for (int64_t j0 = 0; j0 < out; j0 += kLanes * kGroup) {
    const int64_t width = std::min<int64_t>(kLanes * kGroup, out - j0);
    const int full = static_cast<int>(width / kLanes), tail = static_cast<int>(width % kLanes);
    const __mmask16 all = 0xFFFF, last = static_cast<__mmask16>((1u << tail) - 1);
    __m512 acc[kGroup + 1];
    for (__m512& a : acc) a = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t o = i * out + j0;
      for (int c = 0; c < full; ++c) {
        const __m512 z = grad16<kAct>(g + o + c * kLanes, y + o + c * kLanes, all);
        if constexpr (kAct != DenseActivation::None) _mm512_storeu_ps(gz + o + c * kLanes, z);
        acc[c] = _mm512_add_ps(acc[c], z);
      }
      if (tail) {
        const __m512 z = grad16<kAct>(g + o + full * kLanes, y + o + full * kLanes, last);
        if constexpr (kAct != DenseActivation::None)
          _mm512_mask_storeu_ps(gz + o + full * kLanes, last, z);
        acc[full] = _mm512_add_ps(acc[full], z);
      }
    }
    if (!db) continue;
    for (int c = 0; c < full; ++c) _mm512_storeu_ps(db + j0 + c * kLanes, acc[c]);
    if (tail) _mm512_mask_storeu_ps(db + j0 + full * kLanes, last, acc[full]);
  }
}

// activation_grad_avx512 with gz stored as bf16.
template <DenseActivation kAct>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void activation_grad_avx512_bf16(
    const float* g, const float* y, int64_t n, int64_t out, uint16_t* gz, int64_t ldz, float* db) {
  for (int64_t j0 = 0; j0 < out; j0 += kLanes * kGroup) {
    const int64_t width = std::min<int64_t>(kLanes * kGroup, out - j0);
    const int full = static_cast<int>(width / kLanes), tail = static_cast<int>(width % kLanes);
    const __mmask16 all = 0xFFFF, last = static_cast<__mmask16>((1u << tail) - 1);
    __m512 acc[kGroup + 1];
    for (__m512& a : acc) a = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t o = i * out + j0;
      uint16_t* zr = gz + i * ldz + j0;
      for (int c = 0; c < full; ++c) {
        const __m512 z = grad16<kAct>(g + o + c * kLanes, y + o + c * kLanes, all);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(zr + c * kLanes),
                            reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(z)));
        acc[c] = _mm512_add_ps(acc[c], z);
      }
      if (tail) {
        const __m512 z = grad16<kAct>(g + o + full * kLanes, y + o + full * kLanes, last);
        _mm256_mask_storeu_epi16(zr + full * kLanes, last,
                                 reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(z)));
        acc[full] = _mm512_add_ps(acc[full], z);
      }
    }
    if (!db) continue;
    for (int c = 0; c < full; ++c) _mm512_storeu_ps(db + j0 + c * kLanes, acc[c]);
    if (tail) _mm512_mask_storeu_ps(db + j0 + full * kLanes, last, acc[full]);
  }
  if (ldz > out)
    for (int64_t i = 0; i < n; ++i) gz[i * ldz + out] = 0;
}

}  // namespace

void activation_grad_bf16(const float* g, const float* y, DenseActivation act, int64_t n,
                          int64_t out, uint16_t* gz, int64_t ldz, float* db) {
  if (act == DenseActivation::Tanh)
    activation_grad_avx512_bf16<DenseActivation::Tanh>(g, y, n, out, gz, ldz, db);
  if (act == DenseActivation::Relu)
    activation_grad_avx512_bf16<DenseActivation::Relu>(g, y, n, out, gz, ldz, db);
  if (act == DenseActivation::None)
    activation_grad_avx512_bf16<DenseActivation::None>(g, y, n, out, gz, ldz, db);
}

void activation_grad(const float* g, const float* y, DenseActivation act, int64_t n, int64_t out,
                     float* gz, float* db) {
  if (fk::cpu_avx512()) {
    if (act == DenseActivation::Tanh)
      activation_grad_avx512<DenseActivation::Tanh>(g, y, n, out, gz, db);
    if (act == DenseActivation::Relu)
      activation_grad_avx512<DenseActivation::Relu>(g, y, n, out, gz, db);
    if (act == DenseActivation::None)
      activation_grad_avx512<DenseActivation::None>(g, y, n, out, gz, db);
  } else {
    activation_grad_plain(g, y, act, n, out, gz, db);
  }
}

void activation_grad(const double* g, const double* y, DenseActivation act, int64_t n, int64_t out,
                     double* gz, double* db) {
  activation_grad_plain(g, y, act, n, out, gz, db);
}

}  // namespace nefi
