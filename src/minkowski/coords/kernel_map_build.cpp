// build_kernel_map: the pairs (input row, output row) of every kernel offset
// between two coordinate maps, found by a merge over packed, sorted keys
// (kernel_map_layout.h) with kernel_map_search.h's search, in two passes:
// search every output row's neighbours, then lay the pairs out.
#include "minkowski/coords/kernel_map.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "fk/error.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "minkowski/coords/block_schedule.h"
#include "minkowski/coords/kernel_map_layout.h"
#include "minkowski/coords/kernel_map_search.h"

namespace minkowski {

namespace {

using namespace kernel_map_build;

// A symmetric map onto itself: mirror[k] = the offset -offsets[k] (empty when
// some offset has no negation in the region, the maps differ, or repeated
// offsets make the pairing ambiguous: it must be an involution).
std::vector<int32_t> find_mirror(const CoordinateMap& in, const CoordinateMap& out,
                                 const std::vector<int32_t>& offsets, int d) {
  const int64_t K = static_cast<int64_t>(offsets.size()) / d;
  if (&in != &out) return {};
  std::vector<int32_t> mirror(K, -1);
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t q = 0; q < K && mirror[k] < 0; ++q) {
      bool neg = true;
      for (int i = 0; i < d && neg; ++i) neg = offsets[q * d + i] == -offsets[k * d + i];
      if (neg) mirror[k] = static_cast<int32_t>(q);
    }
    if (mirror[k] < 0) return {};
  }
  for (int64_t k = 0; k < K; ++k)
    if (mirror[mirror[k]] != k) return {};
  return mirror;
}

// Calls fn(k) for the set bits of mask (words words), ascending.
template <typename Fn>
inline void for_bits(const uint64_t* mask, int words, const Fn& fn) {
  for (int w = 0; w < words; ++w)
    for (uint64_t m = mask[w]; m; m &= m - 1) fn(static_cast<int32_t>(w * 64 + __builtin_ctzll(m)));
}

// Both maps' (key, row) lists in ascending key order; the output side is the
// input's own when the maps are one. Not movable: out_keys/out_rows may point
// at the input side.
template <typename Key>
struct SortedSides {
  LargeArray<Key> in_keys, out_keys_own;
  LargeArray<int32_t> in_rows, out_rows_own;
  bool in_ordered = false;  // key position = input row
  const LargeArray<Key>* out_keys = &in_keys;
  const LargeArray<int32_t>* out_rows = &in_rows;

  SortedSides(const CoordinateMap& in, const CoordinateMap& out, const BuildLayout& l) {
    in_ordered = sorted_keys<Key>(in, l, in_keys, in_rows);
    if (&in != &out) {
      sorted_keys<Key>(out, l, out_keys_own, out_rows_own);
      out_keys = &out_keys_own;
      out_rows = &out_rows_own;
    }
  }
  SortedSides(const SortedSides&) = delete;
  SortedSides& operator=(const SortedSides&) = delete;
};

// Fixed chunks of output rows in key order (the result does not depend on
// the thread count, nor on the chunk size: pairs of an offset follow the
// output keys either way). Chunks are handed out on demand, enough of them
// (~25 for 100k rows) that two threads end together.
constexpr int64_t kChunk = 4096;

// What the search pass leaves for the layout pass.
struct ChunkedPairs {
  int64_t K = 0, chunks = 0;
  int words = 1;
  bool parallel = false;
  // count[c * K + k]: chunk c's pairs of offset k; after offset_ranges, the
  // pair id where they start.
  std::vector<int64_t> count;
  // found[c]: the input rows of chunk c's rows' pairs, row after row, each
  // row's in offset order; masks: each output row's offsets (words words per
  // row, in key order).
  std::vector<LargeArray<int32_t>> found;
  LargeArray<uint64_t> masks;

  ChunkedPairs(int64_t n_out, int64_t volume, int mask_words)
      : K(volume),
        chunks((n_out + kChunk - 1) / kChunk),
        words(mask_words),
        parallel(n_out * volume >= (int64_t{1} << 18)),
        count(static_cast<size_t>(chunks * volume), 0),
        found(chunks),
        masks(static_cast<size_t>(n_out * mask_words)) {}
};

// Pass 1: searches every output row's neighbours, chunk by chunk, keeping
// each row's offset mask and input rows (in r) and its pair count in
// row_begin[out row + 1].
template <int kWords, typename Key>
void search_pairs(const SortedSides<Key>& s, int64_t n_in, int64_t n_out,
                  const SearchPlan<Key>& plan, ChunkedPairs& r, int64_t* row_begin) {
  const int64_t K = r.K;
  const int words = kWords > 0 ? kWords : r.words;
  const bool sliding = kWords == 1 && plan.other.empty();
  const SlidingTables tables = sliding ? make_sliding_tables(plan, K) : SlidingTables{};
  const bool in_ordered = s.in_ordered;
  const Key* ik = s.in_keys.data();
  const Key* ok = s.out_keys->data();
  const int32_t* ir = s.in_rows.data();
  const int32_t* orow = s.out_rows->data();
  uint64_t* mo = r.masks.data();
  for_blocks(r.chunks, 1, r.parallel, [&](auto&& each_chunk) {
    each_chunk([&](int64_t c) {
      // Counted in the thread's own array: neighbouring chunks' counters
      // share cache lines, and two threads work on neighbouring chunks.
      std::vector<int64_t> counts(K, 0);
      int64_t* cc = counts.data();
      const int64_t j0 = c * kChunk, j1 = std::min(n_out, j0 + kChunk);
      // Room for the worst case, uninitialised: only the written prefix is
      // ever touched.
      r.found[c].resize(static_cast<size_t>((j1 - j0) * K));
      int32_t* fi = r.found[c].data();
      auto emit = [&](int64_t j, const uint64_t* mask, const auto& position) {
        int32_t* f = fi;
        for_bits(mask, words, [&](int32_t k) {
          const int64_t q = position(k);
          *f++ = in_ordered ? static_cast<int32_t>(q) : ir[q];
          ++cc[k];
        });
        for (int v = 0; v < words; ++v) mo[j * words + v] = mask[v];
        row_begin[orow[j] + 1] = f - fi;
        fi = f;
      };
      if (sliding)
        search_rows_sliding(ik, n_in, ok, plan, tables, j0, j1, emit);
      else
        search_rows<kWords>(ik, n_in, ok, plan, j0, j1, emit);
      std::copy(counts.begin(), counts.end(), r.count.begin() + c * K);
    });
  });
}

// The offsets' pair ranges (offset order, chunk order within an offset), each
// chunk's counts replaced by its first pair id in each offset. Returns the
// number of pairs.
int64_t offset_ranges(ChunkedPairs& r, std::vector<int64_t>& offset_begin) {
  int64_t total = 0;
  for (int64_t k = 0; k < r.K; ++k) {
    offset_begin[k] = total;
    for (int64_t c = 0; c < r.chunks; ++c) total += std::exchange(r.count[c * r.K + k], total);
  }
  offset_begin[r.K] = total;
  return total;
}

// Pass 2 (kWords as in search_rows): writes every pair at its place in offset order (in_rows,
// out_rows) and in its output row's list (entries at row_begin[out row]), freeing each chunk's
// found rows when done.
template <int kWords>
void lay_out_pairs(ChunkedPairs& r, const int32_t* orow, int64_t n_out, const int64_t* row_begin,
                   int32_t* in_rows, int32_t* out_rows, RowEntry* entries) {
  const int64_t K = r.K;
  const int words = kWords > 0 ? kWords : r.words;
  for_blocks(r.chunks, 1, r.parallel, [&](auto&& each_chunk) {
    each_chunk([&](int64_t c) {
      std::vector<int64_t> cursors(r.count.begin() + c * K, r.count.begin() + (c + 1) * K);
      int64_t* cursor = cursors.data();
      const int64_t j0 = c * kChunk, j1 = std::min(n_out, j0 + kChunk);
      const int32_t* ins = r.found[c].data();
      for (int64_t j = j0; j < j1; ++j) {
        const int32_t o = orow[j];
        RowEntry* e = entries + row_begin[o];
        for_bits(r.masks.data() + j * words, words, [&](int32_t k) {
          const int64_t p = cursor[k]++;
          const int32_t i = *ins++;
          // 2K write streams (one per offset and array) are more than the
          // hardware prefetcher follows: without this, a third of the build
          // waited for cache lines to be read before being overwritten.
          __builtin_prefetch(in_rows + p + 64, 1, 3);
          __builtin_prefetch(out_rows + p + 64, 1, 3);
          in_rows[p] = i;
          out_rows[p] = o;
          *e++ = {static_cast<int32_t>(p), i, k};
        });
      }
      LargeArray<int32_t>().swap(r.found[c]);
    });
  });
}

// The kernel map in two passes over the output rows: search (each row's
// neighbours), then, once the counts are known, lay out the pairs in offset
// order and the rows' lists as by_out.
template <int kWords, typename Key>
std::shared_ptr<KernelMap> build_with(const CoordinateMap& in, const CoordinateMap& out,
                                      const std::vector<int32_t>& offsets, const BuildLayout& l) {
  const int d = in.width() - 1;
  const int64_t K = static_cast<int64_t>(offsets.size()) / d;
  const int64_t n_out = out.size();
  auto m = std::make_shared<KernelMap>();
  m->volume = K;
  m->in_size = in.size();
  m->out_size = n_out;
  m->offset_begin.assign(K + 1, 0);

  const SortedSides<Key> sides(in, out, l);
  const SearchPlan<Key> plan = make_plan<Key>(make_lines(offsets, d, l), K);
  ChunkedPairs pairs(n_out, K, plan.words);
  auto idx = std::make_shared<RowIndex>();
  idx->begin.resize(n_out + 1);
  int64_t* row_begin = idx->begin.data();
  search_pairs<kWords>(sides, in.size(), n_out, plan, pairs, row_begin);

  const int64_t total = offset_ranges(pairs, m->offset_begin);
  FK_CHECK(total <= std::numeric_limits<int32_t>::max(), "minkowski::kernel_map",
           "at most 2^31 - 1 pairs (int32 pair ids)", fk::to_text(total) + " pairs");
  row_begin[0] = 0;
  for (int64_t r = 0; r < n_out; ++r) row_begin[r + 1] += row_begin[r];
  m->in_rows.resize(total);
  m->out_rows.resize(total);
  idx->entries.resize(total);
  lay_out_pairs<kWords>(pairs, sides.out_rows->data(), n_out, row_begin, m->in_rows.data(),
                        m->out_rows.data(), idx->entries.data());
  m->mirror = find_mirror(in, out, offsets, d);
  m->adopt_by_out(std::move(idx));
  return m;
}

template <typename Key>
std::shared_ptr<KernelMap> build_keyed(const CoordinateMap& in, const CoordinateMap& out,
                                       const std::vector<int32_t>& offsets, const BuildLayout& l) {
  const int64_t K = static_cast<int64_t>(offsets.size()) / (in.width() - 1);
  if (K <= 63) return build_with<1, Key>(in, out, offsets, l);
  return build_with<0, Key>(in, out, offsets, l);
}

}  // namespace

std::shared_ptr<KernelMap> build_kernel_map(const CoordinateMap& in, const CoordinateMap& out,
                                            const std::vector<int32_t>& offsets) {
  const int d = in.width() - 1;
  const int64_t K = static_cast<int64_t>(offsets.size()) / d;
  if (out.size() == 0 || in.size() == 0) {
    auto m = std::make_shared<KernelMap>();
    m->volume = K;
    m->in_size = in.size();
    m->out_size = out.size();
    m->offset_begin.assign(K + 1, 0);
    return m;
  }
  BuildLayout l = make_layout(in, out, offsets);
  // The narrowest key that holds the layout (and its all-ones sentinel).
  if (l.bits <= 31) return build_keyed<uint32_t>(in, out, offsets, l);
  if (l.bits <= 63) return build_keyed<uint64_t>(in, out, offsets, l);
  FK_CHECK(l.bits <= 127, "minkowski::kernel_map",
           "coordinates (padded by the kernel's reach) whose per-axis extents pack into 127 bits",
           fk::to_text(l.bits) + " bits");
  return build_keyed<Key128>(in, out, offsets, l);
}

}  // namespace minkowski
