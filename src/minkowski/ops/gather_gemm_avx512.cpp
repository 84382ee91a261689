// AVX-512 register tiles of the sparse-convolution micro-kernels: 16 floats a
// vector and 32 registers, so a tile holds up to 24 accumulators (6 rows x 64
// columns) where AVX2's holds 12 (6 x 16). Compiled with target attributes
// only: the build runs on any x86-64 machine and these functions are called
// only when fk::cpu_isa() says AVX-512 (gather_gemm.cpp).
//
// A panel's last vector may be half full (C_out is a multiple of 8): it is
// loaded and stored under a lane mask, so no column is read or written past
// the row's end. Every element is still one FMA chain in ascending order, as
// in the AVX2 kernels (gather_gemm_isa.h).
#include <immintrin.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "minkowski/ops/gather_gemm_isa.h"

#define MK_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")))

namespace minkowski::detail {

namespace {

// Rows per tile for NV vectors of columns: 24 accumulators at NV = 3, 4 (27
// and 28 registers with the weight vectors); 8 rows below, enough
// independent chains to cover the FMA latency on two pipes.
template <int NV>
constexpr int kTileRows = NV == 4 ? 6 : 8;

MK_AVX512 inline __mmask16 lane_mask(int64_t lanes) {
  return lanes >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << lanes) - 1u);
}

// c[r][0:cols] (+)= a[r] . w for R rows, NV vectors of columns (the last under
// `last`), w: cin rows ldw apart. Each accumulator starts from zero; Add adds
// the finished term to c (row-stationary), else stores it (per pair).
template <int R, int NV, bool Add>
MK_AVX512 inline void tile(const float* const* a, const float* w, int64_t cin, int64_t ldw,
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
      wv[v] = v + 1 < NV ? _mm512_loadu_ps(wr + 16 * v) : _mm512_maskz_loadu_ps(last, wr + 16 * v);
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

// tile<rest, NV, Add> for rest in [1, kTileRows<NV>): the row tail.
template <int NV, bool Add, size_t... I>
MK_AVX512 void tail_tile(int rest, const float* const* a, const float* w, int64_t cin, int64_t ldw,
                         float* const* c, __mmask16 last, std::index_sequence<I...>) {
  ((rest == static_cast<int>(I) + 1 ? tile<I + 1, NV, Add>(a, w, cin, ldw, c, last) : void()), ...);
}

// All n rows of one column panel (NV vectors, `cols` columns from `col`).
template <int NV, bool Add>
MK_AVX512 void panel(const float* const* a, float* const* c, int64_t n, const float* w, int64_t cin,
                     int64_t ldw, int64_t col, int64_t cols) {
  constexpr int R = kTileRows<NV>;
  const __mmask16 last = lane_mask(cols - 16 * (NV - 1));
  float* cc[R];
  int64_t i = 0;
  if (col == 0) prefetch_rows(a, std::min<int64_t>(n, 2 * R), cin);
  for (; i + R <= n; i += R) {
    if (col == 0 && i + 2 * R < n)
      prefetch_rows(a + i + 2 * R, std::min<int64_t>(R, n - i - 2 * R), cin);
    for (int r = 0; r < R; ++r) cc[r] = c[i + r] + col;
    tile<R, NV, Add>(a + i, w + col, cin, ldw, cc, last);
  }
  const int rest = static_cast<int>(n - i);
  for (int r = 0; r < rest; ++r) cc[r] = c[i + r] + col;
  if (rest > 0)
    tail_tile<NV, Add>(rest, a + i, w + col, cin, ldw, cc, last, std::make_index_sequence<R - 1>());
}

// Every column panel: 64-column panels, then one panel of the rest.
template <bool Add>
MK_AVX512 void all_panels(const float* const* a, float* const* c, int64_t n, const float* w,
                          int64_t cin, int64_t cout) {
  int64_t col = 0;
  for (; col + 64 <= cout; col += 64) panel<4, Add>(a, c, n, w, cin, cout, col, 64);
  const int64_t rest = cout - col;
  switch ((rest + 15) / 16) {
    case 4:  // 56 columns: 3 vectors and a half
      panel<4, Add>(a, c, n, w, cin, cout, col, rest);
      break;
    case 3:
      panel<3, Add>(a, c, n, w, cin, cout, col, rest);
      break;
    case 2:
      panel<2, Add>(a, c, n, w, cin, cout, col, rest);
      break;
    case 1:
      panel<1, Add>(a, c, n, w, cin, cout, col, rest);
      break;
    default:
      break;
  }
}

// The weight-gradient tile: R rows of `part` (input channels a0 ..) x NV
// vectors of gradient channels (from g0, the last under `last`), summed over
// n pairs read in place, each element from `part` (or zero when fresh) in
// ascending pair order.
// Rows read through pointer arrays (in place) or at a fixed stride (packed:
// no pointer loads in the pair loop).
struct PointedRows {
  const float* const* p;
  const float* operator[](int64_t i) const { return p[i]; }
};
struct StridedRows {
  const float* base;
  int64_t ld;
  const float* operator[](int64_t i) const { return base + i * ld; }
};

template <int R, int NV, typename ARows, typename GRows>
MK_AVX512 inline void outer_tile(ARows a, int64_t a0, GRows g, int64_t g0, int64_t n, float* part,
                                 int64_t ldp, bool fresh, __mmask16 last) {
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
      gv[v] = v + 1 < NV ? _mm512_loadu_ps(gp + 16 * v) : _mm512_maskz_loadu_ps(last, gp + 16 * v);
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

template <int NV, typename ARows, typename GRows, size_t... I>
MK_AVX512 void outer_tail(int rest, ARows a, int64_t a0, GRows g, int64_t g0, int64_t n,
                          float* part, int64_t ldp, bool fresh, __mmask16 last,
                          std::index_sequence<I...>) {
  ((rest == static_cast<int>(I) + 1
        ? outer_tile<I + 1, NV, ARows, GRows>(a, a0, g, g0, n, part, ldp, fresh, last)
        : void()),
   ...);
}

// All input channels of one panel of gradient channels [g0, g0 + cols).
template <int NV, typename ARows, typename GRows>
MK_AVX512 void outer_panel(ARows a, int64_t cin, GRows g, int64_t g0, int64_t cols, int64_t n,
                           float* part, int64_t cout, bool fresh) {
  constexpr int R = kTileRows<NV>;
  const __mmask16 last = lane_mask(cols - 16 * (NV - 1));
  int64_t ci = 0;
  for (; ci + R <= cin; ci += R)
    outer_tile<R, NV, ARows, GRows>(a, ci, g, g0, n, part + ci * cout + g0, cout, fresh, last);
  const int rest = static_cast<int>(cin - ci);
  if (rest > 0)
    outer_tail<NV, ARows, GRows>(rest, a, ci, g, g0, n, part + ci * cout + g0, cout, fresh, last,
                                 std::make_index_sequence<R - 1>());
}

// Every panel of gradient channels: 64 columns, then one panel of the rest.
template <typename ARows, typename GRows>
MK_AVX512 void outer_panels(ARows a, GRows g, int64_t n, int64_t cin, int64_t cout, float* part,
                            bool fresh) {
  int64_t q = 0;
  for (; q + 64 <= cout; q += 64) outer_panel<4>(a, cin, g, q, 64, n, part, cout, fresh);
  const int64_t rest = cout - q;
  switch ((rest + 15) / 16) {
    case 4:
      outer_panel<4>(a, cin, g, q, rest, n, part, cout, fresh);
      break;
    case 3:
      outer_panel<3>(a, cin, g, q, rest, n, part, cout, fresh);
      break;
    case 2:
      outer_panel<2>(a, cin, g, q, rest, n, part, cout, fresh);
      break;
    case 1:
      outer_panel<1>(a, cin, g, q, rest, n, part, cout, fresh);
      break;
    default:
      break;
  }
}

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

// One panel of input channels (kPanelRows of them, packed, m pairs).
struct PanelRows {
  const float* base;
  const float* operator[](int64_t p) const { return base + p * kPanelRows; }
};

template <int NV>
MK_AVX512 void packed_outer_panel(const float* pa, int64_t m, int64_t cin, StridedRows g,
                                  int64_t g0, int64_t cols, float* part, int64_t cout, bool fresh) {
  constexpr int R = kPanelRows;
  const __mmask16 last = lane_mask(cols - 16 * (NV - 1));
  int64_t ci = 0;
  for (; ci + R <= cin; ci += R)
    outer_tile<R, NV>(PanelRows{pa + ci * m}, 0, g, g0, m, part + ci * cout + g0, cout, fresh,
                      last);
  const int rest = static_cast<int>(cin - ci);
  if (rest > 0)
    outer_tail<NV>(rest, PanelRows{pa + ci * m}, 0, g, g0, m, part + ci * cout + g0, cout, fresh,
                   last, std::make_index_sequence<R - 1>());
}

MK_AVX512 void packed_outer_panels(const float* pa, int64_t m, const float* pg, int64_t ldg,
                                   int64_t cin, int64_t cout, float* part, bool fresh) {
  const StridedRows g{pg, ldg};
  int64_t q = 0;
  for (; q + 64 <= cout; q += 64) packed_outer_panel<4>(pa, m, cin, g, q, 64, part, cout, fresh);
  const int64_t rest = cout - q;
  switch ((rest + 15) / 16) {
    case 4:
      packed_outer_panel<4>(pa, m, cin, g, q, rest, part, cout, fresh);
      break;
    case 3:
      packed_outer_panel<3>(pa, m, cin, g, q, rest, part, cout, fresh);
      break;
    case 2:
      packed_outer_panel<2>(pa, m, cin, g, q, rest, part, cout, fresh);
      break;
    case 1:
      packed_outer_panel<1>(pa, m, cin, g, q, rest, part, cout, fresh);
      break;
    default:
      break;
  }
}

}  // namespace

void gather_gemm_f32_avx512(const float* f, int64_t ldf, const int32_t* rows, int64_t n,
                            const float* w, int64_t cin, int64_t cout, float* out, int64_t ldo) {
  // Row pointers in slices, so the panels' tiles see the add kernel's layout.
  constexpr int64_t kSlice = 96;
  const float* a[kSlice];
  float* c[kSlice];
  for (int64_t p0 = 0; p0 < n; p0 += kSlice) {
    const int64_t m = std::min(kSlice, n - p0);
    for (int64_t p = 0; p < m; ++p) {
      a[p] = f + (rows ? static_cast<int64_t>(rows[p0 + p]) : p0 + p) * ldf;
      c[p] = out + (p0 + p) * ldo;
    }
    all_panels<false>(a, c, m, w, cin, cout);
  }
}

void gather_gemm_add_f32_avx512(const float* const* a, float* const* c, int64_t n, const float* w,
                                int64_t cin, int64_t cout) {
  all_panels<true>(a, c, n, w, cin, cout);
}

void outer_accumulate_f32_avx512(const float* const* a, const float* const* g, int64_t n,
                                 int64_t cin, int64_t cout, float* part, bool fresh) {
  outer_panels(PointedRows{a}, PointedRows{g}, n, cin, cout, part, fresh);
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
    packed_outer_panels(pa, m, pg, ldg, cin, cout, part, fresh && p0 == 0);
  }
}

}  // namespace minkowski::detail
