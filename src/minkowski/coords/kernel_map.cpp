// The kernel map itself: its pair arrays, the row indexes built on demand
// (grouped by output or input row; by_in of a symmetric map mirrored from
// by_out), the transpose and the identity map. The build is
// kernel_map_build.cpp.
#include "minkowski/coords/kernel_map.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <numeric>
#include <utility>

#include "fk/error.h"
#include "fk/parallel.h"
#include "minkowski/coords/block_schedule.h"

namespace minkowski {

namespace {

// Pairs per chunk of the regrouping below which a thread does not pay (the
// count and scatter passes cost a few ns a pair; each chunk adds a pass over
// the rows' counters).
constexpr int64_t kGroupGrain = int64_t{1} << 15;
// Rows per block of the regrouping's scan over the rows.
constexpr int64_t kGroupRowBlock = int64_t{1} << 14;

// The pairs grouped by rows[p] (CSR over n rows), each row's entries in pair
// order (= offset order): a stable counting sort. In parallel over
// contiguous chunks of pairs: each chunk counts its pairs per row, a scan
// over the rows (chunk after chunk within a row) gives every chunk its
// first slot in every row, and each chunk scatters its pairs from there
// (three parallel passes).
// Within a row, chunk c's pairs land after those of chunks < c and keep
// their order, so the result is the serial one whatever the chunks: their
// number follows the thread count (bounding the counters, 4 bytes x chunks
// x rows), the result does not.
std::shared_ptr<RowIndex> group_rows(const KernelMap& m, const LargeArray<int32_t>& rows,
                                     const LargeArray<int32_t>& others, int64_t n) {
  auto idx = std::make_shared<RowIndex>();
  const int64_t P = m.pairs();
  idx->begin.resize(n + 1);
  idx->entries.resize(P);
  int64_t* begin = idx->begin.data();
  RowEntry* entries = idx->entries.data();
  if (m.identity) {
    fk::parallel_for(0, n + 1, kGroupGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        begin[i] = i;
        if (i < P) entries[i] = {static_cast<int32_t>(i), static_cast<int32_t>(i), 0};
      }
    });
    return idx;
  }
  // Chunks: one per thread, each worth a thread, and few enough that the
  // counters (4 bytes x chunks x rows) stay within the entries' own size.
  const int64_t nc =
      std::max<int64_t>(1, std::min({static_cast<int64_t>(fk::get_num_threads()), P / kGroupGrain,
                                     3 * P / std::max<int64_t>(n, 1), int64_t{16}}));
  // cursor[c * n + r]: chunk c's pairs of row r, then (after the scan) the
  // slot of chunk c's next pair of row r.
  LargeArray<int32_t> cursor(static_cast<size_t>(nc * n));
  const int32_t* row = rows.data();
  const int32_t* other = others.data();
  const int64_t* offset_begin = m.offset_begin.data();
  auto pairs_of = [&](int64_t c) { return std::pair{P * c / nc, P * (c + 1) / nc}; };
  fk::parallel_for(0, nc, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      int32_t* cnt = cursor.data() + c * n;
      std::fill(cnt, cnt + n, 0);
      const auto [lo, hi] = pairs_of(c);
      for (int64_t i = lo; i < hi; ++i) ++cnt[row[i]];
    }
  });
  // Rows in fixed blocks: per block, each row's start and each chunk's first
  // slot in the row, relative to the block; then the blocks' starts.
  const int64_t nb = (n + kGroupRowBlock - 1) / kGroupRowBlock;
  std::vector<int64_t> block_start(nb + 1, 0);
  fk::parallel_for(
      0, nb, std::max<int64_t>(1, kGroupGrain / kGroupRowBlock), [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          int64_t s = 0;
          for (int64_t r = b * kGroupRowBlock; r < std::min(n, (b + 1) * kGroupRowBlock); ++r) {
            begin[r] = s;
            for (int64_t c = 0; c < nc; ++c) {
              int32_t& x = cursor[c * n + r];
              s += std::exchange(x, static_cast<int32_t>(s));
            }
          }
          block_start[b + 1] = s;
        }
      });
  for (int64_t b = 0; b < nb; ++b) block_start[b + 1] += block_start[b];
  // Each chunk scatters its pairs to (its row's block start + its slot in the
  // row) and makes a share of the rows' starts absolute (no pass of its own:
  // on a loaded machine every parallel region costs a wait for the slowest
  // thread).
  const int64_t* base = block_start.data();
  fk::parallel_for(0, nc, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      for (int64_t r = n * c / nc; r < n * (c + 1) / nc; ++r) begin[r] += base[r / kGroupRowBlock];
      int32_t* cur = cursor.data() + c * n;
      const auto [lo, hi] = pairs_of(c);
      int64_t k =
          std::upper_bound(offset_begin, offset_begin + m.volume + 1, lo) - offset_begin - 1;
      for (int64_t i = lo; i < hi; ++i) {
        while (i >= offset_begin[k + 1]) ++k;
        const int32_t r = row[i];
        entries[base[r / kGroupRowBlock] + cur[r]++] = {static_cast<int32_t>(i), other[i],
                                                        static_cast<int32_t>(k)};
      }
    }
  });
  begin[n] = P;
  return idx;
}

// by_in of a symmetric map from its by_out: the pairs with input row i are the
// mirrors of the pairs with output row i (same row, same other row, offset
// mirror[k], pair moved from offset k's range to the same place in mirror[k]'s).
// A row's entries must then be reordered by mirror[k]: reversed when the
// mirror reverses the offset order (centred cubes), else placed by a bit mask
// over the at most 63 mirrored offsets of the row (each offset occurs at most
// once per row), else sorted. Rows are independent: parallel over blocks.
std::shared_ptr<RowIndex> mirror_rows(const KernelMap& m, const RowIndex& by_out) {
  auto idx = std::make_shared<RowIndex>();
  const int64_t n = static_cast<int64_t>(by_out.begin.size()) - 1, K = m.volume;
  idx->begin.resize(n + 1);
  idx->entries.resize(by_out.entries.size());
  std::vector<int32_t> shift(K);  // pair id of the mirror minus pair id
  bool reverses = true;
  for (int64_t k = 0; k < K; ++k) {
    shift[k] = static_cast<int32_t>(m.offset_begin[m.mirror[k]] - m.offset_begin[k]);
    reverses &= m.mirror[k] == K - 1 - k;
  }
  const int64_t* begin = by_out.begin.data();
  const RowEntry* src = by_out.entries.data();
  int64_t* dst_begin = idx->begin.data();
  RowEntry* dst = idx->entries.data();
  const int32_t* mirror = m.mirror.data();
  fk::parallel_for(0, n, 8192, [&](int64_t lo, int64_t hi) {
    std::copy(begin + lo, begin + hi + (hi == n), dst_begin + lo);
    RowEntry slot[64];
    for (int64_t r = lo; r < hi; ++r) {
      const RowEntry* o = src + begin[r];
      RowEntry* e = dst + begin[r];
      const int64_t cnt = begin[r + 1] - begin[r];
      auto mirrored = [&](const RowEntry& x) {
        return RowEntry{x.pair + shift[x.offset], x.other, mirror[x.offset]};
      };
      if (reverses) {
        for (int64_t j = 0; j < cnt; ++j) e[cnt - 1 - j] = mirrored(o[j]);
      } else if (K <= 64) {
        uint64_t mask = 0;
        for (int64_t j = 0; j < cnt; ++j) {
          const RowEntry x = mirrored(o[j]);
          slot[x.offset] = x;
          mask |= uint64_t{1} << x.offset;
        }
        for (; mask; mask &= mask - 1) *e++ = slot[__builtin_ctzll(mask)];
      } else {
        for (int64_t j = 0; j < cnt; ++j) e[j] = mirrored(o[j]);
        std::sort(e, e + cnt, [](const RowEntry& a, const RowEntry& b) { return a.pair < b.pair; });
      }
    }
  });
  return idx;
}

}  // namespace

int64_t KernelMap::pair_bytes() const {
  int64_t b = static_cast<int64_t>((in_rows.capacity() + out_rows.capacity()) * sizeof(int32_t) +
                                   offset_begin.capacity() * sizeof(int64_t));
  std::lock_guard<std::mutex> lock(blocks_mu_);
  for (const auto& blocks : blocks_)
    if (blocks) b += blocks->bytes();
  return b;
}

std::vector<std::shared_ptr<const RowIndex>> KernelMap::row_indices() const {
  std::lock_guard<std::mutex> lock(rows_->mu);
  std::vector<std::shared_ptr<const RowIndex>> r;
  for (const auto& idx : {rows_->first, rows_->second})
    if (idx) r.push_back(idx);
  return r;
}

int64_t KernelMap::bytes() const {
  int64_t b = pair_bytes();
  for (const auto& idx : row_indices()) b += idx->bytes();
  return b;
}

const RowIndex& KernelMap::by_out() const {
  std::lock_guard<std::mutex> lock(rows_->mu);
  auto& by_out = swapped_ ? rows_->second : rows_->first;
  if (!by_out) by_out = group_rows(*this, out_rows.rows(), in_rows.rows(), out_size);
  return *by_out;
}

const RowIndex& KernelMap::by_in() const {
  std::lock_guard<std::mutex> lock(rows_->mu);
  auto& by_out = swapped_ ? rows_->second : rows_->first;
  auto& by_in = swapped_ ? rows_->first : rows_->second;
  if (!by_in) {
    if (!mirror.empty()) {
      if (!by_out) by_out = group_rows(*this, out_rows.rows(), in_rows.rows(), out_size);
      by_in = mirror_rows(*this, *by_out);
    } else {
      by_in = group_rows(*this, in_rows.rows(), out_rows.rows(), in_size);
    }
  }
  return *by_in;
}

const RowBlocks& KernelMap::row_blocks(bool inputs) const {
  // by_out()/by_in() take the row indices' lock: not this one
  std::lock_guard<std::mutex> lock(blocks_mu_);
  auto& blocks = blocks_[inputs ? 1 : 0];
  if (!blocks) {
    if (!inputs)
      blocks = group_row_blocks(by_out(), volume, nullptr);
    else if (!mirror.empty())
      blocks = group_row_blocks(by_out(), volume, mirror.data());
    else
      blocks = group_row_blocks(by_in(), volume, nullptr);
  }
  return *blocks;
}

std::shared_ptr<KernelMap> KernelMap::transposed() const {
  auto t = std::make_shared<KernelMap>();
  t->volume = volume;
  t->in_size = out_size;
  t->out_size = in_size;
  t->identity = identity;
  t->offset_begin = offset_begin;
  t->in_rows = out_rows;
  t->out_rows = in_rows;
  // Same pair ids with the sides swapped: the adjoint's row indices and
  // device copies are kept with ours, including those either map makes later.
  t->rows_ = rows_;
  t->swapped_ = !swapped_;
  t->device_copies_ = device_copies_;
  return t;
}

std::shared_ptr<KernelMap> KernelMap::make_identity(int64_t n) {
  auto m = std::make_shared<KernelMap>();
  m->volume = 1;
  m->in_size = m->out_size = n;
  m->identity = true;
  m->offset_begin = {0, n};
  return m;
}

std::shared_ptr<const void> KernelMap::device_copy(
    int device, const std::function<std::shared_ptr<const void>()>& make) const {
  std::lock_guard<std::mutex> lock(device_copies_->mu);
  for (const DeviceCopy& c : device_copies_->copies)
    if (c.device == device && c.swapped == swapped_) return c.copy;
  device_copies_->copies.push_back({device, swapped_, make()});
  return device_copies_->copies.back().copy;
}

std::shared_ptr<const void> KernelMap::transposed_device_copy(int device) const {
  std::lock_guard<std::mutex> lock(device_copies_->mu);
  for (const DeviceCopy& c : device_copies_->copies)
    if (c.device == device && c.swapped != swapped_) return c.copy;
  return nullptr;
}

}  // namespace minkowski
