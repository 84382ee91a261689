// The row-stationary tile paths of the convolution (conv_kernel_common.h):
// f32 and bf16 rows into f32 results, one driver for both.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "fk/error.h"
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
  const int32_t* mir = mirror ? mirror->data() : nullptr;
  fk::profile::count_launch();
  std::atomic<bool> bad{false};
  for_blocks(blocks, grab, parallel_worth(work, blocks), [&](auto&& each_block) {
    std::vector<int64_t> count(K);
    std::vector<const Src*> a;
    std::vector<float*> c;
    each_block([&](int64_t blk) {
      const int64_t r0 = blk * block_rows, r1 = std::min(n, r0 + block_rows);
      // The block's rows are this thread's alone: zero them here, where they
      // stay in cache for the adds (no separate pass over the whole output).
      std::fill(dst + r0 * cols_out, dst + r1 * cols_out, 0.0f);
      // Bucket k holds offset k's pairs, at most one a row (a row meets an
      // offset once), so it gets r1 - r0 slots from k (r1 - r0) and the
      // pairs need no counting pass first (the bucketing was a fifth of the
      // time at C = 32). Locals throughout: through the captured references
      // GCC reloaded every pointer at every entry.
      const int64_t cap = r1 - r0;
      a.resize(K * cap);
      c.resize(K * cap);
      std::fill(count.begin(), count.end(), 0);
      const Src** ap = a.data();
      float** cp = c.data();
      int64_t* cnt = count.data();
      const Src* const s = src;
      const int64_t ld = rows_in, cols = cols_out;
      const int64_t* rb = idx.begin.data();
      // rows ascending within each offset's bucket
      for (int64_t r = r0; r < r1; ++r) {
        float* row = dst + r * cols;
        for (int64_t j = rb[r], je = rb[r + 1]; j < je; ++j) {
          const int64_t k = mir ? mir[e[j].offset] : e[j].offset;
          if (cnt[k] == cap) {  // not a kernel map (reported below)
            bad.store(true, std::memory_order_relaxed);
            continue;
          }
          const int64_t at = k * cap + cnt[k]++;
          ap[at] = s + static_cast<int64_t>(e[j].other) * ld;
          cp[at] = row;
        }
      }
      for (int64_t k = 0; k < K; ++k)
        if (cnt[k] > 0)
          add(ap + k * cap, cp + k * cap, cnt[k], mats + k * mat_size, rows_in, cols_out);
    });
  });
  FK_CHECK(!bad.load(), "minkowski::convolution",
           "a kernel map with at most one pair per row and offset", "a row met an offset twice");
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
