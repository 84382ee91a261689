#include "nefi/field/dense_gemm_bf16.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "fk/cpu_isa.h"
#include "fk/parallel.h"
#include "nefi/field/dense_gemm_tile.h"

// GCC 12 flags the _mm512_undefined_ps pass-through inside _mm512_{min,max}_ps
// (a false positive in its own header).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace nefi {
namespace {

using dense_tile::Epilogue;
using dense_tile::kMR;
using dense_tile::kNR;
using dense_tile::round_up;

// Two bf16 of consecutive k, the lower k in the low half: the unit vdpbf16ps
// multiplies (lane i of the result gains a.lo b.lo + a.hi b.hi). may_alias:
// A's bf16 rows (DenseBf16Sides) are read in place as pairs.
typedef uint32_t Pair __attribute__((may_alias));

// K block in pairs (a B panel of 256 pairs x 32 columns is 32 KiB, the same
// bytes as dense_gemm's f32 panel: it stays in L1d) and M block (144 rows of
// packed A, 144 KiB: stays in L2).
constexpr int64_t kKP = 256, kMC = 144;
// Rows of a by-columns A pack: a multiple of the tile's 12 rows and of the
// 16 lanes it is packed with.
constexpr int64_t kColPackRows = 48;

__mmask16 lanes(int64_t n) {
  return static_cast<__mmask16>(n >= 16 ? 0xFFFF : n <= 0 ? 0 : (1u << n) - 1);
}

// 16 pairs (lo[i], hi[i]) rounded to bf16: both halves converted by one
// vcvtne2ps2bf16 and interleaved by a word permute.
__attribute__((target("avx512f,avx512bw,avx512bf16"))) __m512i pairs16(__m512 lo, __m512 hi) {
  const __m512i both = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
  alignas(64) static constexpr uint16_t kInterleave[32] = {
      0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i interleave = _mm512_load_si512(kInterleave);
  return _mm512_permutexvar_epi16(interleave, both);
}

// 16 pairs from 32 consecutive floats s[0 : 32] (only the first n read, the
// rest zero): in memory order, which is pair order.
__attribute__((target("avx512f,avx512bw,avx512bf16"))) __m512i row_pairs16(const float* s,
                                                                           int64_t n) {
  const __m512 x0 = _mm512_maskz_loadu_ps(lanes(n), s);
  const __m512 x1 = _mm512_maskz_loadu_ps(lanes(n - 16), s + 16);
  return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(x1, x0));
}

// 16 pairs (s0[i], s1[i]) of bf16 already rounded (only the lanes of m
// read, the rest zero; s1 null: zero high halves).
__attribute__((target("avx512f,avx512bw,avx512vl"))) __m512i bf16_pairs16(const uint16_t* s0,
                                                                          const uint16_t* s1,
                                                                          __mmask16 m) {
  const __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, s0));
  if (!s1) return lo;
  const __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, s1));
  return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
}

// pack_b's layout from B (k, n) already in bf16 (row stride ldb).
__attribute__((target("avx512f,avx512bw,avx512vl"))) void pack_b_bf16(const uint16_t* b,
                                                                      int64_t ldb, int64_t p0,
                                                                      int64_t kc, int64_t n,
                                                                      Pair* dst) {
  const int64_t kp = (kc + 1) / 2;
  for (int64_t jr = 0; jr < n; jr += kNR) {
    const int64_t nr = std::min<int64_t>(kNR, n - jr);
    const __mmask16 m0 = lanes(nr), m1 = lanes(nr - 16);
    Pair* d = dst + jr * kp;
    for (int64_t q = 0; q < kp; ++q) {
      const uint16_t* s0 = b + (p0 + 2 * q) * ldb + jr;
      const uint16_t* s1 = 2 * q + 1 < kc ? s0 + ldb : nullptr;
      _mm512_store_si512(d + q * kNR, bf16_pairs16(s0, s1, m0));
      _mm512_store_si512(d + q * kNR + 16, bf16_pairs16(s0 + 16, s1 ? s1 + 16 : nullptr, m1));
    }
  }
}

// pack_a_cols's layout from A (kc, mc) already in bf16 (row stride lda).
__attribute__((target("avx512f,avx512bw,avx512vl"))) void pack_a_cols_bf16(const uint16_t* a,
                                                                           int64_t lda, int64_t mc,
                                                                           int64_t kc, Pair* dst) {
  const int64_t kp = (kc + 1) / 2, rows = round_up(mc, kColPackRows);
  for (int64_t q = 0; q < kp; ++q) {
    const uint16_t* s0 = a + 2 * q * lda;
    const uint16_t* s1 = 2 * q + 1 < kc ? s0 + lda : nullptr;
    for (int64_t r0 = 0; r0 < rows; r0 += 16)
      _mm512_store_si512(dst + q * rows + r0,
                         bf16_pairs16(s0 + r0, s1 ? s1 + r0 : nullptr, lanes(mc - r0)));
  }
}

// c16[0:mr, 0:nr] (row stride ldc16) = c rounded to bf16 (c's tile was just
// written: it is in L1). Full tiles unmasked: masked stores are slow on Zen.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void store_bf16_copy(
    const float* c, int64_t ldc, int64_t mr, int64_t nr, uint16_t* c16, int64_t ldc16) {
  if (nr == kNR) {
    for (int64_t r = 0; r < mr; ++r) {
      const float* cr = c + r * ldc;
      const __m512bh h = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(cr + 16), _mm512_loadu_ps(cr));
      _mm512_storeu_si512(c16 + r * ldc16, reinterpret_cast<__m512i>(h));
    }
    return;
  }
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t j = 0; j < nr; j += 16) {
      const __mmask16 m = lanes(nr - j);
      const __m256bh h = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, c + r * ldc + j));
      _mm256_mask_storeu_epi16(c16 + r * ldc16 + j, m, reinterpret_cast<__m256i>(h));
    }
}

// op(B)[p0 : p0+kc, 0 : n] as pairs in panels of kNR columns: panel jr / kNR
// at dst + jr kp, pair q of column c at [q kNR + c] (kp = ceil(kc / 2); an
// odd kc's last pair and columns past n are zero).
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void pack_b(bool tb, const float* b,
                                                                   int64_t ldb, int64_t p0,
                                                                   int64_t kc, int64_t n,
                                                                   Pair* dst) {
  const int64_t kp = (kc + 1) / 2;
  for (int64_t jr = 0; jr < n; jr += kNR) {
    const int64_t nr = std::min<int64_t>(kNR, n - jr);
    Pair* d = dst + jr * kp;
    if (tb) {  // column c is row jr + c of B: pairs in memory order, scattered by kNR
      if (nr < kNR) std::memset(d, 0, sizeof(Pair) * kNR * kp);
      alignas(64) Pair t[16];
      for (int64_t c = 0; c < nr; ++c) {
        const float* s = b + (jr + c) * ldb + p0;
        for (int64_t q0 = 0; q0 < kp; q0 += 16) {
          _mm512_store_si512(t, row_pairs16(s + 2 * q0, kc - 2 * q0));
          const int64_t len = std::min<int64_t>(16, kp - q0);
          for (int64_t i = 0; i < len; ++i) d[(q0 + i) * kNR + c] = t[i];
        }
      }
      continue;
    }
    const __mmask16 m0 = lanes(nr), m1 = lanes(nr - 16);
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t q = 0; q < kp; ++q) {
      const float* s0 = b + (p0 + 2 * q) * ldb + jr;
      const float* s1 = s0 + ldb;
      const bool odd = 2 * q + 1 < kc;
      _mm512_store_si512(d + q * kNR, pairs16(_mm512_maskz_loadu_ps(m0, s0),
                                              odd ? _mm512_maskz_loadu_ps(m0, s1) : zero));
      _mm512_store_si512(d + q * kNR + 16,
                         pairs16(_mm512_maskz_loadu_ps(m1, s0 + 16),
                                 odd ? _mm512_maskz_loadu_ps(m1, s1 + 16) : zero));
    }
  }
}

// A (mc, kc), element (r, p) at a[r lda + p], as pairs by rows: dst[r kp + q]
// for r < mc rounded up to kMR (the extra rows zero).
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void pack_a_rows(const float* a, int64_t lda,
                                                                        int64_t mc, int64_t kc,
                                                                        Pair* dst) {
  const int64_t kp = (kc + 1) / 2;
  for (int64_t r = 0; r < round_up(mc, kMR); ++r) {
    Pair* d = dst + r * kp;
    if (r >= mc) {
      std::memset(d, 0, sizeof(Pair) * kp);
      continue;
    }
    for (int64_t q0 = 0; q0 < kp; q0 += 16)
      _mm512_mask_storeu_epi32(d + q0, lanes(kp - q0),
                               row_pairs16(a + r * lda + 2 * q0, kc - 2 * q0));
  }
}

// A (mc, kc), element (r, p) at a[p lda + r], as pairs by columns:
// dst[q kColPackRows' + r] with rows to mc rounded up to kColPackRows (zero).
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void pack_a_cols(const float* a, int64_t lda,
                                                                        int64_t mc, int64_t kc,
                                                                        Pair* dst) {
  const int64_t kp = (kc + 1) / 2, rows = round_up(mc, kColPackRows);
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t q = 0; q < kp; ++q) {
    const float* s0 = a + 2 * q * lda;
    const float* s1 = s0 + lda;
    const bool odd = 2 * q + 1 < kc;
    for (int64_t r0 = 0; r0 < rows; r0 += 16) {
      const __mmask16 m = lanes(mc - r0);
      _mm512_store_si512(dst + q * rows + r0,
                         pairs16(_mm512_maskz_loadu_ps(m, s0 + r0),
                                 odd ? _mm512_maskz_loadu_ps(m, s1 + r0) : zero));
    }
  }
}

// c[0:12, 0:32] (row stride ldc) = A B [+ c when load_c], then the epilogue,
// over kp pairs. A's pair (r, q) is a[r lda + q] (kByRows) or a[q lda + r];
// bp is a packed B panel (32 pairs a pair step).
template <bool kByRows>
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void tile_kernel(
    int64_t kp, const Pair* __restrict a, int64_t lda, const Pair* __restrict bp, float* c,
    int64_t ldc, bool load_c, const Epilogue& ep, uint16_t* c16, int64_t ldc16) {
  __m512 lo[kMR], hi[kMR];
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) lo[r] = hi[r] = _mm512_setzero_ps();
  for (int64_t q = 0; q < kp; ++q) {
    const __m512bh b0 = reinterpret_cast<__m512bh>(_mm512_load_si512(bp));
    const __m512bh b1 = reinterpret_cast<__m512bh>(_mm512_load_si512(bp + 16));
#pragma GCC unroll 12
    for (int r = 0; r < kMR; ++r) {
      const Pair pr = kByRows ? a[r * lda + q] : a[r];
      const __m512bh av = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(pr)));
      lo[r] = _mm512_dpbf16_ps(lo[r], av, b0);
      hi[r] = _mm512_dpbf16_ps(hi[r], av, b1);
    }
    if (!kByRows) a += lda;
    bp += kNR;
  }
  if (!c16) {
    dense_tile::finish_tile(lo, hi, c, ldc, load_c, ep);
    return;
  }
  // The bf16 copy from the registers: reading the rows back waits for their
  // stores to reach L1 (a cache miss each; the load cannot be forwarded).
  const __m512 bias0 = dense_tile::bias_lanes(ep, 0), bias1 = dense_tile::bias_lanes(ep, 1);
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) {
    float* cr = c + r * ldc;
    __m512 x0 = lo[r], x1 = hi[r];
    dense_tile::epilogue_row(x0, x1, cr, load_c, ep, bias0, bias1);
    _mm512_storeu_ps(cr, x0);
    _mm512_storeu_ps(cr + 16, x1);
    _mm512_storeu_si512(c16 + r * ldc16, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(x1, x0)));
  }
}

// One tile of C, mr x nr valid, over packed A (always kMR rows, zero past
// mr): short tiles only need C and the bias padded. c16: also C rounded to
// bf16 (row stride ldc16).
void tile(int64_t kp, const Pair* a, int64_t lda, bool by_rows, const Pair* bp, float* c,
          int64_t ldc, int64_t mr, int64_t nr, bool load_c, const Epilogue& ep, uint16_t* c16,
          int64_t ldc16) {
  if (mr == kMR && nr == kNR) {
    by_rows ? tile_kernel<true>(kp, a, lda, bp, c, ldc, load_c, ep, c16, ldc16)
            : tile_kernel<false>(kp, a, lda, bp, c, ldc, load_c, ep, c16, ldc16);
    return;
  }
  dense_tile::through_padded_tile(
      c, ldc, mr, nr, load_c, ep, [&](float* t, int64_t ldt, const Epilogue& e) {
        by_rows ? tile_kernel<true>(kp, a, lda, bp, t, ldt, load_c, e, nullptr, 0)
                : tile_kernel<false>(kp, a, lda, bp, t, ldt, load_c, e, nullptr, 0);
      });
  if (c16) store_bf16_copy(c, ldc, mr, nr, c16, ldc16);
}

// The tiles of one M block (mc rows, every column) over packed B. Packed A
// holds zero rows up to a multiple of kMR; A's rows read in place do not, so
// a short last tile goes through a zero-padded copy. c16: C's bf16 copy as well.
void block_tiles(const Pair* a, int64_t ld, bool by_cols, bool in_place, int64_t kp, int64_t mc,
                 int64_t n, const Pair* bp, float* c, int64_t ldc, bool load_c, const float* bias,
                 DenseActivation act, uint16_t* c16, int64_t ldc16) {
  static thread_local dense_tile::Scratch<uint32_t> edge_buf;
  for (int64_t jr = 0; jr < n; jr += kNR) {
    const Epilogue ep{bias ? bias + jr : nullptr, act};
    const int64_t nr = std::min<int64_t>(kNR, n - jr);
    for (int64_t ir = 0; ir < mc; ir += kMR) {
      const int64_t mr = std::min<int64_t>(kMR, mc - ir);
      const Pair* at = by_cols ? a + ir : a + ir * ld;
      int64_t lda = ld;
      if (in_place && mr < kMR) {
        Pair* e = edge_buf.get(static_cast<size_t>(kMR * kp));
        std::memset(e, 0, sizeof(Pair) * kMR * kp);
        for (int64_t r = 0; r < mr; ++r) std::memcpy(e + r * kp, at + r * ld, sizeof(Pair) * kp);
        at = e;
        lda = kp;
      }
      float* ct = c + ir * ldc + jr;
      tile(kp, at, lda, !by_cols, bp + jr * kp, ct, ldc, mr, nr, load_c, ep,
           c16 ? c16 + ir * ldc16 + jr : nullptr, ldc16);
    }
  }
}

}  // namespace

bool dense_gemm_bf16_native() {
  return fk::cpu_avx512_bf16();
}

void round_to_bf16(const float* src, int64_t lds, int64_t rows, int64_t cols, uint16_t* dst,
                   int64_t ldd) {
  for (int64_t r0 = 0; r0 < rows; r0 += kMR)
    store_bf16_copy(src + r0 * lds, lds, std::min<int64_t>(kMR, rows - r0), cols, dst + r0 * ldd,
                    ldd);
}

void dense_gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                     int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                     bool accumulate, const float* bias, DenseActivation act,
                     const DenseBf16Sides& sides) {
  static thread_local dense_tile::Scratch<uint32_t> b_buf;
  Pair* bp = b_buf.get(static_cast<size_t>(round_up(n, kNR) * kKP));
  const int64_t blocks = (m + kMC - 1) / kMC;
  const bool a_in_place = sides.a && !trans_a;
  for (int64_t pc = 0; pc < k; pc += 2 * kKP) {
    const int64_t kc = std::min(2 * kKP, k - pc), kp = (kc + 1) / 2;
    const bool load_c = accumulate || pc > 0, last = pc + 2 * kKP >= k;
    if (sides.b && !trans_b) {
      pack_b_bf16(sides.b, sides.ldb, pc, kc, n, bp);
    } else {
      pack_b(trans_b, b, ldb, pc, kc, n, bp);
    }
    fk::parallel_for(0, blocks, 1, [&](int64_t lo, int64_t hi) {
      static thread_local dense_tile::Scratch<uint32_t> a_buf;
      Pair* ap = a_buf.get(static_cast<size_t>(round_up(kMC, kColPackRows) * kKP));
      for (int64_t blk = lo; blk < hi; ++blk) {
        const int64_t i0 = blk * kMC, mc = std::min(kMC, m - i0);
        // A's pair (r, q) at a_blk[r ld + q] (by rows) or a_blk[q ld + r].
        const Pair* a_blk = ap;
        int64_t ld = kp;
        if (a_in_place) {
          a_blk = reinterpret_cast<const Pair*>(sides.a + i0 * sides.lda + pc);
          ld = sides.lda / 2;
        } else if (trans_a) {
          if (sides.a) {
            pack_a_cols_bf16(sides.a + pc * sides.lda + i0, sides.lda, mc, kc, ap);
          } else {
            pack_a_cols(a + pc * lda + i0, lda, mc, kc, ap);
          }
          ld = round_up(mc, kColPackRows);
        } else {
          pack_a_rows(a + i0 * lda + pc, lda, mc, kc, ap);
        }
        block_tiles(a_blk, ld, trans_a, a_in_place, kp, mc, n, bp, c + i0 * ldc, ldc, load_c,
                    last ? bias : nullptr, last ? act : DenseActivation::None,
                    last && sides.c ? sides.c + i0 * sides.ldc : nullptr, sides.ldc);
      }
    });
  }
}

}  // namespace nefi
