// AVX-512 BF16 register tiles (gather_gemm_bf16.h): the shapes of the f32
// AVX-512 tiles (gather_gemm_avx512.cpp), 6 rows x 64 columns or 8 rows x up
// to 48, with one vdpbf16ps (two input channels) where those take one FMA.
// Compiled with target attributes only; called only when
// fk::cpu_avx512_bf16() says the CPU has it.
#include "minkowski/ops/gather_gemm_bf16.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "fk/cpu_isa.h"
#include "fk/error.h"

#define MK_BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx2,fma")))

namespace minkowski {

namespace {

template <int NV>
constexpr int kTileRows = NV == 4 ? 6 : 8;

MK_BF16 inline __mmask16 lane_mask(int64_t lanes) {
  return lanes >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << lanes) - 1u);
}

// The channel pair (2j, 2j + 1) of a row, as one 32-bit word in every lane.
MK_BF16 inline __m512bh pair_of(const uint16_t* row, int64_t j) {
  int32_t v;
  std::memcpy(&v, row + 2 * j, sizeof(v));
  return (__m512bh)_mm512_set1_epi32(v);
}

// c[r][0:cols] (+)= a[r] . W for R rows, NV vectors of columns (the last
// under `last`); w: `pairs` rows of packed pairs, ldw words apart.
template <int R, int NV, bool Add>
MK_BF16 inline void tile(const uint16_t* const* a, const uint32_t* w, int64_t pairs, int64_t ldw,
                         float* const* c, __mmask16 last) {
  __m512 acc[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t j = 0; j < pairs; ++j) {
    __m512bh wv[NV];
    const uint32_t* wr = w + j * ldw;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      wv[v] = (__m512bh)(v + 1 < NV ? _mm512_loadu_si512(wr + 16 * v)
                                    : _mm512_maskz_loadu_epi32(last, wr + 16 * v));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512bh b = pair_of(a[r], j);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], b, wv[v]);
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

template <int NV, bool Add, size_t... I>
MK_BF16 void tail_tile(int rest, const uint16_t* const* a, const uint32_t* w, int64_t pairs,
                       int64_t ldw, float* const* c, __mmask16 last, std::index_sequence<I...>) {
  ((rest == static_cast<int>(I) + 1 ? tile<I + 1, NV, Add>(a, w, pairs, ldw, c, last) : void()),
   ...);
}

// All n rows of one column panel (NV vectors, `cols` columns from `col`).
template <int NV, bool Add>
MK_BF16 void panel(const uint16_t* const* a, float* const* c, int64_t n, const uint32_t* w,
                   int64_t pairs, int64_t ldw, int64_t col, int64_t cols) {
  constexpr int R = kTileRows<NV>;
  const __mmask16 last = lane_mask(cols - 16 * (NV - 1));
  float* cc[R];
  int64_t i = 0;
  for (; i + R <= n; i += R) {
    if (col == 0 && i + 2 * R <= n)
      for (int r = 0; r < R; ++r)
        _mm_prefetch(reinterpret_cast<const char*>(a[i + R + r]), _MM_HINT_T0);
    for (int r = 0; r < R; ++r) cc[r] = c[i + r] + col;
    tile<R, NV, Add>(a + i, w + col, pairs, ldw, cc, last);
  }
  const int rest = static_cast<int>(n - i);
  for (int r = 0; r < rest; ++r) cc[r] = c[i + r] + col;
  if (rest > 0)
    tail_tile<NV, Add>(rest, a + i, w + col, pairs, ldw, cc, last,
                       std::make_index_sequence<R - 1>());
}

template <bool Add>
MK_BF16 void all_panels(const uint16_t* const* a, float* const* c, int64_t n, const uint32_t* w,
                        int64_t cin, int64_t cout) {
  const int64_t pairs = cin / 2;
  int64_t col = 0;
  for (; col + 64 <= cout; col += 64) panel<4, Add>(a, c, n, w, pairs, cout, col, 64);
  const int64_t rest = cout - col;
  switch ((rest + 15) / 16) {
    case 4:
      panel<4, Add>(a, c, n, w, pairs, cout, col, rest);
      break;
    case 3:
      panel<3, Add>(a, c, n, w, pairs, cout, col, rest);
      break;
    case 2:
      panel<2, Add>(a, c, n, w, pairs, cout, col, rest);
      break;
    case 1:
      panel<1, Add>(a, c, n, w, pairs, cout, col, rest);
      break;
    default:
      break;
  }
}

// Pairs per sub-block of the weight-gradient tiles (an even count).
constexpr int64_t kOuterPairs = 64;

// dst[q][0:width] = words pairing row 2q's element (low half) with row
// 2q + 1's (high half; zero past n), q < (n + 1) / 2, rows ld words apart.
MK_BF16 void interleave_rows(const uint16_t* const* src, int64_t n, int64_t width, uint32_t* dst,
                             int64_t ld) {
  for (int64_t q = 0; 2 * q < n; ++q) {
    const uint16_t* lo = src[2 * q];
    const uint16_t* hi = 2 * q + 1 < n ? src[2 * q + 1] : nullptr;
    uint32_t* d = dst + q * ld;
    for (int64_t c = 0; c < width; c += 16) {
      const __mmask16 m = lane_mask(width - c);
      // the zero-masked forms (GCC's plain ones start from an undefined value)
      const __m512i l = _mm512_maskz_cvtepu16_epi32(0xFFFF, _mm256_maskz_loadu_epi16(m, lo + c));
      const __m512i h = _mm512_maskz_cvtepu16_epi32(
          0xFFFF, _mm256_maskz_loadu_epi16(hi ? m : 0, (hi ? hi : lo) + c));
      _mm512_mask_storeu_epi32(d + c, m,
                               _mm512_or_si512(l, _mm512_maskz_slli_epi32(0xFFFF, h, 16)));
    }
  }
}

// R rows of `part` (input channels a0 ..) x NV vectors of gradient channels
// (from g0, the last under `last`) over `pairs` interleaved pairs of pairs.
template <int R, int NV>
MK_BF16 inline void outer_tile(const uint32_t* a, int64_t lda, int64_t a0, const uint32_t* g,
                               int64_t ldg, int64_t g0, int64_t pairs, float* part, int64_t ldp,
                               bool fresh, __mmask16 last) {
  __m512 acc[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const __mmask16 m = v + 1 < NV ? __mmask16(0xFFFF) : last;
      acc[r][v] = fresh ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m, part + r * ldp + 16 * v);
    }
  for (int64_t q = 0; q < pairs; ++q) {
    __m512bh gv[NV];
    const uint32_t* gq = g + q * ldg + g0;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      gv[v] = (__m512bh)(v + 1 < NV ? _mm512_loadu_si512(gq + 16 * v)
                                    : _mm512_maskz_loadu_epi32(last, gq + 16 * v));
    const uint32_t* aq = a + q * lda + a0;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512bh b = (__m512bh)_mm512_set1_epi32(static_cast<int32_t>(aq[r]));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], b, gv[v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      _mm512_mask_storeu_ps(part + r * ldp + 16 * v, v + 1 < NV ? __mmask16(0xFFFF) : last,
                            acc[r][v]);
}

template <int NV, size_t... I>
MK_BF16 void outer_tail(int rest, const uint32_t* a, int64_t lda, int64_t a0, const uint32_t* g,
                        int64_t ldg, int64_t g0, int64_t pairs, float* part, int64_t ldp,
                        bool fresh, __mmask16 last, std::index_sequence<I...>) {
  ((rest == static_cast<int>(I) + 1
        ? outer_tile<I + 1, NV>(a, lda, a0, g, ldg, g0, pairs, part, ldp, fresh, last)
        : void()),
   ...);
}

// All input channels of one panel of gradient channels [g0, g0 + cols).
template <int NV>
MK_BF16 void outer_panel(const uint32_t* a, int64_t lda, int64_t cin, const uint32_t* g,
                         int64_t ldg, int64_t g0, int64_t cols, int64_t pairs, float* part,
                         int64_t cout, bool fresh) {
  constexpr int R = kTileRows<NV>;
  const __mmask16 last = lane_mask(cols - 16 * (NV - 1));
  int64_t ci = 0;
  for (; ci + R <= cin; ci += R)
    outer_tile<R, NV>(a, lda, ci, g, ldg, g0, pairs, part + ci * cout + g0, cout, fresh, last);
  const int rest = static_cast<int>(cin - ci);
  if (rest > 0)
    outer_tail<NV>(rest, a, lda, ci, g, ldg, g0, pairs, part + ci * cout + g0, cout, fresh, last,
                   std::make_index_sequence<R - 1>());
}

MK_BF16 void outer_panels(const uint32_t* a, int64_t lda, const uint32_t* g, int64_t ldg,
                          int64_t pairs, int64_t cin, int64_t cout, float* part, bool fresh) {
  int64_t q = 0;
  for (; q + 64 <= cout; q += 64)
    outer_panel<4>(a, lda, cin, g, ldg, q, 64, pairs, part, cout, fresh);
  const int64_t rest = cout - q;
  switch ((rest + 15) / 16) {
    case 4:
      outer_panel<4>(a, lda, cin, g, ldg, q, rest, pairs, part, cout, fresh);
      break;
    case 3:
      outer_panel<3>(a, lda, cin, g, ldg, q, rest, pairs, part, cout, fresh);
      break;
    case 2:
      outer_panel<2>(a, lda, cin, g, ldg, q, rest, pairs, part, cout, fresh);
      break;
    case 1:
      outer_panel<1>(a, lda, cin, g, ldg, q, rest, pairs, part, cout, fresh);
      break;
    default:
      break;
  }
}

}  // namespace

void outer_accumulate_bf16(const uint16_t* const* a, const uint16_t* const* g, int64_t n,
                           int64_t cin, int64_t cout, float* part, bool fresh) {
  if (n == 0) {
    if (fresh) std::fill(part, part + cin * cout, 0.0f);
    return;
  }
  // Each sub-block's rows interleaved two by two (the dot products' operand
  // layout), at strides padded by a cache line (no cache-set conflicts).
  const int64_t lda = cin + 16, ldg = cout + 16;
  thread_local std::vector<uint32_t> buf;
  buf.resize(static_cast<size_t>(kOuterPairs / 2 * (lda + ldg)));
  uint32_t* pa = buf.data();
  uint32_t* pg = pa + kOuterPairs / 2 * lda;
  for (int64_t p0 = 0; p0 < n; p0 += kOuterPairs) {
    const int64_t m = std::min(kOuterPairs, n - p0);
    interleave_rows(a + p0, m, cin, pa, lda);
    interleave_rows(g + p0, m, cout, pg, ldg);
    outer_panels(pa, lda, pg, ldg, (m + 1) / 2, cin, cout, part, fresh && p0 == 0);
  }
}

bool gather_gemm_bf16_supported(int64_t cin, int64_t cout) {
  return cin > 0 && cin % 2 == 0 && cout > 0 && cout % 8 == 0 && fk::cpu_avx512_bf16();
}

void pack_pairs_bf16(const uint16_t* w, int64_t cin, int64_t cout, uint32_t* out) {
  FK_CHECK(cin % 2 == 0, "minkowski::pack_pairs_bf16", "an even C_in", std::to_string(cin));
  for (int64_t j = 0; j < cin / 2; ++j)
    for (int64_t c = 0; c < cout; ++c)
      out[j * cout + c] = static_cast<uint32_t>(w[2 * j * cout + c]) |
                          static_cast<uint32_t>(w[(2 * j + 1) * cout + c]) << 16;
}

void gather_gemm_bf16(const uint16_t* f, int64_t ldf, const int32_t* rows, int64_t n,
                      const uint32_t* wp, int64_t cin, int64_t cout, float* out, int64_t ldo) {
  // Row pointers in slices, so the panels' tiles see the add kernel's layout.
  constexpr int64_t kSlice = 96;
  const uint16_t* a[kSlice];
  float* c[kSlice];
  for (int64_t p0 = 0; p0 < n; p0 += kSlice) {
    const int64_t m = std::min(kSlice, n - p0);
    for (int64_t p = 0; p < m; ++p) {
      a[p] = f + (rows ? static_cast<int64_t>(rows[p0 + p]) : p0 + p) * ldf;
      c[p] = out + (p0 + p) * ldo;
    }
    all_panels<false>(a, c, m, wp, cin, cout);
  }
}

void gather_gemm_add_bf16(const uint16_t* const* a, float* const* c, int64_t n, const uint32_t* wp,
                          int64_t cin, int64_t cout) {
  all_panels<true>(a, c, n, wp, cin, cout);
}

}  // namespace minkowski
