#pragma once
// A coordinate map: the unique int32 coordinates [batch, x_1..x_D] of one
// sparse tensor, row i of the features <-> row i here, plus an index from
// coordinate to row.
//
// Keys: each row is packed into an integer key, every column shifted by the
// map's minimum and given just the bits its extent needs (so any D works as
// long as the packed extents fit 128 bits: always for D <= 3, and for larger D
// when the coordinates span less than the full int32 range). The batch takes
// the top bits and x_D the lowest, so key order is lexicographic order of
// (batch, x_1, .., x_D). A query outside the map's bounding box is answered
// "absent" without a search.
//
// Index: the keys sorted (64-bit when they fit, else 128-bit), each with its
// row, plus a table of where each value of the keys' top bits starts; a lookup
// is a binary search inside one such bucket (~n buckets, so a few keys each).
// Building it is a radix sort, skipped when the rows already come in key order
// (scenes stored in (batch, x, y, z) order do); duplicates are then adjacent,
// and the stable sort keeps the first occurrence first. No hashing, no random
// access: ~1-2 ms for 100k rows on one core. The result does not depend on the
// thread count.
//
// Coordinate range: the batch index may be any int32; spatial coordinates
// inserted through a CoordinateManager lie in [-kCoordinateLimit,
// kCoordinateLimit] = [-2^30, 2^30], and tensor strides, dilation x tensor
// stride and every kernel offset are at most 2^30 in magnitude. Within that,
// every coordinate the engine derives is computed exactly in 64 bits and
// fits int32: a strided coordinate floor(c / s) * s lies in [-2^31 + 1, 2^30],
// a neighbour c + offset is only ever compared as a 64-bit key. A coordinate
// or stride outside the range is an fk::Error where it enters (insert,
// stride, kernel region offsets); so is an expanded coordinate (generative
// transposed convolution) that would leave int32. A CoordinateMap itself
// accepts any int32 rows. A kernel map's keys (kernel_map_layout.h) pad each
// spatial extent by the kernel's reach (its largest offset times the tensor
// stride) on both sides and keep an all-ones sentinel, so they must pack into
// 127 bits: at D = 3 that fails (an fk::Error naming the bits) when the batch
// indices span 2^31 or more and every axis's span plus twice its reach is
// 2^31 or more (at tensor stride 2^30 one voxel is enough).
//
// Memory: coordinates N*(1+D)*4 bytes, keys and rows 12 (or 20) bytes per row,
// ~4 bytes per row of bucket table. CPU only.
#include <cstdint>
#include <vector>

#include "minkowski/coords/large_array.h"

namespace minkowski {

using Key128 = unsigned __int128;

// The largest magnitude of an inserted spatial coordinate, a tensor stride or
// a kernel offset (see "Coordinate range" above).
inline constexpr int32_t kCoordinateLimit = int32_t{1} << 30;

// Bit layout of one map's keys.
class CoordinatePacker {
 public:
  CoordinatePacker() = default;
  // Bounds from rows (n x width); throws when the extents need more than 128 bits.
  CoordinatePacker(const int32_t* rows, int64_t n, int width);
  int width() const { return width_; }
  int bits() const { return bits_; }
  int32_t min(int c) const { return min_[c]; }
  int64_t extent(int c) const { return extent_[c]; }  // max - min
  int shift(int c) const { return shift_[c]; }
  // False when the row lies outside the bounding box (then it is in no map row).
  bool pack(const int32_t* row, Key128& key) const {
    Key128 k = 0;
    for (int c = 0; c < width_; ++c) {
      int64_t v = static_cast<int64_t>(row[c]) - min_[c];
      if (v < 0 || v > extent_[c]) return false;
      k |= static_cast<Key128>(v) << shift_[c];
    }
    key = k;
    return true;
  }
  // The same for a row known to be inside the bounding box (a map's own rows).
  template <typename Key>
  Key pack_inside(const int32_t* row) const {
    Key k = 0;
    for (int c = 0; c < width_; ++c)
      k |= static_cast<Key>(static_cast<int64_t>(row[c]) - min_[c]) << shift_[c];
    return k;
  }

 private:
  int width_ = 0;
  int bits_ = 0;
  std::vector<int32_t> min_;
  std::vector<int64_t> extent_;
  std::vector<int> shift_;
};

// The order of a map's rows.
enum class RowOrder {
  kFirstOccurrence,  // the input's order, each coordinate where it first occurs
  kKeys,             // ascending keys: lexicographic in (batch, x_1, .., x_D)
};

class CoordinateMap {
 public:
  // Inserts n rows (row-major n x width, width = 1 + D). Duplicates keep their
  // first occurrence (the map row takes that input row's place in
  // kFirstOccurrence order); `unique_rows` (optional) receives the input row
  // of each map row, `inverse` (optional) the map row of each input row.
  CoordinateMap(const int32_t* rows, int64_t n, int width, std::vector<int32_t> tensor_stride,
                std::vector<int64_t>* unique_rows = nullptr,
                std::vector<int64_t>* inverse = nullptr,
                RowOrder row_order = RowOrder::kFirstOccurrence);

  int64_t size() const { return size_; }
  int width() const { return width_; }
  int dimension() const { return width_ - 1; }
  const std::vector<int32_t>& tensor_stride() const { return tensor_stride_; }
  const int32_t* row(int64_t i) const { return coords_.data() + i * width_; }
  const std::vector<int32_t>& coordinates() const { return coords_; }
  const CoordinatePacker& packer() const { return packer_; }
  // The map's rows in key order (lexicographic in batch, x_1, .., x_D).
  const LargeArray<int32_t>& rows_in_key_order() const { return key_row_; }

  // Map row of a coordinate, or -1.
  int64_t find(const int32_t* coord) const {
    Key128 k;
    if (!packer_.pack(coord, k)) return -1;
    return find_key(k);
  }
  // Map row of a key of packer()'s layout, or -1.
  int64_t find_key(Key128 k) const;
  int64_t bytes() const;

 private:
  template <typename Key>
  void build(const int32_t* rows, int64_t n, std::vector<int64_t>* unique_rows,
             std::vector<int64_t>* inverse, RowOrder row_order);
  template <typename Key>
  int64_t search(const LargeArray<Key>& keys, Key k) const;

  int width_;
  int64_t size_ = 0;
  std::vector<int32_t> tensor_stride_;
  std::vector<int32_t> coords_;
  CoordinatePacker packer_;
  // The index: keys ascending (one of the two, by packer_.bits() <= 64), the
  // map row of each, and bucket_[b] = the first key whose top bits are >= b.
  LargeArray<uint64_t> keys64_;
  LargeArray<Key128> keys128_;
  LargeArray<int32_t> key_row_;
  LargeArray<int32_t> bucket_;
  int bucket_shift_ = 0;
};

}  // namespace minkowski
