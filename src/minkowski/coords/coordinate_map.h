#pragma once
// A coordinate map: the unique int32 coordinates [batch, x_1..x_D] of one
// sparse tensor, row i of the features <-> row i here, plus a hash from
// coordinate to row.
//
// Hashing: each row is packed into a 128-bit key, every column shifted by the
// map's minimum and given just the bits its extent needs (so any D works as long
// as the packed extents fit 128 bits: always for D <= 3, and for larger D when
// the coordinates span less than the full int32 range). A query outside the
// map's bounding box is answered "absent" without touching the table, which
// makes border lookups of kernel maps free.
//
// The table is tsl::robin_map, split into 2^s shards by the key hash's top
// bits so that threads build shards in parallel (each thread scans all keys and
// inserts its shard's ones in row order, so "first occurrence wins" holds and
// the result is independent of the shard and thread count).
//
// Memory: coordinates N*(1+D)*4 bytes plus the table (~32 bytes per slot at
// load <= 0.5 plus keys). CPU only.
#include <cstdint>
#include <vector>

#include <tsl/robin_map.h>

namespace minkowski {

using Key128 = unsigned __int128;

struct Key128Hash {
  size_t operator()(Key128 k) const {
    uint64_t lo = static_cast<uint64_t>(k), hi = static_cast<uint64_t>(k >> 64);
    uint64_t h = lo * 0x9E3779B97F4A7C15ull ^ (hi + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return static_cast<size_t>(h);
  }
};

// Bit layout of one map's keys.
class CoordinatePacker {
 public:
  CoordinatePacker() = default;
  // Bounds from rows (n x width); throws when the extents need more than 128 bits.
  CoordinatePacker(const int32_t* rows, int64_t n, int width);
  int width() const { return width_; }
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

 private:
  int width_ = 0;
  std::vector<int32_t> min_;
  std::vector<int64_t> extent_;
  std::vector<int> shift_;
};

class CoordinateMap {
 public:
  // Inserts n rows (row-major n x width, width = 1 + D). Duplicates keep their
  // first occurrence; `unique_rows` (optional) receives the input row of each map
  // row, `inverse` (optional) the map row of each input row.
  CoordinateMap(const int32_t* rows, int64_t n, int width, std::vector<int32_t> tensor_stride,
                std::vector<int64_t>* unique_rows = nullptr,
                std::vector<int64_t>* inverse = nullptr);

  int64_t size() const { return size_; }
  int width() const { return width_; }
  int dimension() const { return width_ - 1; }
  const std::vector<int32_t>& tensor_stride() const { return tensor_stride_; }
  const int32_t* row(int64_t i) const { return coords_.data() + i * width_; }
  const std::vector<int32_t>& coordinates() const { return coords_; }
  const CoordinatePacker& packer() const { return packer_; }

  // Map row of a coordinate, or -1.
  int64_t find(const int32_t* coord) const {
    Key128 k;
    if (!packer_.pack(coord, k)) return -1;
    return find_key(k);
  }
  int64_t find_key(Key128 k) const {
    size_t h = Key128Hash()(k);
    const auto& shard = shards_[shard_of(h)];
    auto it = shard.find(k, h);
    return it == shard.end() ? -1 : it->second;
  }
  int64_t bytes() const;

 private:
  using Table = tsl::robin_map<Key128, int32_t, Key128Hash, std::equal_to<Key128>,
                               std::allocator<std::pair<Key128, int32_t>>, true>;
  size_t shard_of(size_t h) const { return shard_bits_ == 0 ? 0 : h >> (64 - shard_bits_); }

  int width_;
  int64_t size_ = 0;
  std::vector<int32_t> tensor_stride_;
  std::vector<int32_t> coords_;
  CoordinatePacker packer_;
  int shard_bits_ = 0;
  std::vector<Table> shards_;
};

}  // namespace minkowski
