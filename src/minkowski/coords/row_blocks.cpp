#include "minkowski/coords/row_blocks.h"

#include <atomic>
#include <vector>

#include "fk/error.h"
#include "fk/parallel.h"
#include "minkowski/coords/kernel_map.h"

namespace minkowski {

namespace {

// Blocks per parallel chunk: the passes cost a few ns a pair.
constexpr int64_t kBlocksPerGrain = 64;

// Offset of entry e, through the mirror when there is one.
inline int64_t offset_of(const RowEntry& e, const int32_t* mirror) {
  return mirror ? mirror[e.offset] : e.offset;
}

}  // namespace

std::shared_ptr<RowBlocks> group_row_blocks(const RowIndex& idx, int64_t volume,
                                            const int32_t* mirror) {
  auto p = std::make_shared<RowBlocks>();
  const int64_t n = static_cast<int64_t>(idx.begin.size()) - 1, K = volume;
  p->rows = n;
  p->volume = K;
  const int64_t nb = p->blocks();
  p->begin.resize(nb * K + 1);
  p->other.resize(idx.entries.size());
  p->row.resize(idx.entries.size());
  int32_t* begin = p->begin.data();
  const int64_t* rb = idx.begin.data();
  const RowEntry* e = idx.entries.data();
  std::atomic<bool> twice{false};
  // Count each block's pairs per offset into begin[b K + k + 1], checking
  // that no row meets an offset twice (last[k]: the last row that met k).
  begin[0] = 0;
  fk::parallel_for(0, nb, kBlocksPerGrain, [&](int64_t b0, int64_t b1) {
    std::vector<int64_t> last(K, -1);
    for (int64_t b = b0; b < b1; ++b) {
      int32_t* cnt = begin + b * K + 1;
      std::fill(cnt, cnt + K, 0);
      for (int64_t r = b * RowBlocks::kRows; r < std::min(n, (b + 1) * RowBlocks::kRows); ++r)
        for (int64_t j = rb[r]; j < rb[r + 1]; ++j) {
          const int64_t k = offset_of(e[j], mirror);
          if (last[k] == r) twice.store(true, std::memory_order_relaxed);
          last[k] = r;
          ++cnt[k];
        }
    }
  });
  FK_CHECK(!twice.load(), "minkowski::convolution",
           "a kernel map with at most one pair per row and offset", "a row met an offset twice");
  for (int64_t i = 0; i < nb * K; ++i) begin[i + 1] += begin[i];
  // Fill: rows ascending within every bucket.
  int32_t* other = p->other.data();
  uint8_t* row = p->row.data();
  fk::parallel_for(0, nb, kBlocksPerGrain, [&](int64_t b0, int64_t b1) {
    std::vector<int64_t> cur(K);
    for (int64_t b = b0; b < b1; ++b) {
      std::copy(begin + b * K, begin + b * K + K, cur.begin());
      const int64_t first = b * RowBlocks::kRows;
      for (int64_t r = first; r < std::min(n, first + RowBlocks::kRows); ++r)
        for (int64_t j = rb[r]; j < rb[r + 1]; ++j) {
          const int64_t at = cur[offset_of(e[j], mirror)]++;
          other[at] = e[j].other;
          row[at] = static_cast<uint8_t>(r - first);
        }
    }
  });
  return p;
}

}  // namespace minkowski
