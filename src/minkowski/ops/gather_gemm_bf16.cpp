// AVX-512 BF16 register tiles (gather_gemm_bf16.h): the shapes of the f32
// AVX-512 tiles (gather_gemm_avx512.cpp), 6 rows x 64 columns or 8 rows x up
// to 48, with one vdpbf16ps (two input channels) where those take one FMA;
// the loops around them are gather_gemm_tiles.h's. Compiled with target
// attributes only; called only when fk::cpu_avx512_bf16() says the CPU has it.
#include "minkowski/ops/gather_gemm_bf16.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "fk/cpu_isa.h"
#include "fk/error.h"

#define MK_BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx2,fma")))
#define MK_TILE_TARGET MK_BF16
#include "minkowski/ops/gather_gemm_tiles.h"

namespace minkowski {

namespace {

using namespace detail;

// The channel pair (2j, 2j + 1) of a row, as one 32-bit word in every lane.
MK_BF16 inline __m512bh pair_of(const uint16_t* row, int64_t j) {
  int32_t v;
  std::memcpy(&v, row + 2 * j, sizeof(v));
  return (__m512bh)_mm512_set1_epi32(v);
}

// c[r][0:cols] (+)= a[r] . W for R rows, NV vectors of columns (the last
// under `last`); w: `pairs` rows of packed pairs, ldw words apart.
struct Bf16Rows {
  using Src = uint16_t;
  using Mat = uint32_t;
  static int64_t depth(int64_t cin) { return cin / 2; }

  template <int R, int NV, bool Add>
  MK_BF16 static inline void tile(const uint16_t* const* a, const uint32_t* w, int64_t pairs,
                                  int64_t ldw, float* const* c, __mmask16 last) {
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
};

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
// (from g0, the last under `last`) over `pairs` interleaved pairs of pairs
// (row q of a and g: pairs 2q and 2q + 1).
struct Bf16Outer {
  template <int R, int NV, typename ARows, typename GRows>
  MK_BF16 static inline void tile(ARows a, int64_t a0, GRows g, int64_t g0, int64_t pairs,
                                  float* part, int64_t ldp, bool fresh, __mmask16 last) {
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
      const uint32_t* gq = g[q] + g0;
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        gv[v] = (__m512bh)(v + 1 < NV ? _mm512_loadu_si512(gq + 16 * v)
                                      : _mm512_maskz_loadu_epi32(last, gq + 16 * v));
      const uint32_t* aq = a[q] + a0;
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
};

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
    outer_panels<Bf16Outer>(ChannelColumns<StridedRows<uint32_t>>{{pa, lda}},
                            StridedRows<uint32_t>{pg, ldg}, (m + 1) / 2, cin, cout, part,
                            fresh && p0 == 0);
  }
}

bool gather_gemm_bf16_supported(int64_t cin, int64_t cout) {
  return cin > 0 && cin % 2 == 0 && cout > 0 && cout % 8 == 0 && fk::cpu_avx512_bf16();
}

void pack_pairs_bf16(const uint16_t* w, int64_t cin, int64_t cout, uint32_t* out) {
  FK_CHECK(cin % 2 == 0, "minkowski::pack_pairs_bf16", "an even C_in", fk::to_text(cin));
  for (int64_t j = 0; j < cin / 2; ++j)
    for (int64_t c = 0; c < cout; ++c)
      out[j * cout + c] = static_cast<uint32_t>(w[2 * j * cout + c]) |
                          static_cast<uint32_t>(w[(2 * j + 1) * cout + c]) << 16;
}

void gather_gemm_bf16(const uint16_t* f, int64_t ldf, const int32_t* rows, int64_t n,
                      const uint32_t* wp, int64_t cin, int64_t cout, float* out, int64_t ldo) {
  rows_times<Bf16Rows>(f, ldf, rows, n, wp, cin, cout, out, ldo);
}

void gather_gemm_add_bf16(const uint16_t* const* a, float* const* c, int64_t n, const uint32_t* wp,
                          int64_t cin, int64_t cout) {
  all_panels<Bf16Rows, true>(a, c, n, wp, cin, cout);
}

}  // namespace minkowski
