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

MK_AVX512 void pack_rows_avx512(const float* const* src, int64_t n, int64_t width, float* dst,
                                int64_t ld, int64_t ahead) {
  const int64_t lines = (width * static_cast<int64_t>(sizeof(float)) + 63) / 64;
  const __mmask16 tail = lane_mask(width % 16 == 0 ? 16 : width % 16);
  for (int64_t p = 0; p < n; ++p) {
    if (p < ahead) {
      const char* q = reinterpret_cast<const char*>(src[n + p]);
      for (int64_t l = 0; l < lines; ++l) _mm_prefetch(q + 64 * l, _MM_HINT_T1);
    }
    const float* s = src[p];
    float* d = dst + p * ld;
    int64_t c = 0;
    for (; c + 16 < width; c += 16) _mm512_storeu_ps(d + c, _mm512_loadu_ps(s + c));
    _mm512_mask_storeu_ps(d + c, tail, _mm512_maskz_loadu_ps(tail, s + c));
  }
}

void outer_accumulate_f32_avx512(const float* const* a, const float* const* g, int64_t n,
                                 int64_t cin, int64_t cout, float* part, bool fresh) {
  outer_panels(PointedRows{a}, PointedRows{g}, n, cin, cout, part, fresh);
}

void outer_accumulate_packed_f32_avx512(const float* const* a, const float* g, int64_t ldg,
                                        int64_t n, int64_t cin, int64_t cout, float* part,
                                        bool fresh) {
  outer_panels(PointedRows{a}, StridedRows{g, ldg}, n, cin, cout, part, fresh);
}

}  // namespace minkowski::detail
