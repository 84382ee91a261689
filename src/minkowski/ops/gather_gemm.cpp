#include "minkowski/ops/gather_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "fk/cpu_isa.h"
#include "minkowski/ops/gather_gemm_isa.h"

namespace minkowski {

namespace {

using detail::prefetch_rows;

// 16 ymm registers: 3 rows x 4 vectors (32 columns) per tile, the weight
// operands folded into the FMAs.
constexpr int kRows = 3;
// Pairs per sub-block of the weight-gradient tiles, and the C_out from which
// their rows are packed (outer_accumulate_f32).
constexpr int64_t kOuterPairs = 64;
constexpr int64_t kPackWidth = 128;

template <int NV, int R>
__attribute__((target("avx2,fma"))) inline void tile(const float* const* a, const float* w,
                                                     int64_t cin, int64_t ldw, float* const* c) {
  __m256 acc[R][NV];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_ps();
  for (int64_t x = 0; x < cin; ++x) {
    const float* wr = w + x * ldw;
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      __m256 b = _mm256_broadcast_ss(a[r] + x);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        acc[r][v] = _mm256_fmadd_ps(b, _mm256_loadu_ps(wr + 8 * v), acc[r][v]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm256_storeu_ps(c[r] + 8 * v, acc[r][v]);
}

template <int NV>
__attribute__((target("avx2,fma"))) void run_columns(const float* f, int64_t ldf,
                                                     const int32_t* rows, int64_t n, const float* w,
                                                     int64_t cin, int64_t ldw, float* out,
                                                     int64_t ldo) {
  const float* a[kRows];
  float* c[kRows];
  int64_t p = 0;
  for (; p + kRows <= n; p += kRows) {
    for (int r = 0; r < kRows; ++r) {
      a[r] = f + (rows ? static_cast<int64_t>(rows[p + r]) : p + r) * ldf;
      c[r] = out + (p + r) * ldo;
    }
    if (rows && p + 2 * kRows <= n)
      for (int r = 0; r < kRows; ++r) {
        const char* q =
            reinterpret_cast<const char*>(f + static_cast<int64_t>(rows[p + kRows + r]) * ldf);
        _mm_prefetch(q, _MM_HINT_T0);
        _mm_prefetch(q + 64, _MM_HINT_T0);
      }
    tile<NV, kRows>(a, w, cin, ldw, c);
  }
  for (; p < n; ++p) {
    a[0] = f + (rows ? static_cast<int64_t>(rows[p]) : p) * ldf;
    c[0] = out + p * ldo;
    tile<NV, 1>(a, w, cin, ldw, c);
  }
}

// R rows x NV vectors: c[r][0:8NV] += a[r] . w (w: cin rows, ldw apart). The
// classic 6 x 16 register tile (12 accumulators, per input channel 2 loads of
// w and 6 broadcasts for 12 FMAs); each term starts from zero and is added to
// its row at the end, exactly like the per-pair tile + scatter, so results are
// bit-identical.
template <int R, int NV>
__attribute__((target("avx2,fma"))) inline void add_tile(const float* const* a, const float* w,
                                                         int64_t cin, int64_t ldw,
                                                         float* const* c) {
  __m256 acc[R][NV];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_ps();
  for (int64_t x = 0; x < cin; ++x) {
    __m256 wv[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) wv[v] = _mm256_loadu_ps(w + x * ldw + 8 * v);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      __m256 b = _mm256_broadcast_ss(a[r] + x);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_ps(b, wv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v)
      _mm256_storeu_ps(c[r] + 8 * v, _mm256_add_ps(_mm256_loadu_ps(c[r] + 8 * v), acc[r][v]));
}

template <int NV>
void add_panel(const float* const* a, float* const* c, int64_t n, const float* w, int64_t cin,
               int64_t ldw, int64_t col) {
  float* cc[6];
  int64_t i = 0;
  if (col == 0) prefetch_rows(a, std::min<int64_t>(n, 12), cin);
  for (; i + 6 <= n; i += 6) {
    if (col == 0 && i + 12 < n) prefetch_rows(a + i + 12, std::min<int64_t>(6, n - i - 12), cin);
    for (int r = 0; r < 6; ++r) cc[r] = c[i + r] + col;
    add_tile<6, NV>(a + i, w, cin, ldw, cc);
  }
  const int64_t rest = n - i;
  for (int r = 0; r < rest; ++r) cc[r] = c[i + r] + col;
  switch (rest) {
    case 5:
      add_tile<5, NV>(a + i, w, cin, ldw, cc);
      break;
    case 4:
      add_tile<4, NV>(a + i, w, cin, ldw, cc);
      break;
    case 3:
      add_tile<3, NV>(a + i, w, cin, ldw, cc);
      break;
    case 2:
      add_tile<2, NV>(a + i, w, cin, ldw, cc);
      break;
    case 1:
      add_tile<1, NV>(a + i, w, cin, ldw, cc);
      break;
    default:
      break;
  }
}

// The weight-gradient tile: R rows of `part` (input channels a0 .. a0+R) x
// NV*8 columns (gradient channels g0 ..), over n pairs read in place: pair p's
// input row a[p] and gradient row g[p]. The classic 6 x 16 register tile: 12
// accumulators, per pair 2 loads and 6 broadcasts for 12 FMAs (the rows are
// the block's, already in L1/L2, so no packing copy). Accumulators start from
// `part` and each element sums its pairs in ascending order, so the result
// does not depend on how the pairs are sliced.
template <int R, int NV>
__attribute__((target("avx2,fma"))) void outer_tile(const float* const* a, int64_t a0,
                                                    const float* const* g, int64_t g0, int64_t n,
                                                    float* part, int64_t ldp, bool fresh) {
  __m256 acc[R][NV];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v)
      acc[r][v] = fresh ? _mm256_setzero_ps() : _mm256_loadu_ps(part + r * ldp + 8 * v);
  for (int64_t p = 0; p < n; ++p) {
    __m256 gv[NV];
    const float* gp = g[p] + g0;
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) gv[v] = _mm256_loadu_ps(gp + 8 * v);
    const float* ap = a[p] + a0;
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      __m256 b = _mm256_broadcast_ss(ap + r);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_ps(b, gv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) _mm256_storeu_ps(part + r * ldp + 8 * v, acc[r][v]);
}

// All input channels of one 8*NV-column panel of gradient channels g0...
template <int NV>
void outer_panel(const float* const* a, int64_t cin, const float* const* g, int64_t g0, int64_t n,
                 float* part, int64_t cout, bool fresh) {
  int64_t ci = 0;
  for (; ci + 6 <= cin; ci += 6) outer_tile<6, NV>(a, ci, g, g0, n, part + ci * cout, cout, fresh);
  switch (cin - ci) {
    case 5:
      outer_tile<5, NV>(a, ci, g, g0, n, part + ci * cout, cout, fresh);
      break;
    case 4:
      outer_tile<4, NV>(a, ci, g, g0, n, part + ci * cout, cout, fresh);
      break;
    case 3:
      outer_tile<3, NV>(a, ci, g, g0, n, part + ci * cout, cout, fresh);
      break;
    case 2:
      outer_tile<2, NV>(a, ci, g, g0, n, part + ci * cout, cout, fresh);
      break;
    case 1:
      outer_tile<1, NV>(a, ci, g, g0, n, part + ci * cout, cout, fresh);
      break;
    default:
      break;
  }
}

// dst[p * ld ..][0:width] = src[p][0:width] (width a multiple of 8), p in
// [0, n), prefetching src[n + p] for p < ahead (the next sub-block's rows).
__attribute__((target("avx2,fma"))) void pack_rows(const float* const* src, int64_t n,
                                                   int64_t width, float* dst, int64_t ld,
                                                   int64_t ahead) {
  for (int64_t p = 0; p < n; ++p) {
    if (p < ahead) prefetch_rows<_MM_HINT_T1>(src + n + p, 1, width);
    for (int64_t c = 0; c < width; c += 8)
      _mm256_storeu_ps(dst + p * ld + c, _mm256_loadu_ps(src[p] + c));
  }
}

// One sub-block of outer_accumulate_f32 (n > 0) on the widest tiles.
void outer_block(bool wide, const float* const* a, const float* const* g, int64_t n, int64_t cin,
                 int64_t cout, float* part, bool fresh) {
  if (wide) return detail::outer_accumulate_f32_avx512(a, g, n, cin, cout, part, fresh);
  int64_t q = 0;
  for (; q + 16 <= cout; q += 16) outer_panel<2>(a, cin, g, q, n, part + q, cout, fresh);
  if (q < cout) outer_panel<1>(a, cin, g, q, n, part + q, cout, fresh);
}

bool has_avx2() {
  return fk::cpu_isa() >= fk::CpuIsa::Avx2;
}

bool has_avx512() {
  return fk::cpu_isa() >= fk::CpuIsa::Avx512;
}

}  // namespace

bool gather_gemm_supported(int64_t cout) {
  return cout > 0 && cout % 8 == 0 && has_avx2();
}

void gather_gemm_f32(const float* f, int64_t ldf, const int32_t* rows, int64_t n, const float* w,
                     int64_t cin, int64_t cout, float* out, int64_t ldo) {
  if (has_avx512()) return detail::gather_gemm_f32_avx512(f, ldf, rows, n, w, cin, cout, out, ldo);
  int64_t col = 0;
  for (; col + 32 <= cout; col += 32)
    run_columns<4>(f, ldf, rows, n, w + col, cin, cout, out + col, ldo);
  switch ((cout - col) / 8) {
    case 3:
      run_columns<3>(f, ldf, rows, n, w + col, cin, cout, out + col, ldo);
      break;
    case 2:
      run_columns<2>(f, ldf, rows, n, w + col, cin, cout, out + col, ldo);
      break;
    case 1:
      run_columns<1>(f, ldf, rows, n, w + col, cin, cout, out + col, ldo);
      break;
    default:
      break;
  }
}

void outer_accumulate_f32(const float* const* a, const float* const* g, int64_t n, int64_t cin,
                          int64_t cout, float* part, bool fresh) {
  if (n == 0) {
    if (fresh) std::fill(part, part + cin * cout, 0.0f);
    return;
  }
  // Rows of C_out < kPackWidth floats: one pass of the tiles over the pairs,
  // read in place, the feature rows prefetched first (measured best with
  // buckets of a few hundred pairs). Wider ones: sub-blocks of at most
  // kOuterPairs pairs (equal, so no short last one), the sub-block's gradient
  // rows copied into a buffer whose row stride is padded by one cache line: in
  // place, C x 4 bytes apart (a multiple of 512; a bucket's gradient rows are
  // mostly consecutive rows), a panel's rows fall on a few cache sets and no
  // longer fit L1. Per panel the sub-block's gradient panel then stays in L1
  // across all input-channel tiles, the accumulators are loaded and stored once
  // per sub-block (from L1/L2: the partial is one offset's C_in x C_out), and
  // the next sub-block's rows are pulled into L2 meanwhile; unlike one pass,
  // the time per pair stays flat as buckets grow (1.5-1.9x at 1000 pairs,
  // C = 128, 256). No bit changes: each element's chain continues through the
  // stored partial in pair order. On AVX-512 the sub-block's input rows are
  // packed too, as panels of input channels (gather_gemm_avx512.cpp).
  const bool wide = has_avx512();
  if (wide && cout >= kPackWidth)
    return detail::outer_accumulate_blocked_f32_avx512(a, g, n, cin, cout, part, fresh);
  if (cout < kPackWidth) {
    prefetch_rows(a, n, cin);
    outer_block(wide, a, g, n, cin, cout, part, fresh);
    return;
  }
  const int64_t step =
      (n + (n + kOuterPairs - 1) / kOuterPairs - 1) / ((n + kOuterPairs - 1) / kOuterPairs);
  prefetch_rows(a, std::min(n, step), cin);
  const int64_t ldg = cout + 16;
  thread_local std::vector<float> buf;
  buf.resize(static_cast<size_t>(kOuterPairs * ldg));
  float* pg = buf.data();
  const float* gp[kOuterPairs];
  for (int64_t p = 0; p < kOuterPairs; ++p) gp[p] = pg + p * ldg;
  for (int64_t p0 = 0; p0 < n; p0 += step) {
    const int64_t m = std::min(step, n - p0);
    const int64_t ahead = std::min(step, n - p0 - m);
    prefetch_rows<_MM_HINT_T1>(a + p0 + m, ahead, cin);
    pack_rows(g + p0, m, cout, pg, ldg, ahead);
    outer_block(false, a + p0, gp, m, cin, cout, part, fresh && p0 == 0);
  }
}

void gather_gemm_add_f32(const float* const* a, float* const* c, int64_t n, const float* w,
                         int64_t cin, int64_t cout) {
  if (has_avx512()) return detail::gather_gemm_add_f32_avx512(a, c, n, w, cin, cout);
  int64_t col = 0;
  for (; col + 16 <= cout; col += 16) add_panel<2>(a, c, n, w + col, cin, cout, col);
  if (col < cout) add_panel<1>(a, c, n, w + col, cin, cout, col);
}

}  // namespace minkowski
