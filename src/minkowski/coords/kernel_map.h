#pragma once
// A kernel map: for every kernel offset k, the (input row, output row) pairs
// with in_coord = out_coord + offset_k (same batch). Stored as ONE array in
// offset order, the layout a CUDA path can upload as is:
//   offset_begin[k] .. offset_begin[k+1]  the pairs of offset k
//   in_rows[p], out_rows[p]               pair p (int32 rows)
// Within one offset each output row appears at most once, so a per-offset
// scatter never collides. Pairs of one offset follow the output map's key
// order (lexicographic in (x_D, .., x_1, batch)); the order is fully
// deterministic and does not depend on the thread count.
//
// by_out()/by_in() are the pairs regrouped by output / input row (CSR), each
// row's pairs in offset order; the convolution's scatter walks them so that
// every row is owned by one thread and accumulated in offset order
// (deterministic by construction). They are built on first use and cached.
//
// An identity map (1x1 convolution, same input and output map) stores no pairs:
// pair p is (p, p).
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "minkowski/coords/coordinate_map.h"

namespace minkowski {

struct RowEntry {
  int32_t pair;    // pair id; ascending (= offset order) within a row
  int32_t other;   // the pair's row on the other side
  int32_t offset;  // the pair's kernel offset
};

struct RowIndex {
  std::vector<int64_t> begin;  // rows + 1
  std::vector<RowEntry> entries;
};

struct KernelMap {
  int64_t volume = 0;
  int64_t in_size = 0;
  int64_t out_size = 0;
  bool identity = false;
  std::vector<int64_t> offset_begin;  // volume + 1
  std::vector<int32_t> in_rows;
  std::vector<int32_t> out_rows;
  // A symmetric map onto itself: offset k's pairs are offset mirror[k]'s pairs
  // swapped, in the same order (empty otherwise). Lets by_in() be derived from
  // by_out() with sequential access.
  std::vector<int32_t> mirror;

  int64_t pairs() const { return offset_begin.empty() ? 0 : offset_begin.back(); }
  int64_t count(int64_t k) const { return offset_begin[k + 1] - offset_begin[k]; }
  // Bytes of the pair arrays and of the cached row indices.
  int64_t bytes() const;
  const RowIndex& by_out() const;
  const RowIndex& by_in() const;
  // The adjoint map (inputs and outputs swapped), as a transposed convolution uses.
  std::shared_ptr<KernelMap> transposed() const;
  static std::shared_ptr<KernelMap> make_identity(int64_t n);

 private:
  mutable std::mutex mu_;
  mutable std::shared_ptr<RowIndex> by_out_, by_in_;
};

// Pairs of `in` rows found at out_coord + offset (offsets: K x D, already
// scaled), for every row of `out`: a merge join of both maps' sorted keys,
// one offset per task (parallel over offsets). Memory: the maps' sorted keys
// (cached), 8 bytes per output row and coordinate, and the pairs.
std::shared_ptr<KernelMap> build_kernel_map(const CoordinateMap& in, const CoordinateMap& out,
                                            const std::vector<int32_t>& offsets);

}  // namespace minkowski
