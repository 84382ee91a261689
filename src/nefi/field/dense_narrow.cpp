#include "nefi/field/dense_narrow.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "fk/cpu_isa.h"

// GCC 12 flags the undefined pass-through inside _mm512_reduce_add_ps (a false
// positive in its own header).
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace nefi {
namespace {

__mmask16 lanes(int64_t n) {
  return static_cast<__mmask16>(n >= 16 ? 0xFFFF : n <= 0 ? 0 : (1u << n) - 1);
}

// sum_p x[p] v[p] over 16 lanes, then across them.
__attribute__((target("avx512f"))) float dot(const float* x, const float* v, int64_t k) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; p += 16) {
    const __mmask16 m = lanes(k - p);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + p), _mm512_maskz_loadu_ps(m, v + p), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

// c[0:n] (+)= s v[0:n].
__attribute__((target("avx512f"))) void axpy(float s, const float* v, int64_t n, float* c,
                                             bool accumulate) {
  const __m512 sv = _mm512_set1_ps(s);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = lanes(n - j);
    __m512 r = _mm512_mul_ps(sv, _mm512_maskz_loadu_ps(m, v + j));
    if (accumulate) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(m, c + j));
    _mm512_mask_storeu_ps(c + j, m, r);
  }
}

// v[0:n] from a strided vector.
std::vector<float> gathered(const float* p, int64_t n, int64_t stride) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = p[i * stride];
  return v;
}

}  // namespace

bool dense_narrow(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                  bool accumulate) {
  if (!fk::cpu_avx512() || std::min({m, n, k}) != 1) return false;
  if (n == 1 && !trans_a) {  // c[i] = A[i, :] . op(B)[:, 0]
    const std::vector<float> v = gathered(b, k, trans_b ? 1 : ldb);
    for (int64_t i = 0; i < m; ++i)
      c[i * ldc] = (accumulate ? c[i * ldc] : 0.0f) + dot(a + i * lda, v.data(), k);
    return true;
  }
  if (k == 1) {  // c[i, :] = op(A)[i, 0] op(B)[0, :]
    const std::vector<float> v = gathered(b, n, trans_b ? ldb : 1);
    for (int64_t i = 0; i < m; ++i)
      axpy(a[trans_a ? i : i * lda], v.data(), n, c + i * ldc, accumulate);
    return true;
  }
  if (m == 1 && !trans_b) {  // c[0, :] = sum_p op(A)[0, p] B[p, :], p in order
    std::vector<float> acc(static_cast<size_t>(n), 0.0f);
    for (int64_t p = 0; p < k; ++p)
      axpy(a[trans_a ? p * lda : p], b + p * ldb, n, acc.data(), true);
    for (int64_t j = 0; j < n; ++j) c[j] = (accumulate ? c[j] : 0.0f) + acc[j];
    return true;
  }
  return false;
}

}  // namespace nefi
