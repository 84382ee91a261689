#pragma once
// A kernel map's pairs regrouped by fixed blocks of rows of one side and,
// within a block, by offset: the order the row-stationary convolution tiles
// consume them in (conv_row_stationary.cpp). Bucket (b, k) holds offset k's
// pairs whose row lies in block b (rows [b kRows, b kRows + kRows)), rows
// ascending. Built once per map and side (KernelMap::row_blocks) instead of
// at every call: at C = 32 the per-call bucketing, a scatter of every pair
// into K buckets, was a sixth of the forward.
#include <cstdint>
#include <memory>

#include "minkowski/coords/large_array.h"

namespace minkowski {

struct RowIndex;

struct RowBlocks {
  // Rows per block: a row's place in its block fits a byte, and a convolution
  // block of any multiple of it reads its buckets as runs of these.
  static constexpr int64_t kRows = 128;
  int64_t rows = 0;    // rows of the side
  int64_t volume = 0;  // offsets K
  // blocks() x K + 1: bucket (b, k) is [begin[b K + k], begin[b K + k + 1])
  LargeArray<int32_t> begin;
  LargeArray<int32_t> other;  // per pair: its row on the other side
  LargeArray<uint8_t> row;    // per pair: its row minus its block's first row

  int64_t blocks() const { return (rows + kRows - 1) / kRows; }
  int64_t bytes() const {
    return static_cast<int64_t>(begin.capacity() * sizeof(int32_t) +
                                other.capacity() * sizeof(int32_t) + row.capacity());
  }
};

// The blocks of `idx`'s rows (a map's by_out or by_in) for a map of `volume`
// offsets; with `mirror` (a symmetric map), idx is by_out read as by_in: an
// entry's offset k counts as mirror[k] (conv_kernel.h). An fk::Error where a
// row meets an offset twice (not a kernel map: a bucket has one slot a row).
std::shared_ptr<RowBlocks> group_row_blocks(const RowIndex& idx, int64_t volume,
                                            const int32_t* mirror);

}  // namespace minkowski
