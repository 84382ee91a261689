#pragma once
// One offset's pairs of a run of a kernel map's row blocks (row_blocks.h) as
// the row pointers the register tiles read (internal: the row-stationary
// tiles). Per call this is all that is left of bucketing the pairs: the
// buckets themselves are the map's, built once. (The weight gradient keeps
// its own per-call bucketing: on the kept blocks, whose 128-row grain moved
// its L2-sized blocks and chunk bounds, C = 128 measured 6 % slower.)
#include <cstdint>

#include "minkowski/coords/row_blocks.h"

namespace minkowski::conv_detail {

// a[j] = src + other[j] ld, c[j] = first + row[j] cols for j < m.
template <typename Src, typename Dst>
inline void run_rows(const int32_t* __restrict other, const uint8_t* __restrict row, int64_t m,
                     const Src* src, int64_t ld, Dst* first, int64_t cols, const Src** __restrict a,
                     Dst** __restrict c) {
  for (int64_t j = 0; j < m; ++j) {
    a[j] = src + static_cast<int64_t>(other[j]) * ld;
    c[j] = first + static_cast<int64_t>(row[j]) * cols;
  }
}

// The same loop, vectorised (64-bit multiplies need AVX-512 DQ): scalar, it
// cost ~4 cycles a pair, a tenth of the forward at C = 32.
template <typename Src, typename Dst>
__attribute__((target("avx512f,avx512dq,avx512vl"))) void run_rows_avx512(
    const int32_t* other, const uint8_t* row, int64_t m, const Src* src, int64_t ld, Dst* first,
    int64_t cols, const Src** a, Dst** c) {
  run_rows(other, row, m, src, ld, first, cols, a, c);
}

// Offset k's pairs in row blocks [s0, s1) of `plan`, rows ascending: a[i] =
// the pair's row of src (the other side, ld elements apart), c[i] = its row
// of dst (this side, cols apart). Returns their count (at most the blocks'
// rows). `wide`: the CPU has AVX-512 (fk::cpu_isa()).
template <typename Src, typename Dst>
int64_t bucket_rows(const RowBlocks& plan, int64_t k, int64_t s0, int64_t s1, const Src* src,
                    int64_t ld, Dst* dst, int64_t cols, bool wide, const Src** a, Dst** c) {
  const int32_t* begin = plan.begin.data();
  const int64_t K = plan.volume;
  int64_t n = 0;
  for (int64_t s = s0; s < s1; ++s) {
    const int64_t j0 = begin[s * K + k], m = begin[s * K + k + 1] - j0;
    Dst* const first = dst + s * RowBlocks::kRows * cols;
    const int32_t* other = plan.other.data() + j0;
    const uint8_t* row = plan.row.data() + j0;
    if (wide)
      run_rows_avx512(other, row, m, src, ld, first, cols, a + n, c + n);
    else
      run_rows(other, row, m, src, ld, first, cols, a + n, c + n);
    n += m;
  }
  return n;
}

}  // namespace minkowski::conv_detail
