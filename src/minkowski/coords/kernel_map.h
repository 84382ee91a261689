#pragma once
// A kernel map: for every kernel offset k, the (input row, output row) pairs
// with in_coord = out_coord + offset_k (same batch). Stored as ONE array in
// offset order, the layout a CUDA path can upload as is:
//   offset_begin[k] .. offset_begin[k+1]  the pairs of offset k
//   in_rows[p], out_rows[p]               pair p (int32 rows)
// Within one offset each output row appears at most once, so a per-offset
// scatter never collides. Pairs of one offset follow the output rows in the
// build's key order (batch on top, then the spatial axes from the one that
// changes least often between consecutive output rows to the one that
// changes most often: for rows in coordinate order, (batch, x_1, .., x_D));
// the order is fully deterministic and does not depend on the thread count.
//
// by_out()/by_in() are the pairs regrouped by output / input row (CSR), each
// row's pairs in offset order; the convolution's scatter walks them so that
// every row is owned by one thread and accumulated in offset order
// (deterministic by construction). build_kernel_map produces by_out in the
// same pass as the pairs; by_in is built on first use and cached (a symmetric
// map's convolutions do not need it: see `mirror`; when they do, it is derived
// from by_out; other maps regroup their pairs, in parallel). A map and its
// transpose share the two indices, swapped, whichever of them builds one
// first (both build the same index).
//
// An identity map (1x1 convolution, same input and output map) stores no pairs:
// pair p is (p, p). The host copy of a map built on a CUDA device fetches its
// pairs on their first host read (pair_rows.h).
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "minkowski/coords/coordinate_map.h"
#include "minkowski/coords/large_array.h"
#include "minkowski/coords/pair_rows.h"
#include "minkowski/coords/row_blocks.h"

namespace minkowski {

struct RowEntry {
  int32_t pair;    // pair id; ascending (= offset order) within a row
  int32_t other;   // the pair's row on the other side
  int32_t offset;  // the pair's kernel offset
};

struct RowIndex {
  LargeArray<int64_t> begin;  // rows + 1
  LargeArray<RowEntry> entries;
  int64_t bytes() const {
    return static_cast<int64_t>(begin.capacity() * sizeof(int64_t) +
                                entries.capacity() * sizeof(RowEntry));
  }
};

struct KernelMap {
  KernelMap() = default;
  // Not copyable: a copy would share the row indices (use transposed()).
  KernelMap(const KernelMap&) = delete;
  KernelMap& operator=(const KernelMap&) = delete;

  int64_t volume = 0;
  int64_t in_size = 0;
  int64_t out_size = 0;
  bool identity = false;
  std::vector<int64_t> offset_begin;  // volume + 1
  PairRows in_rows;
  PairRows out_rows;
  // A symmetric map onto itself: offset k's pairs are offset mirror[k]'s pairs
  // swapped, in the same order (empty otherwise). Lets by_in() be derived from
  // by_out() with sequential access.
  std::vector<int32_t> mirror;

  int64_t pairs() const { return offset_begin.empty() ? 0 : offset_begin.back(); }
  int64_t count(int64_t k) const { return offset_begin[k + 1] - offset_begin[k]; }
  // Bytes of this map's own arrays (pairs, offset ranges, the row blocks
  // built so far).
  int64_t pair_bytes() const;
  // The row indices built so far; shared with the transposed map (the
  // CoordinateManager counts each once by these pointers).
  std::vector<std::shared_ptr<const RowIndex>> row_indices() const;
  // pair_bytes() plus the bytes of row_indices(): the memory this map keeps
  // alive on its own, shared indices included.
  int64_t bytes() const;
  const RowIndex& by_out() const;
  const RowIndex& by_in() const;
  // The pairs by blocks of output rows (`inputs` false) or of input rows, and
  // by offset (row_blocks.h); built on first use (an input side of a
  // symmetric map from by_out through `mirror`) and kept. This map's own: a
  // transposed map builds its own.
  const RowBlocks& row_blocks(bool inputs) const;
  // The adjoint map (inputs and outputs swapped), as a transposed convolution uses.
  std::shared_ptr<KernelMap> transposed() const;
  static std::shared_ptr<KernelMap> make_identity(int64_t n);
  // This map's copy on CUDA device `device`, made by `make` on the first call
  // for that device and kept while the map or one of its transposes lives, so
  // the layers sharing a map share one upload. Opaque here: the device
  // convolution (conv_device.h) owns its type. A map and its transposes keep
  // their copies together, each under its own orientation.
  std::shared_ptr<const void> device_copy(
      int device, const std::function<std::shared_ptr<const void>()>& make) const;
  // The copy on `device` of this map's transpose (its pairs with the sides
  // swapped), if one was made; nullptr otherwise. The device code makes this
  // map's copy from it instead of uploading the same pairs again.
  std::shared_ptr<const void> transposed_device_copy(int device) const;

  // Installs a by-output-row index built together with the pairs.
  void adopt_by_out(std::shared_ptr<RowIndex> idx) {
    std::lock_guard<std::mutex> lock(rows_->mu);
    (swapped_ ? rows_->second : rows_->first) = std::move(idx);
  }

 private:
  // The row indices of a map and of its transposes, by the sides of the map
  // that made the first of them: `first` groups that map's output rows,
  // `second` its input rows; a transposed map sees them swapped.
  struct SharedRows {
    std::mutex mu;
    std::shared_ptr<RowIndex> first, second;
  };
  std::shared_ptr<SharedRows> rows_ = std::make_shared<SharedRows>();
  bool swapped_ = false;
  mutable std::mutex blocks_mu_;
  mutable std::shared_ptr<const RowBlocks> blocks_[2];  // output rows, input rows
  struct DeviceCopy {
    int device;
    bool swapped;  // of the map whose copy it is
    std::shared_ptr<const void> copy;
  };
  struct DeviceCopies {
    std::mutex mu;
    std::vector<DeviceCopy> copies;
  };
  std::shared_ptr<DeviceCopies> device_copies_ = std::make_shared<DeviceCopies>();
};

// Pairs of `in` rows found at out_coord + offset (offsets: K x D, already
// scaled), for every row of `out`. A merge join instead of hashing: both maps'
// coordinates are packed into 32/64-bit keys (128-bit when they do not fit) in
// a layout padded by the kernel's reach and radix-sorted (no sort when the
// rows already come in key order); walking the output keys in order,
// key + delta(offset) ascends too, so one forward pointer per line of offsets
// along the line axis (whose keys are consecutive) finds every neighbour with
// sequential memory access, comparing a line's whole window of keys at once.
// Along a run of consecutive output keys the windows just slide by one key:
// one compare per line. Parallel over fixed chunks of output rows, all offsets
// at once; a counting pass then lays the pairs out in offset order and fills
// by_out. Memory: keys and rows of both maps (8-24 bytes per row), scratch of
// 8 bytes per output row plus, per chunk of output rows, room for the chunk's
// worst case of 4 bytes x rows x K (reserved, only the found pairs touched;
// freed before the build returns, but counted in fk::memory_stats' peak), the
// pairs and by_out (all from fk's caching allocator, see large_array.h). At
// most 2^31 - 1 pairs (int32 pair ids); more is an fk::Error.
std::shared_ptr<KernelMap> build_kernel_map(const CoordinateMap& in, const CoordinateMap& out,
                                            const std::vector<int32_t>& offsets);

// The packed-key layout build_kernel_map uses for these maps and offsets:
// column c (0 = batch) of a row packs as (row[c] - lo[c]) << shift[c], `bits`
// in all; every axis is padded by the kernel's reach, so key(out) +
// sum_i offset_i << shift[i + 1] is key(out + offset) exactly. Pairs of one
// offset follow the output rows in ascending key of this layout: a device
// build that sorts by these keys lists its pairs in the same order.
struct KernelMapKeyLayout {
  std::vector<int64_t> lo;
  std::vector<int> shift;
  int bits = 0;
};
KernelMapKeyLayout kernel_map_key_layout(const CoordinateMap& in, const CoordinateMap& out,
                                         const std::vector<int32_t>& offsets);

}  // namespace minkowski
