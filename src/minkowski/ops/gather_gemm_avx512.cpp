// AVX-512 register tiles of the sparse-convolution micro-kernels: 16 floats a
// vector and 32 registers, so a tile holds up to 24 accumulators (6 rows x 64
// columns) where AVX2's holds 12 (6 x 16). Compiled with target attributes
// only: the build runs on any x86-64 machine and these functions are called
// only when fk::cpu_isa() says AVX-512 (gather_gemm.cpp). The loops around
// the tiles are gather_gemm_tiles.h's, shared with the bf16 tiles.
//
// A panel's last vector may be half full (C_out is a multiple of 8): it is
// loaded and stored under a lane mask, so no column is read or written past
// the row's end. Every element is still one FMA chain in ascending order, as
// in the AVX2 kernels (gather_gemm_isa.h).
#include <immintrin.h>

#include <algorithm>
#include <utility>
#include <vector>

#define MK_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")))
#define MK_TILE_TARGET MK_AVX512
#include "minkowski/ops/gather_gemm_tiles.h"

namespace minkowski::detail {

namespace {

// c[r][0:cols] (+)= a[r] . w for R rows, NV vectors of columns (the last under
// `last`), w: cin rows ldw apart. Each accumulator starts from zero; Add adds
// the finished term to c (row-stationary), else stores it (per pair).
struct F32Rows {
  using Src = float;
  using Mat = float;
  static int64_t depth(int64_t cin) { return cin; }

  template <int R, int NV, bool Add>
  MK_AVX512 static inline void tile(const float* const* a, const float* w, int64_t cin, int64_t ldw,
                                    float* const* c, __mmask16 last) {
    __m512 acc[R][NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
    for (int64_t x = 0; x < cin; ++x) {
      __m512 wv[NV];
      const float* wr = w + x * ldw;
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        wv[v] =
            v + 1 < NV ? _mm512_loadu_ps(wr + 16 * v) : _mm512_maskz_loadu_ps(last, wr + 16 * v);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512 b = _mm512_set1_ps(a[r][x]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(b, wv[v], acc[r][v]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        float* d = c[r] + 16 * v;
        const __mmask16 m = v + 1 < NV ? __mmask16(0xFFFF) : last;
        __m512 out = acc[r][v];
        if constexpr (Add) out = _mm512_add_ps(_mm512_maskz_loadu_ps(m, d), out);
        _mm512_mask_storeu_ps(d, m, out);
      }
  }
};

// The weight-gradient tile: R rows of `part` (input channels a0 .. of the
// rows `a`) x NV vectors of gradient channels (from g0, the last under
// `last`), summed over n pairs, each element from `part` (or zero when
// fresh) in ascending pair order.
struct F32Outer {
  template <int R, int NV, typename ARows, typename GRows>
  MK_AVX512 static inline void tile(ARows a, int64_t a0, GRows g, int64_t g0, int64_t n,
                                    float* part, int64_t ldp, bool fresh, __mmask16 last) {
    __m512 acc[R][NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const __mmask16 m = v + 1 < NV ? __mmask16(0xFFFF) : last;
        acc[r][v] = fresh ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m, part + r * ldp + 16 * v);
      }
    for (int64_t p = 0; p < n; ++p) {
      __m512 gv[NV];
      const float* gp = g[p] + g0;
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        gv[v] =
            v + 1 < NV ? _mm512_loadu_ps(gp + 16 * v) : _mm512_maskz_loadu_ps(last, gp + 16 * v);
      const float* ap = a[p] + a0;
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512 b = _mm512_set1_ps(ap[r]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(b, gv[v], acc[r][v]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        _mm512_mask_storeu_ps(part + r * ldp + 16 * v, v + 1 < NV ? __mmask16(0xFFFF) : last,
                              acc[r][v]);
  }
};

// The weight gradient's blocked form (outer_accumulate_blocked_f32_avx512):
// per sub-block of pairs, the input rows packed as panels of kPanelRows
// channels (panel t: pair p's channels [t R, t R + R) at p R, so a tile reads
// one contiguous run, which the prefetchers follow, instead of a few floats
// from each of many scattered rows) and the gradient rows at a padded stride
// (rows C x 4 bytes apart fall on a few L1 sets). A panel of gradient columns
// then stays in L1 across all input-channel tiles. Each element's chain runs
// through the stored partial in pair order, so no bit depends on the blocking.
constexpr int kPanelRows = 6;
constexpr int64_t kSubPairs = 96;

// The input side of the packed outer tiles: channel ci lives in panel ci / R
// (m pairs of R floats, at pa + ci * m), column 0 of a tile that starts there.
struct ChannelPanels {
  const float* pa;
  int64_t m;
  template <int NV>
  static constexpr int kRows = kPanelRows;
  StridedRows<float> at(int64_t ci) const { return {pa + ci * m, kPanelRows}; }
  static int64_t first(int64_t) { return 0; }
};

// Panels of the m rows' channels (the last one's missing channels left
// unset: no tile reads them); the next `ahead` rows pulled into L2.
MK_AVX512 void pack_panels(const float* const* a, int64_t m, int64_t cin, float* dst,
                           int64_t ahead) {
  const int64_t panels = (cin + kPanelRows - 1) / kPanelRows;
  const __mmask8 full = (1u << kPanelRows) - 1u;
  for (int64_t p = 0; p < m; ++p) {
    if (p < ahead) prefetch_rows<_MM_HINT_T1>(a + m + p, 1, cin);
    const float* s = a[p];
    float* d = dst + p * kPanelRows;
    int64_t t = 0;
    for (; t + 1 < panels; ++t)
      _mm256_mask_storeu_ps(d + t * m * kPanelRows, full, _mm256_loadu_ps(s + t * kPanelRows));
    const int64_t rest = cin - t * kPanelRows;
    const __mmask8 tail = static_cast<__mmask8>((1u << rest) - 1u);
    _mm256_mask_storeu_ps(d + t * m * kPanelRows, tail,
                          _mm256_maskz_loadu_ps(tail, s + t * kPanelRows));
  }
}

// dst[p * ld ..][0:width] = src[p][0:width] (width a multiple of 8), the next
// `ahead` rows pulled into L2.
MK_AVX512 void pack_rows(const float* const* src, int64_t n, int64_t width, float* dst, int64_t ld,
                         int64_t ahead) {
  const __mmask16 tail = lane_mask(width % 16 == 0 ? 16 : width % 16);
  for (int64_t p = 0; p < n; ++p) {
    if (p < ahead) prefetch_rows<_MM_HINT_T1>(src + n + p, 1, width);
    const float* s = src[p];
    float* d = dst + p * ld;
    int64_t c = 0;
    for (; c + 16 < width; c += 16) _mm512_storeu_ps(d + c, _mm512_loadu_ps(s + c));
    _mm512_mask_storeu_ps(d + c, tail, _mm512_maskz_loadu_ps(tail, s + c));
  }
}

}  // namespace

void gather_gemm_f32_avx512(const float* f, int64_t ldf, const int32_t* rows, int64_t n,
                            const float* w, int64_t cin, int64_t cout, float* out, int64_t ldo) {
  rows_times<F32Rows>(f, ldf, rows, n, w, cin, cout, out, ldo);
}

void gather_gemm_add_f32_avx512(const float* const* a, float* const* c, int64_t n, const float* w,
                                int64_t cin, int64_t cout) {
  all_panels<F32Rows, true>(a, c, n, w, cin, cout);
}

void outer_accumulate_f32_avx512(const float* const* a, const float* const* g, int64_t n,
                                 int64_t cin, int64_t cout, float* part, bool fresh) {
  outer_panels<F32Outer>(ChannelColumns<PointedRows<float>>{{a}}, PointedRows<float>{g}, n, cin,
                         cout, part, fresh);
}

void outer_accumulate_blocked_f32_avx512(const float* const* a, const float* const* g, int64_t n,
                                         int64_t cin, int64_t cout, float* part, bool fresh) {
  // Equal sub-blocks of at most kSubPairs pairs (no short last one).
  const int64_t blocks = (n + kSubPairs - 1) / kSubPairs, step = (n + blocks - 1) / blocks;
  const int64_t lda = (cin + kPanelRows - 1) / kPanelRows * kPanelRows * step;
  const int64_t ldg = cout + 16;
  thread_local std::vector<float> buf;
  buf.resize(static_cast<size_t>(lda + step * ldg));
  float* pa = buf.data();
  float* pg = pa + lda;
  prefetch_rows(a, std::min(n, step), cin);
  prefetch_rows(g, std::min(n, step), cout);
  for (int64_t p0 = 0; p0 < n; p0 += step) {
    const int64_t m = std::min(step, n - p0), ahead = std::min(step, n - p0 - m);
    pack_panels(a + p0, m, cin, pa, ahead);
    pack_rows(g + p0, m, cout, pg, ldg, ahead);
    outer_panels<F32Outer>(ChannelPanels{pa, m}, StridedRows<float>{pg, ldg}, m, cin, cout, part,
                           fresh && p0 == 0);
  }
}

}  // namespace minkowski::detail
