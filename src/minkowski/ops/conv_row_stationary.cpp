// The row-stationary tile paths of the convolution (conv_kernel_common.h):
// f32 and bf16 rows into f32 results, one driver for both.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "fk/cpu_isa.h"
#include "fk/profile.h"
#include "minkowski/coords/block_schedule.h"
#include "minkowski/ops/conv_bucket_rows.h"
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
// not stay in L2). Whole multiples of kRowTile: a block is a run of the
// map's row blocks.
static_assert(kRowTile % RowBlocks::kRows == 0);
int64_t rows_per_block(int64_t mat_bytes, int64_t pairs, int64_t rows, int64_t K) {
  const int64_t bucket = 64 * std::clamp<int64_t>(mat_bytes / (int64_t{64} << 10), 1, 4);
  const double per_row = std::max(1e-3, static_cast<double>(pairs) / std::max<int64_t>(rows, 1));
  const double r = static_cast<double>(bucket * K) / per_row;
  return std::clamp<int64_t>(std::llround(r / kRowTile), 1, 16) * kRowTile;
}

// dst[r] = sum over the row's pairs (offset order) of src[other(p)] .
// mats[k(p)], every row owned by one thread; no staging. Rows go in blocks
// (rows_per_block, whole blocks of the map's RowBlocks `plan`): each offset's
// pairs of the block run as register tiles sharing the weight loads (`add`:
// c[i] += a[i] . W), offsets ascending, so every row still receives its terms
// in offset order, computed as the per-offset path computes them.
// `mat_size`: elements of one offset's matrix.
template <typename Src, typename Mat, typename Add>
void row_stationary(const RowBlocks& plan, const Src* src, const Mat* mats, int64_t mat_size,
                    int64_t rows_in, int64_t cols_out, float* dst, const Add& add) {
  const int64_t n = plan.rows, K = plan.volume;
  const int64_t pairs = plan.begin.empty() ? 0 : plan.begin[plan.begin.size() - 1];
  const int64_t block_rows =
      rows_per_block(mat_size * static_cast<int64_t>(sizeof(Mat)), pairs, n, K);
  const int64_t blocks = (n + block_rows - 1) / block_rows;
  // about kRowTilesPerGrab x kRowTile rows a grab, whatever the block size
  const int64_t grab = std::max<int64_t>(1, kRowTilesPerGrab * kRowTile / block_rows);
  double work = static_cast<double>(pairs) * rows_in * cols_out;
  const bool wide = fk::cpu_isa() >= fk::CpuIsa::Avx512;
  for_blocks(blocks, grab, parallel_worth(work, blocks), [&](auto&& each_block) {
    // a bucket has at most one pair a row
    std::vector<const Src*> a(block_rows);
    std::vector<float*> c(block_rows);
    each_block([&](int64_t blk) {
      const int64_t r0 = blk * block_rows, r1 = std::min(n, r0 + block_rows);
      // The block's rows are this thread's alone: zero them here, where they
      // stay in cache for the adds (no separate pass over the whole output).
      std::fill(dst + r0 * cols_out, dst + r1 * cols_out, 0.0f);
      const int64_t s0 = r0 / RowBlocks::kRows, s1 = (r1 + RowBlocks::kRows - 1) / RowBlocks::kRows;
      for (int64_t k = 0; k < K; ++k) {
        const int64_t m =
            bucket_rows(plan, k, s0, s1, src, rows_in, dst, cols_out, wide, a.data(), c.data());
        if (m > 0) add(a.data(), c.data(), m, mats + k * mat_size, rows_in, cols_out);
      }
    });
  });
}

}  // namespace

void row_stationary_f32(const RowBlocks& plan, const float* src, const float* mats, int64_t rows_in,
                        int64_t cols_out, float* dst) {
  row_stationary(plan, src, mats, rows_in * cols_out, rows_in, cols_out, dst, gather_gemm_add_f32);
}

void row_stationary_bf16(const RowBlocks& plan, const uint16_t* src, const uint32_t* mats,
                         int64_t rows_in, int64_t cols_out, float* dst) {
  row_stationary(plan, src, mats, rows_in / 2 * cols_out, rows_in, cols_out, dst,
                 gather_gemm_add_bf16);
}

}  // namespace minkowski::conv_detail
