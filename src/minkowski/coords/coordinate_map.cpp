#include "minkowski/coords/coordinate_map.h"

#include <algorithm>
#include <string>

#include "fk/error.h"
#include "fk/parallel.h"

namespace minkowski {

CoordinatePacker::CoordinatePacker(const int32_t* rows, int64_t n, int width)
    : width_(width), min_(width, 0), extent_(width, 0), shift_(width, 0) {
  std::vector<int32_t> mx(width, 0);
  if (n > 0) {
    for (int c = 0; c < width; ++c) min_[c] = mx[c] = rows[c];
    for (int64_t i = 1; i < n; ++i)
      for (int c = 0; c < width; ++c) {
        int32_t v = rows[i * width + c];
        min_[c] = std::min(min_[c], v);
        mx[c] = std::max(mx[c], v);
      }
  }
  int bits = 0;
  for (int c = 0; c < width; ++c) {
    extent_[c] = static_cast<int64_t>(mx[c]) - min_[c];
    shift_[c] = bits;
    int b = 0;
    while (b < 63 && (int64_t{1} << b) <= extent_[c]) ++b;
    bits += b;
  }
  FK_CHECK(bits <= 128, "minkowski::CoordinateMap",
           "coordinates whose per-axis extents pack into 128 bits",
           std::to_string(bits) + " bits (" + std::to_string(width - 1) + "-D)");
}

CoordinateMap::CoordinateMap(const int32_t* rows, int64_t n, int width,
                             std::vector<int32_t> tensor_stride, std::vector<int64_t>* unique_rows,
                             std::vector<int64_t>* inverse)
    : width_(width), tensor_stride_(std::move(tensor_stride)), packer_(rows, n, width) {
  FK_CHECK(n < (int64_t{1} << 31), "minkowski::CoordinateMap", "fewer than 2^31 coordinates",
           std::to_string(n));
  // Shards only pay when there are threads to fill them.
  int threads = fk::get_num_threads();
  if (n >= 65536 && threads > 1)
    while ((1 << shard_bits_) < threads && shard_bits_ < 6) ++shard_bits_;
  shards_.resize(size_t{1} << shard_bits_);

  std::vector<Key128> keys(n);
  std::vector<size_t> hashes(n);
  fk::parallel_for(0, n, 16384, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      packer_.pack(rows + i * width, keys[i]);
      hashes[i] = Key128Hash()(keys[i]);
    }
  });
  // first[i]: the first input row with row i's coordinate.
  std::vector<int32_t> first(n);
  int64_t nshards = static_cast<int64_t>(shards_.size());
  fk::parallel_for(0, nshards, 1, [&](int64_t slo, int64_t shi) {
    for (int64_t s = slo; s < shi; ++s) {
      Table& t = shards_[s];
      t.reserve(static_cast<size_t>(n / nshards + 16));
      for (int64_t i = 0; i < n; ++i) {
        if (static_cast<int64_t>(shard_of(hashes[i])) != s) continue;
        auto [it, inserted] = t.try_emplace(keys[i], static_cast<int32_t>(i));
        first[i] = inserted ? static_cast<int32_t>(i) : it->second;
      }
    }
  });
  // Map rows in order of first occurrence.
  std::vector<int32_t> id(n);
  int64_t m = 0;
  for (int64_t i = 0; i < n; ++i)
    if (first[i] == i) id[i] = static_cast<int32_t>(m++);
  size_ = m;
  coords_.resize(static_cast<size_t>(m) * width);
  if (unique_rows) unique_rows->resize(m);
  for (int64_t i = 0; i < n; ++i)
    if (first[i] == i) {
      std::copy(rows + i * width, rows + (i + 1) * width, coords_.data() + id[i] * width);
      if (unique_rows) (*unique_rows)[id[i]] = i;
    }
  if (inverse) {
    inverse->resize(n);
    for (int64_t i = 0; i < n; ++i) (*inverse)[i] = id[first[i]];
  }
  if (m < n) {  // otherwise map row == input row already
    fk::parallel_for(0, nshards, 1, [&](int64_t slo, int64_t shi) {
      for (int64_t s = slo; s < shi; ++s)
        for (auto it = shards_[s].begin(); it != shards_[s].end(); ++it)
          it.value() = id[it->second];
    });
  }
}

int64_t CoordinateMap::bytes() const {
  int64_t b = static_cast<int64_t>(coords_.capacity() * sizeof(int32_t));
  for (const auto& t : shards_)
    b += static_cast<int64_t>(t.bucket_count() * (sizeof(std::pair<Key128, int32_t>) + 8));
  return b;
}

}  // namespace minkowski
