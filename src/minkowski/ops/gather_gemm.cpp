#include "minkowski/ops/gather_gemm.h"

#include <immintrin.h>

#include <cstring>
#include <vector>

#include "fk/cpu_isa.h"

namespace minkowski {

namespace {

// 16 ymm registers: 3 rows x 4 vectors (32 columns) per tile, the weight
// operands folded into the FMAs.
constexpr int kRows = 3;

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
  for (; i + 6 <= n; i += 6) {
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

// The weight-gradient tile: R rows of `part` (input channels) x NV*8 columns,
// over n pairs of a packed slice: a (n x lda, row p = the pair's input row
// from the tile's first channel on) and g (n x NV*8, the pair's gradient
// columns of this panel, contiguous). The classic 6 x 16 register tile: 12
// accumulators, per pair 2 loads and 6 broadcasts for 12 FMAs. Accumulators
// start from `part` and each element sums its pairs in ascending order, so
// the result does not depend on how the pairs are sliced.
template <int R, int NV>
__attribute__((target("avx2,fma"))) void outer_tile(const float* a, int64_t lda, const float* g,
                                                    int64_t n, float* part, int64_t ldp) {
  __m256 acc[R][NV];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_loadu_ps(part + r * ldp + 8 * v);
  for (int64_t p = 0; p < n; ++p) {
    __m256 gv[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) gv[v] = _mm256_loadu_ps(g + p * NV * 8 + 8 * v);
    const float* ap = a + p * lda;
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

template <int NV>
void outer_panel(const float* a, int64_t cin, const float* g, int64_t n, float* part,
                 int64_t cout) {
  int64_t ci = 0;
  for (; ci + 6 <= cin; ci += 6) outer_tile<6, NV>(a + ci, cin, g, n, part + ci * cout, cout);
  switch (cin - ci) {
    case 5:
      outer_tile<5, NV>(a + ci, cin, g, n, part + ci * cout, cout);
      break;
    case 4:
      outer_tile<4, NV>(a + ci, cin, g, n, part + ci * cout, cout);
      break;
    case 3:
      outer_tile<3, NV>(a + ci, cin, g, n, part + ci * cout, cout);
      break;
    case 2:
      outer_tile<2, NV>(a + ci, cin, g, n, part + ci * cout, cout);
      break;
    case 1:
      outer_tile<1, NV>(a + ci, cin, g, n, part + ci * cout, cout);
      break;
    default:
      break;
  }
}

bool has_avx2() {
  return fk::cpu_isa() >= fk::CpuIsa::Avx2;
}

}  // namespace

bool gather_gemm_supported(int64_t cout) {
  return cout > 0 && cout % 8 == 0 && has_avx2();
}

void gather_gemm_f32(const float* f, int64_t ldf, const int32_t* rows, int64_t n, const float* w,
                     int64_t cin, int64_t cout, float* out, int64_t ldo) {
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
                          int64_t cout, float* part) {
  // Slices of pairs packed contiguously (input rows as they are, gradient rows
  // split into 16-column panels), so that every tile streams through L1.
  constexpr int64_t kSlice = 128;
  const int64_t panels = (cout + 15) / 16;
  thread_local std::vector<float> pa, pg;
  pa.resize(static_cast<size_t>(kSlice * cin));
  pg.resize(static_cast<size_t>(kSlice * panels * 16));
  for (int64_t p0 = 0; p0 < n; p0 += kSlice) {
    const int64_t cnt = n - p0 < kSlice ? n - p0 : kSlice;
    for (int64_t p = 0; p < cnt; ++p) {
      std::memcpy(pa.data() + p * cin, a[p0 + p], cin * sizeof(float));
      const float* gp = g[p0 + p];
      for (int64_t q = 0; q < panels; ++q) {
        const int64_t w = cout - 16 * q < 16 ? cout - 16 * q : 16;
        std::memcpy(pg.data() + q * kSlice * 16 + p * w, gp + 16 * q, w * sizeof(float));
      }
    }
    for (int64_t q = 0; q < panels; ++q) {
      const float* gq = pg.data() + q * kSlice * 16;
      if (cout - 16 * q >= 16)
        outer_panel<2>(pa.data(), cin, gq, cnt, part + 16 * q, cout);
      else
        outer_panel<1>(pa.data(), cin, gq, cnt, part + 16 * q, cout);
    }
  }
}

void gather_gemm_add_f32(const float* const* a, float* const* c, int64_t n, const float* w,
                         int64_t cin, int64_t cout) {
  int64_t col = 0;
  for (; col + 16 <= cout; col += 16) add_panel<2>(a, c, n, w + col, cin, cout, col);
  if (col < cout) add_panel<1>(a, c, n, w + col, cin, cout, col);
}

}  // namespace minkowski
