// The row-stationary tile paths of the convolution (conv_kernel_common.h):
// f32 and bf16 rows into f32 results, one driver for both.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "fk/profile.h"
#include "minkowski/coords/block_schedule.h"
#include "minkowski/ops/conv_kernel_common.h"
#include "minkowski/ops/gather_gemm.h"
#include "minkowski/ops/gather_gemm_bf16.h"

namespace minkowski::conv_detail {

namespace {

// Blocks a thread takes at a time: small enough that two threads finish
// within ~0.5 ms of each other (and a thread slowed by another process on a
// shared machine just takes fewer), large enough that consecutive blocks,
// which share neighbour rows, mostly land on the same core.
constexpr int64_t kRowTilesPerGrab = 4;

// Rows per block. A block's bucket of one offset streams that offset's whole
// matrix (from L3 when the K matrices are megabytes) into its tiles, so a
// bucket must hold enough rows to pay for it: 64 for matrices up to 64 KiB
// (C = 128; there 128- to 1024-row blocks measured equal), up to 4x that for
// wider ones (C = 256: ~70-row buckets spent a fifth of the time on the
// stream; 256-row buckets, 1.2-1.25x). Rows with few pairs (a strided
// convolution's input gradient: 1-3 pairs a row) get proportionally taller
// blocks, up to 16 x kRowTile (their rows take few adds each, so they need
// not stay in L2).
int64_t rows_per_block(int64_t mat_bytes, int64_t pairs, int64_t rows, int64_t K) {
  const int64_t bucket = 64 * std::clamp<int64_t>(mat_bytes / (int64_t{64} << 10), 1, 4);
  const double per_row = std::max(1e-3, static_cast<double>(pairs) / std::max<int64_t>(rows, 1));
  const double r = static_cast<double>(bucket * K) / per_row;
  return std::clamp<int64_t>(std::llround(r), kRowTile, 16 * kRowTile);
}

// dst[r] = sum over the row's pairs (offset order) of src[other(p)] .
// mats[k(p)], every row owned by one thread; no staging. Rows go in blocks
// (rows_per_block): a block's pairs are bucketed by offset and each offset's terms
// run as register tiles sharing the weight loads (`add`: c[i] += a[i] . W),
// offsets ascending, so every row still receives its terms in offset order,
// computed as the per-offset path computes them. With `mirror` (a symmetric
// map), idx is by_out and the rows are input rows: input row r's pairs are
// its by_out entries with offset k read as mirror[k] (the swapped pair), i.e.
// exactly by_in's pairs, so by_in is never built. `mat_size`: elements of
// one offset's matrix.
template <typename Src, typename Mat, typename Add>
void row_stationary(const KernelMap& m, const RowIndex& idx, const Src* src, const Mat* mats,
                    int64_t mat_size, int64_t rows_in, int64_t cols_out, float* dst,
                    const std::vector<int32_t>* mirror, const Add& add) {
  const int64_t n = static_cast<int64_t>(idx.begin.size()) - 1, K = m.volume;
  const int64_t block_rows =
      rows_per_block(mat_size * static_cast<int64_t>(sizeof(Mat)), m.pairs(), n, K);
  const int64_t blocks = (n + block_rows - 1) / block_rows;
  // about kRowTilesPerGrab x kRowTile rows a grab, whatever the block size
  const int64_t grab = std::max<int64_t>(1, kRowTilesPerGrab * kRowTile / block_rows);
  double work = static_cast<double>(m.pairs()) * rows_in * cols_out;
  const RowEntry* e = idx.entries.data();
  auto offset_of = [&](int64_t j) { return mirror ? (*mirror)[e[j].offset] : e[j].offset; };
  fk::profile::count_launch();
  for_blocks(blocks, grab, parallel_worth(work, blocks), [&](auto&& each_block) {
    std::vector<int64_t> start(K + 1);
    std::vector<const Src*> a;
    std::vector<float*> c;
    each_block([&](int64_t blk) {
      const int64_t r0 = blk * block_rows, r1 = std::min(n, r0 + block_rows);
      const int64_t e0 = idx.begin[r0], e1 = idx.begin[r1];
      // The block's rows are this thread's alone: zero them here, where they
      // stay in cache for the adds (no separate pass over the whole output).
      std::fill(dst + r0 * cols_out, dst + r1 * cols_out, 0.0f);
      std::fill(start.begin(), start.end(), 0);
      for (int64_t j = e0; j < e1; ++j) ++start[offset_of(j) + 1];
      for (int64_t k = 0; k < K; ++k) start[k + 1] += start[k];
      a.resize(e1 - e0);
      c.resize(e1 - e0);
      // rows ascending within each offset's bucket
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t j = idx.begin[r]; j < idx.begin[r + 1]; ++j) {
          int64_t at = start[offset_of(j)]++;
          a[at] = src + static_cast<int64_t>(e[j].other) * rows_in;
          c[at] = dst + r * cols_out;
        }
      for (int64_t k = 0, b = 0; k < K; ++k) {
        // start[k] is now the end of bucket k
        if (start[k] > b)
          add(a.data() + b, c.data() + b, start[k] - b, mats + k * mat_size, rows_in, cols_out);
        b = start[k];
      }
    });
  });
}

}  // namespace

void row_stationary_f32(const KernelMap& m, const RowIndex& idx, const float* src,
                        const float* mats, int64_t rows_in, int64_t cols_out, float* dst,
                        const std::vector<int32_t>* mirror) {
  row_stationary(m, idx, src, mats, rows_in * cols_out, rows_in, cols_out, dst, mirror,
                 gather_gemm_add_f32);
}

void row_stationary_bf16(const KernelMap& m, const RowIndex& idx, const uint16_t* src,
                         const uint32_t* mats, int64_t rows_in, int64_t cols_out, float* dst,
                         const std::vector<int32_t>* mirror) {
  row_stationary(m, idx, src, mats, rows_in / 2 * cols_out, rows_in, cols_out, dst, mirror,
                 gather_gemm_add_bf16);
}

}  // namespace minkowski::conv_detail
