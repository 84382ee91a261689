#pragma once
// First-occurrence extremes of f32/f64 data with AVX2: the position of the
// first NaN, else of the first largest (kMax) or smallest element, over a
// contiguous run or down each lane of rows of lanes; and the NaN-ignoring max
// of a run. For reduce/extremes.cpp's max/min/argmax/argmin/amax/amin and the shifts of
// softmax and logsumexp, when fk::cpu_isa() >= CpuIsa::Avx2.
//
// Semantics (those of the scalar path, reduce/extremes.cpp's `better`): NaN counts as
// the extreme and the first NaN wins; among equal values (+0 == -0) the first
// wins. Only positions are computed: callers read the value at the position,
// so it is the element itself, bit for bit (a NaN's payload, a zero's sign).
//
// Method: each vector lane keeps (best value, its position) over its own
// elements in increasing position, replacing them with a blend where an
// element beats the best (no branches). A run uses four such vectors (four
// independent dependency chains). The lanes are then combined by "beats, or
// equal and earlier", which gives the first extreme whatever the assignment of
// elements to lanes: the result is the same as the scalar loop's, not just
// close, and does not depend on the run's alignment or length.
#include <immintrin.h>

#include <cstdint>

namespace fk::cpu::avx2 {

#define FK_TARGET_AVX2 __attribute__((target("avx2,fma")))

// v beats best: NaN beats any number, else larger (kMax) / smaller.
template <bool kMax, typename T>
inline bool beats(T v, T best) {
  if (v != v) return best == best;
  return kMax ? v > best : v < best;
}

// The vector operations per element type: f32 (8 lanes, int32 positions) and
// f64 (4 lanes, int64 positions). Positions are relative to the data passed
// in and must fit the lane's integer (callers pass at most 2^31 rows).
template <typename T>
struct ExtremaLanes;

template <>
struct ExtremaLanes<float> {
  using V = __m256;
  static constexpr int64_t kWidth = 8;
  FK_TARGET_AVX2 static V load(const float* p) { return _mm256_loadu_ps(p); }
  // All ones where v beats best: "not v <= best" (true for v > best or
  // either NaN), and best is not NaN (a NaN best is never replaced).
  template <bool kMax>
  FK_TARGET_AVX2 static V beats(V v, V best) {
    const V beyond = _mm256_cmp_ps(v, best, kMax ? _CMP_NLE_UQ : _CMP_NGE_UQ);
    return _mm256_and_ps(beyond, _mm256_cmp_ps(best, best, _CMP_ORD_Q));
  }
  FK_TARGET_AVX2 static V blend(V a, V b, V mask) { return _mm256_blendv_ps(a, b, mask); }
  FK_TARGET_AVX2 static __m256i blend(__m256i a, __m256i b, V mask) {
    return _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b), mask));
  }
  FK_TARGET_AVX2 static __m256i splat(int64_t i) {
    return _mm256_set1_epi32(static_cast<int32_t>(i));
  }
  FK_TARGET_AVX2 static __m256i lanes() { return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); }
  FK_TARGET_AVX2 static __m256i add(__m256i a, __m256i b) { return _mm256_add_epi32(a, b); }
  FK_TARGET_AVX2 static void store_positions(int64_t* i, __m256i at) {
    const __m256i lo = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(at));
    const __m256i hi = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(at, 1));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(i), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(i + 4), hi);
  }
  FK_TARGET_AVX2 static V max_ignoring_nan(V v, V m) { return _mm256_max_ps(v, m); }
  FK_TARGET_AVX2 static V is_nan(V v) { return _mm256_cmp_ps(v, v, _CMP_UNORD_Q); }
  FK_TARGET_AVX2 static V or_(V a, V b) { return _mm256_or_ps(a, b); }
  FK_TARGET_AVX2 static V splat_value(float v) { return _mm256_set1_ps(v); }
  FK_TARGET_AVX2 static bool any(V mask) { return _mm256_movemask_ps(mask) != 0; }
  FK_TARGET_AVX2 static void store_values(float* v, V x) { _mm256_storeu_ps(v, x); }
  FK_TARGET_AVX2 static V andnot(V a, V b) { return _mm256_andnot_ps(a, b); }
  // All ones where position a < b.
  FK_TARGET_AVX2 static V earlier(__m256i a, __m256i b) {
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(b, a));
  }
  // Lane k gets lane k ^ 4 (level 0), k ^ 2 (1), k ^ 1 (2).
  static constexpr int kLevels = 3;
  template <int kLevel>
  FK_TARGET_AVX2 static V partner(V v) {
    if constexpr (kLevel == 0) return _mm256_permute2f128_ps(v, v, 1);
    if constexpr (kLevel == 1) return _mm256_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2));
    if constexpr (kLevel == 2) return _mm256_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1));
  }
  template <int kLevel>
  FK_TARGET_AVX2 static __m256i partner(__m256i v) {
    return _mm256_castps_si256(partner<kLevel>(_mm256_castsi256_ps(v)));
  }
  FK_TARGET_AVX2 static float first(V v) { return _mm256_cvtss_f32(v); }
  FK_TARGET_AVX2 static int64_t first(__m256i v) { return _mm256_cvtsi256_si32(v); }
};

template <>
struct ExtremaLanes<double> {
  using V = __m256d;
  static constexpr int64_t kWidth = 4;
  FK_TARGET_AVX2 static V load(const double* p) { return _mm256_loadu_pd(p); }
  template <bool kMax>
  FK_TARGET_AVX2 static V beats(V v, V best) {
    const V beyond = _mm256_cmp_pd(v, best, kMax ? _CMP_NLE_UQ : _CMP_NGE_UQ);
    return _mm256_and_pd(beyond, _mm256_cmp_pd(best, best, _CMP_ORD_Q));
  }
  FK_TARGET_AVX2 static V blend(V a, V b, V mask) { return _mm256_blendv_pd(a, b, mask); }
  FK_TARGET_AVX2 static __m256i blend(__m256i a, __m256i b, V mask) {
    return _mm256_castpd_si256(
        _mm256_blendv_pd(_mm256_castsi256_pd(a), _mm256_castsi256_pd(b), mask));
  }
  FK_TARGET_AVX2 static __m256i splat(int64_t i) { return _mm256_set1_epi64x(i); }
  FK_TARGET_AVX2 static __m256i lanes() { return _mm256_setr_epi64x(0, 1, 2, 3); }
  FK_TARGET_AVX2 static __m256i add(__m256i a, __m256i b) { return _mm256_add_epi64(a, b); }
  FK_TARGET_AVX2 static void store_positions(int64_t* i, __m256i at) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(i), at);
  }
  FK_TARGET_AVX2 static V max_ignoring_nan(V v, V m) { return _mm256_max_pd(v, m); }
  FK_TARGET_AVX2 static V is_nan(V v) { return _mm256_cmp_pd(v, v, _CMP_UNORD_Q); }
  FK_TARGET_AVX2 static V or_(V a, V b) { return _mm256_or_pd(a, b); }
  FK_TARGET_AVX2 static V splat_value(double v) { return _mm256_set1_pd(v); }
  FK_TARGET_AVX2 static bool any(V mask) { return _mm256_movemask_pd(mask) != 0; }
  FK_TARGET_AVX2 static void store_values(double* v, V x) { _mm256_storeu_pd(v, x); }
  FK_TARGET_AVX2 static V andnot(V a, V b) { return _mm256_andnot_pd(a, b); }
  FK_TARGET_AVX2 static V earlier(__m256i a, __m256i b) {
    return _mm256_castsi256_pd(_mm256_cmpgt_epi64(b, a));
  }
  // Lane k gets lane k ^ 2 (level 0), k ^ 1 (1).
  static constexpr int kLevels = 2;
  template <int kLevel>
  FK_TARGET_AVX2 static V partner(V v) {
    if constexpr (kLevel == 0) return _mm256_permute2f128_pd(v, v, 1);
    if constexpr (kLevel == 1) return _mm256_permute_pd(v, 0b0101);
  }
  template <int kLevel>
  FK_TARGET_AVX2 static __m256i partner(__m256i v) {
    return _mm256_castpd_si256(partner<kLevel>(_mm256_castsi256_pd(v)));
  }
  FK_TARGET_AVX2 static double first(V v) { return _mm256_cvtsd_f64(v); }
  FK_TARGET_AVX2 static int64_t first(__m256i v) {
    return _mm_cvtsi128_si64(_mm256_castsi256_si128(v));
  }
};

// Lane by lane, keeps whichever of (best, at) and (v, pos) comes first in the
// order "beats, or equal and earlier" (a total order, as positions differ).
template <bool kMax, typename L>
FK_TARGET_AVX2 void keep_first(typename L::V& best, __m256i& at, typename L::V v, __m256i pos) {
  const typename L::V v_beats = L::template beats<kMax>(v, best);
  const typename L::V best_beats = L::template beats<kMax>(best, v);
  const typename L::V take = L::or_(v_beats, L::andnot(best_beats, L::earlier(pos, at)));
  best = L::blend(best, v, take);
  at = L::blend(at, pos, take);
}

// Lane 0 of (best, at) becomes the first extreme of all lanes (a butterfly).
template <bool kMax, typename L, int kLevel = 0>
FK_TARGET_AVX2 void keep_first_across_lanes(typename L::V& best, __m256i& at) {
  if constexpr (kLevel < L::kLevels) {
    keep_first<kMax, L>(best, at, L::template partner<kLevel>(best),
                        L::template partner<kLevel>(at));
    keep_first_across_lanes<kMax, L, kLevel + 1>(best, at);
  }
}

// The position of the first extreme of x[0..n), n >= 1 (see the top of the
// file); n < 2^31.
template <bool kMax, typename T>
FK_TARGET_AVX2 int64_t first_extreme_run(const T* x, int64_t n) {
  using L = ExtremaLanes<T>;
  using V = typename L::V;
  constexpr int64_t W = L::kWidth, kChains = 4;
  T best_v = x[0];
  int64_t best_i = 0, i = 1;
  if (n >= W) {
    // Chain u covers the elements at i + u W + k of each step of kChains W
    // (fewer chains when the run is short); then single vectors go to chain 0.
    const int64_t chains = n >= kChains * W ? kChains : 1;
    V best[kChains];
    __m256i at[kChains];
    for (int64_t u = 0; u < chains; ++u) {
      best[u] = L::load(x + u * W);
      at[u] = L::add(L::lanes(), L::splat(u * W));
    }
    i = chains * W;
    __m256i pos = L::add(L::lanes(), L::splat(i));
    if (chains == kChains) {
      const __m256i step = L::splat(kChains * W), offset = L::splat(W);
      for (; i + kChains * W <= n; i += kChains * W) {
        __m256i p = pos;
        for (int64_t u = 0; u < kChains; ++u) {
          const V v = L::load(x + i + u * W);
          const V take = L::template beats<kMax>(v, best[u]);
          best[u] = L::blend(best[u], v, take);
          at[u] = L::blend(at[u], p, take);
          p = L::add(p, offset);
        }
        pos = L::add(pos, step);
      }
    }
    const __m256i offset = L::splat(W);
    for (; i + W <= n; i += W) {
      const V v = L::load(x + i);
      const V take = L::template beats<kMax>(v, best[0]);
      best[0] = L::blend(best[0], v, take);
      at[0] = L::blend(at[0], pos, take);
      pos = L::add(pos, offset);
    }
    if (chains == kChains) {
      keep_first<kMax, L>(best[0], at[0], best[1], at[1]);
      keep_first<kMax, L>(best[2], at[2], best[3], at[3]);
      keep_first<kMax, L>(best[0], at[0], best[2], at[2]);
    }
    keep_first_across_lanes<kMax, L>(best[0], at[0]);
    best_v = L::first(best[0]);
    best_i = L::first(at[0]);
  }
  for (; i < n; ++i) {  // after every vector element: a strict beat is needed
    if (beats<kMax>(x[i], best_v)) best_v = x[i], best_i = i;
  }
  return best_i;
}

// Lanes c .. c + kVectors W of rows of lanes (see first_extreme_lanes),
// walked down the rows together.
template <bool kMax, int64_t kVectors, typename T>
FK_TARGET_AVX2 void first_extreme_lane_group(const T* x, int64_t rows, int64_t stride,
                                             int64_t* row) {
  using L = ExtremaLanes<T>;
  using V = typename L::V;
  constexpr int64_t W = L::kWidth;
  V best[kVectors];
  __m256i at[kVectors];
  for (int64_t u = 0; u < kVectors; ++u) {
    best[u] = L::load(x + u * W);
    at[u] = L::splat(0);
  }
  for (int64_t r = 1; r < rows; ++r) {
    const T* xr = x + r * stride;
    const __m256i pos = L::splat(r);
    for (int64_t u = 0; u < kVectors; ++u) {
      const V v = L::load(xr + u * W);
      const V take = L::template beats<kMax>(v, best[u]);
      best[u] = L::blend(best[u], v, take);
      at[u] = L::blend(at[u], pos, take);
    }
  }
  for (int64_t u = 0; u < kVectors; ++u) L::store_positions(row + u * W, at[u]);
}

// Rows of lanes: for lanes j of x + r * stride + j (r < rows, rows >= 1), the
// row of lane j's first extreme goes to row[j], for the lanes j < w in whole
// vectors; returns how many lanes that is (a multiple of the width). rows < 2^31.
template <bool kMax, typename T>
FK_TARGET_AVX2 int64_t first_extreme_lanes(const T* x, int64_t rows, int64_t stride, int64_t w,
                                           int64_t* row) {
  constexpr int64_t W = ExtremaLanes<T>::kWidth, kGroup = 4;
  int64_t c = 0;
  for (; c + kGroup * W <= w; c += kGroup * W) {
    first_extreme_lane_group<kMax, kGroup>(x + c, rows, stride, row + c);
  }
  for (; c + W <= w; c += W) first_extreme_lane_group<kMax, 1>(x + c, rows, stride, row + c);
  return c;
}

// The largest non-NaN element of x[0..n) (-inf if there is none), and whether
// x holds a NaN. Exact, so the lane order cannot show (but for the sign of a
// zero maximum, which callers must not depend on).
template <typename T>
FK_TARGET_AVX2 T max_ignoring_nan_run(const T* x, int64_t n, bool* has_nan) {
  using L = ExtremaLanes<T>;
  using V = typename L::V;
  constexpr int64_t W = L::kWidth;
  const T neg_inf = -__builtin_inf();
  V m0 = L::splat_value(neg_inf), m1 = m0, nan = L::is_nan(m0);  // all false
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const V a = L::load(x + i), b = L::load(x + i + W);
    m0 = L::max_ignoring_nan(a, m0);  // a > m0 ? a : m0: a NaN a leaves m0
    m1 = L::max_ignoring_nan(b, m1);
    nan = L::or_(nan, L::or_(L::is_nan(a), L::is_nan(b)));
  }
  T lanes[W];
  L::store_values(lanes, L::max_ignoring_nan(m0, m1));
  bool any_nan = L::any(nan);
  T m = neg_inf;
  for (int64_t k = 0; k < W; ++k) m = lanes[k] > m ? lanes[k] : m;
  for (; i < n; ++i) {
    any_nan = any_nan || x[i] != x[i];
    m = x[i] > m ? x[i] : m;
  }
  *has_nan = any_nan;
  return m;
}

#undef FK_TARGET_AVX2

}  // namespace fk::cpu::avx2
