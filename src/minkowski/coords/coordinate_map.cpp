#include "minkowski/coords/coordinate_map.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <string>
#include <utility>

#include "fk/error.h"
#include "fk/parallel.h"

namespace minkowski {

namespace {

// Per-column minimum and maximum of n rows of `width` columns (width fixed at
// compile time for the common widths, so the loop over columns unrolls).
template <int W>
void column_bounds(const int32_t* rows, int64_t n, int width, int32_t* lo, int32_t* hi) {
  const int w = W > 0 ? W : width;
  for (int c = 0; c < w; ++c) lo[c] = hi[c] = rows[c];
  for (int64_t i = 1; i < n; ++i)
    for (int c = 0; c < w; ++c) {
      const int32_t v = rows[i * w + c];
      lo[c] = std::min(lo[c], v);
      hi[c] = std::max(hi[c], v);
    }
}

// Stable LSD radix sort of (keys, rows) by the low `bits` bits of the keys,
// 11 bits per pass; passes whose digit is the same for every key are skipped.
// The histograms of all passes come from one read of the keys.
template <typename Key>
void radix_sort(LargeArray<Key>& keys, LargeArray<int32_t>& rows, int bits) {
  constexpr int kDigit = 11;
  constexpr size_t kBuckets = size_t{1} << kDigit;
  const int64_t n = static_cast<int64_t>(keys.size());
  const int passes = (bits + kDigit - 1) / kDigit;
  std::vector<std::array<int64_t, kBuckets>> count(passes);
  for (auto& c : count) c.fill(0);
  for (int64_t i = 0; i < n; ++i)
    for (int p = 0; p < passes; ++p)
      ++count[p][static_cast<size_t>(keys[i] >> (p * kDigit)) & (kBuckets - 1)];
  LargeArray<Key> k2(n);
  LargeArray<int32_t> r2(n);
  for (int p = 0; p < passes; ++p) {
    auto& c = count[p];
    if (std::find(c.begin(), c.end(), n) != c.end()) continue;  // one digit value only
    int64_t sum = 0;
    for (auto& x : c) sum += std::exchange(x, sum);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t at = c[static_cast<size_t>(keys[i] >> (p * kDigit)) & (kBuckets - 1)]++;
      k2[at] = keys[i];
      r2[at] = rows[i];
    }
    keys.swap(k2);
    rows.swap(r2);
  }
}

}  // namespace

CoordinatePacker::CoordinatePacker(const int32_t* rows, int64_t n, int width)
    : width_(width), min_(width, 0), extent_(width, 0), shift_(width, 0) {
  std::vector<int32_t> mx(width, 0);
  if (n > 0) {
    switch (width) {
      case 3:
        column_bounds<3>(rows, n, width, min_.data(), mx.data());
        break;
      case 4:
        column_bounds<4>(rows, n, width, min_.data(), mx.data());
        break;
      case 5:
        column_bounds<5>(rows, n, width, min_.data(), mx.data());
        break;
      default:
        column_bounds<0>(rows, n, width, min_.data(), mx.data());
    }
  }
  // x_D in the lowest bits, the batch in the highest: key order is the
  // lexicographic order of the rows.
  int bits = 0;
  for (int c = width - 1; c >= 0; --c) {
    extent_[c] = static_cast<int64_t>(mx[c]) - min_[c];
    int b = 0;
    while (b < 63 && (int64_t{1} << b) <= extent_[c]) ++b;
    // A column of one value packs as 0 at any shift: 0 keeps the shift below
    // the key's width when the columns under it fill all of it.
    shift_[c] = b == 0 ? 0 : bits;
    bits += b;
  }
  bits_ = bits;
  FK_CHECK(bits <= 128, "minkowski::CoordinateMap",
           "coordinates whose per-axis extents pack into 128 bits",
           fk::to_text(bits) + " bits (" + fk::to_text(width - 1) + "-D)");
}

CoordinateMap::CoordinateMap(const int32_t* rows, int64_t n, int width,
                             std::vector<int32_t> tensor_stride, std::vector<int64_t>* unique_rows,
                             std::vector<int64_t>* inverse, RowOrder row_order)
    : width_(width), tensor_stride_(std::move(tensor_stride)), packer_(rows, n, width) {
  FK_CHECK(n < (int64_t{1} << 31), "minkowski::CoordinateMap", "fewer than 2^31 coordinates",
           fk::to_text(n));
  if (packer_.bits() <= 64)
    build<uint64_t>(rows, n, unique_rows, inverse, row_order);
  else
    build<Key128>(rows, n, unique_rows, inverse, row_order);
}

namespace {

// The rows' coordinates, the input row of each map row and the map row of
// each input row: what deduplication hands the map.
struct Unique {
  int64_t size = 0;
  std::vector<int32_t> coords;
  LargeArray<int32_t> key_row;  // map row of each sorted key
};

// kKeys order: map row u = the u-th distinct key, taken from its first
// occurrence (the stable sort put it first in its run of equal keys). keys
// and order (input row of each sorted key) are compacted to the unique keys.
template <typename Key>
Unique unique_in_key_order(const int32_t* rows, int64_t n, int w, LargeArray<Key>& keys,
                           LargeArray<int32_t>& order, std::vector<int64_t>* unique_rows,
                           std::vector<int64_t>* inverse) {
  if (inverse) inverse->resize(n);
  int64_t u = 0;  // unique keys so far, compacted to the front of keys/order
  for (int64_t s = 0; s < n; ++s) {
    const int32_t i = order[s];
    if (s == 0 || keys[s] != keys[s - 1]) {
      keys[u] = keys[s];
      order[u++] = i;
    }
    if (inverse) (*inverse)[i] = u - 1;
  }
  Unique r;
  r.size = u;
  r.coords.resize(static_cast<size_t>(u) * w);
  if (unique_rows) unique_rows->assign(order.begin(), order.begin() + u);
  for (int64_t m = 0; m < u; ++m)
    std::copy(rows + int64_t{order[m]} * w, rows + (int64_t{order[m]} + 1) * w,
              r.coords.data() + m * w);
  r.key_row.resize(u);
  std::iota(r.key_row.begin(), r.key_row.end(), 0);
  return r;
}

// kFirstOccurrence order: runs of equal keys (the stable sort put each run's
// first occurrence first) name each input row's first occurrence; map rows
// follow the first occurrences in input order. keys are compacted as above.
template <typename Key>
Unique unique_in_input_order(const int32_t* rows, int64_t n, int w, LargeArray<Key>& keys,
                             LargeArray<int32_t>& order, std::vector<int64_t>* unique_rows,
                             std::vector<int64_t>* inverse) {
  LargeArray<int32_t> first(n);  // the first input row with row i's coordinate
  int64_t u = 0;
  for (int64_t s = 0; s < n; ++s) {
    if (s == 0 || keys[s] != keys[s - 1]) {
      keys[u] = keys[s];
      order[u++] = order[s];
    }
    first[order[s]] = order[u - 1];
  }
  LargeArray<int32_t> id(n);  // map row of each first occurrence
  int64_t m = 0;
  for (int64_t i = 0; i < n; ++i)
    if (first[i] == i) id[i] = static_cast<int32_t>(m++);
  Unique r;
  r.size = m;
  r.coords.resize(static_cast<size_t>(m) * w);
  if (unique_rows) unique_rows->resize(m);
  for (int64_t i = 0; i < n; ++i)
    if (first[i] == i) {
      std::copy(rows + i * w, rows + (i + 1) * w, r.coords.data() + int64_t{id[i]} * w);
      if (unique_rows) (*unique_rows)[id[i]] = i;
    }
  if (inverse) {
    inverse->resize(n);
    for (int64_t i = 0; i < n; ++i) (*inverse)[i] = id[first[i]];
  }
  r.key_row.resize(m);
  for (int64_t s = 0; s < m; ++s) r.key_row[s] = id[order[s]];
  return r;
}

// bucket[b] = the first of the sorted keys whose top `bucket bits` are >= b,
// about one bucket per key (at most 2^24). Returns the shift of those bits.
template <typename Key>
int bucket_table(const LargeArray<Key>& keys, int64_t size, int bits, LargeArray<int32_t>& bucket) {
  int bucket_bits = 0;
  while (bucket_bits < bits && bucket_bits < 24 &&
         (bucket_bits == 0 || (int64_t{1} << bucket_bits) < size))
    ++bucket_bits;
  const int shift = bits - bucket_bits;
  const int64_t nb = int64_t{1} << bucket_bits;
  bucket.resize(nb + 1);
  int64_t s = 0;
  for (int64_t b = 0; b <= nb; ++b) {
    while (s < size && static_cast<int64_t>(keys[s] >> shift) < b) ++s;
    bucket[b] = static_cast<int32_t>(s);
  }
  return shift;
}

}  // namespace

template <typename Key>
void CoordinateMap::build(const int32_t* rows, int64_t n, std::vector<int64_t>* unique_rows,
                          std::vector<int64_t>* inverse, RowOrder row_order) {
  const int w = width_;
  LargeArray<Key> keys(n);
  // ~2 ns a row: threads pay only for millions of rows (waking a team costs more).
  fk::parallel_for(0, n, int64_t{1} << 20, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) keys[i] = packer_.pack_inside<Key>(rows + i * w);
  });
  bool ascending = true;  // rows in key order without duplicates: nothing to sort or merge
  for (int64_t i = 1; i < n && ascending; ++i) ascending = keys[i - 1] < keys[i];
  LargeArray<int32_t> order(n);  // input row of each sorted key
  std::iota(order.begin(), order.end(), 0);

  if (ascending) {
    size_ = n;
    coords_.assign(rows, rows + n * w);
    key_row_ = std::move(order);
    if (unique_rows) {
      unique_rows->resize(n);
      std::iota(unique_rows->begin(), unique_rows->end(), int64_t{0});
    }
    if (inverse) {
      inverse->resize(n);
      std::iota(inverse->begin(), inverse->end(), int64_t{0});
    }
  } else {
    radix_sort(keys, order, packer_.bits());
    Unique u = row_order == RowOrder::kKeys
                   ? unique_in_key_order(rows, n, w, keys, order, unique_rows, inverse)
                   : unique_in_input_order(rows, n, w, keys, order, unique_rows, inverse);
    size_ = u.size;
    coords_ = std::move(u.coords);
    key_row_ = std::move(u.key_row);
    keys.resize(size_);
    keys.shrink_to_fit();  // the map keeps one key per map row, not per input row
  }
  bucket_shift_ = bucket_table(keys, size_, packer_.bits(), bucket_);
  if constexpr (sizeof(Key) == 8)
    keys64_ = std::move(keys);
  else
    keys128_ = std::move(keys);
}

template <typename Key>
int64_t CoordinateMap::search(const LargeArray<Key>& keys, Key k) const {
  const int64_t b = static_cast<int64_t>(k >> bucket_shift_);
  const Key* lo = keys.data() + bucket_[b];
  const Key* hi = keys.data() + bucket_[b + 1];
  const Key* at = std::lower_bound(lo, hi, k);
  return at != hi && *at == k ? key_row_[at - keys.data()] : -1;
}

int64_t CoordinateMap::find_key(Key128 k) const {
  if (size_ == 0) return -1;
  if (packer_.bits() < 128 && (k >> packer_.bits()) != 0) return -1;  // not of this layout
  if (packer_.bits() <= 64) return search(keys64_, static_cast<uint64_t>(k));
  return search(keys128_, k);
}

int64_t CoordinateMap::bytes() const {
  return static_cast<int64_t>(coords_.capacity() * sizeof(int32_t) +
                              keys64_.capacity() * sizeof(uint64_t) +
                              keys128_.capacity() * sizeof(Key128) +
                              (key_row_.capacity() + bucket_.capacity()) * sizeof(int32_t));
}

}  // namespace minkowski
