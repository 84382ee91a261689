#include "nefi/field/dense_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
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
using Scratch = dense_tile::Scratch<float>;

// K block (a B panel of 256 x 32 floats is 32 KiB: stays in L1d) and M block
// (rows of A read in place: 144 x 256 floats, 144 KiB, stay in L2).
constexpr int64_t kKC = 256, kMC = 144;

// op(B)[p0 : p0+kc, 0 : n] into panels of kNR columns (columns past n zero).
// Rows of a plain B are copied with masked vector moves (a variable-length
// memcpy here compiles to rep movs, which cost more than the tile's FMAs).
__attribute__((target("avx512f"))) void pack_b(bool tb, const float* b, int64_t ldb, int64_t p0,
                                               int64_t kc, int64_t n, float* dst) {
  for (int64_t jr = 0; jr < n; jr += kNR) {
    const int64_t nr = std::min<int64_t>(kNR, n - jr);
    float* d = dst + jr * kc;
    if (tb) {
      if (nr < kNR) std::memset(d, 0, sizeof(float) * kNR * kc);
      for (int64_t c = 0; c < nr; ++c) {
        const float* s = b + (jr + c) * ldb + p0;
        for (int64_t p = 0; p < kc; ++p) d[p * kNR + c] = s[p];
      }
      continue;
    }
    const __mmask16 m0 = static_cast<__mmask16>(nr >= 16 ? 0xFFFF : (1u << nr) - 1);
    const __mmask16 m1 = static_cast<__mmask16>(nr >= 32   ? 0xFFFF
                                                : nr <= 16 ? 0
                                                           : (1u << (nr - 16)) - 1);
    for (int64_t p = 0; p < kc; ++p) {
      const float* s = b + (p0 + p) * ldb + jr;
      _mm512_store_ps(d + p * kNR, _mm512_maskz_loadu_ps(m0, s));
      _mm512_store_ps(d + p * kNR + 16, _mm512_maskz_loadu_ps(m1, s + 16));
    }
  }
}

// A hint to bring the line at a + offset floats into L1.
inline void prefetch(const float* a, int64_t offset) {
  const auto at = reinterpret_cast<uintptr_t>(a) + static_cast<uintptr_t>(offset) * sizeof(float);
  _mm_prefetch(reinterpret_cast<const char*>(at), _MM_HINT_T0);
}

// c[0:12, 0:32] (row stride ldc) = A B [+ c when load_c], then the epilogue.
// A's element (r, p) is a[r lda + p] (kByRows) or a[p lda + r]; bp is a
// packed B panel (32 floats a k step).
template <bool kByRows>
__attribute__((target("avx512f"))) void tile_kernel(int64_t kc, const float* __restrict a,
                                                    int64_t lda, const float* __restrict bp,
                                                    float* c, int64_t ldc, bool load_c,
                                                    const Epilogue& ep) {
  __m512 lo[kMR], hi[kMR];
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) lo[r] = hi[r] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    // Prefetch the next tile's rows, a cache line of one row per step: a
    // full-size MLP's activations (64^2 x 32 rows) are far past L3 and reach
    // the kernel as short strided runs the hardware prefetcher starts late.
    // Past the last tile the address is past the array (a prefetch never
    // faults; prefetch() adds it as an integer).
    if constexpr (kByRows) {
      const int64_t q = p & 15;
      if (q < kMR) prefetch(a, (kMR + q) * lda + p);
    } else {
      prefetch(a, 8 * lda);  // the dW pass: A's rows 8 k steps ahead
    }
    const __m512 b0 = _mm512_load_ps(bp), b1 = _mm512_load_ps(bp + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kMR; ++r) {
      const __m512 av = _mm512_set1_ps(kByRows ? a[r * lda + p] : a[r]);
      lo[r] = _mm512_fmadd_ps(av, b0, lo[r]);
      hi[r] = _mm512_fmadd_ps(av, b1, hi[r]);
    }
    if (!kByRows) a += lda;
    bp += kNR;
  }
  dense_tile::finish_tile(lo, hi, c, ldc, load_c, ep);
}

// One tile of C, mr x nr valid, A's rows at a (op(A) element (r, p) at
// a[r lda + p] when by_rows, else a[p lda + r]). Edge tiles go through a
// zero-padded copy of C and the bias (and of A when short of rows).
void tile(int64_t kc, const float* a, int64_t lda, bool by_rows, const float* bp, float* c,
          int64_t ldc, int64_t mr, int64_t nr, bool load_c, const Epilogue& ep) {
  if (mr == kMR && nr == kNR) {
    by_rows ? tile_kernel<true>(kc, a, lda, bp, c, ldc, load_c, ep)
            : tile_kernel<false>(kc, a, lda, bp, c, ldc, load_c, ep);
    return;
  }
  // Short of rows: A through a zero-padded copy (by columns, kMR apart).
  static thread_local Scratch a_edge;
  if (mr < kMR) {
    float* ap = a_edge.get(static_cast<size_t>(kMR * kc));
    std::memset(ap, 0, sizeof(float) * kMR * kc);
    for (int64_t p = 0; p < kc; ++p)
      for (int64_t r = 0; r < mr; ++r) ap[p * kMR + r] = by_rows ? a[r * lda + p] : a[p * lda + r];
    a = ap;
    lda = kMR;
    by_rows = false;
  }
  dense_tile::through_padded_tile(
      c, ldc, mr, nr, load_c, ep, [&](float* t, int64_t ldt, const Epilogue& padded) {
        by_rows ? tile_kernel<true>(kc, a, lda, bp, t, ldt, load_c, padded)
                : tile_kernel<false>(kc, a, lda, bp, t, ldt, load_c, padded);
      });
}

}  // namespace

bool dense_gemm_fits(int64_t m, int64_t n, int64_t k) {
  return m >= kMR && n >= kNR / 2 && k >= 1 && fk::cpu_avx512();
}

void dense_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate,
                const float* bias, DenseActivation act) {
  static thread_local Scratch b_buf;
  float* bp = b_buf.get(static_cast<size_t>(round_up(n, kNR) * kKC));
  const int64_t blocks = (m + kMC - 1) / kMC;
  for (int64_t pc = 0; pc < k; pc += kKC) {
    const int64_t kc = std::min(kKC, k - pc);
    const bool load_c = accumulate || pc > 0, last = pc + kKC >= k;
    pack_b(trans_b, b, ldb, pc, kc, n, bp);
    fk::parallel_for(0, blocks, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t blk = lo; blk < hi; ++blk) {
        const int64_t i0 = blk * kMC, mc = std::min(kMC, m - i0);
        for (int64_t jr = 0; jr < n; jr += kNR) {
          const Epilogue ep{last && bias ? bias + jr : nullptr, last ? act : DenseActivation::None};
          for (int64_t ir = 0; ir < mc; ir += kMR) {
            const int64_t i = i0 + ir;
            const float* ai = trans_a ? a + pc * lda + i : a + i * lda + pc;
            tile(kc, ai, lda, !trans_a, bp + jr * kc, c + i * ldc + jr, ldc,
                 std::min<int64_t>(kMR, mc - ir), std::min<int64_t>(kNR, n - jr), load_c, ep);
          }
        }
      }
    });
  }
}

}  // namespace nefi
