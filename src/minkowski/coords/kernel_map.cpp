#include "minkowski/coords/kernel_map.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <numeric>
#include <string>
#include <utility>

#include "fk/error.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "minkowski/coords/block_schedule.h"

namespace minkowski {

namespace {

std::shared_ptr<RowIndex> group_rows(const KernelMap& m, const LargeArray<int32_t>& rows,
                                     const LargeArray<int32_t>& others, int64_t n) {
  auto idx = std::make_shared<RowIndex>();
  int64_t p = m.pairs();
  idx->begin.assign(n + 1, 0);
  idx->entries.resize(p);
  if (m.identity) {
    std::iota(idx->begin.begin(), idx->begin.end(), int64_t{0});
    for (int64_t i = 0; i < p; ++i)
      idx->entries[i] = {static_cast<int32_t>(i), static_cast<int32_t>(i), 0};
    return idx;
  }
  for (int64_t i = 0; i < p; ++i) ++idx->begin[rows[i] + 1];
  for (int64_t r = 0; r < n; ++r) idx->begin[r + 1] += idx->begin[r];
  std::vector<int64_t> cursor(idx->begin.begin(), idx->begin.end() - 1);
  for (int64_t k = 0; k < m.volume; ++k)
    for (int64_t i = m.offset_begin[k]; i < m.offset_begin[k + 1]; ++i) {
      int64_t at = cursor[rows[i]]++;
      idx->entries[at] = {static_cast<int32_t>(i), others[i], static_cast<int32_t>(k)};
    }
  return idx;
}

// by_in of a symmetric map from its by_out: the pairs with input row i are the
// mirrors of the pairs with output row i.
std::shared_ptr<RowIndex> mirror_rows(const KernelMap& m, const RowIndex& by_out) {
  auto idx = std::make_shared<RowIndex>();
  idx->begin = by_out.begin;
  idx->entries.resize(by_out.entries.size());
  int64_t n = static_cast<int64_t>(by_out.begin.size()) - 1;
  for (int64_t r = 0; r < n; ++r) {
    RowEntry* e = idx->entries.data() + by_out.begin[r];
    int64_t cnt = by_out.begin[r + 1] - by_out.begin[r];
    for (int64_t j = 0; j < cnt; ++j) {
      const RowEntry& o = by_out.entries[by_out.begin[r] + j];
      int32_t mk = m.mirror[o.offset];
      e[j] = {static_cast<int32_t>(m.offset_begin[mk] + (o.pair - m.offset_begin[o.offset])),
              o.other, mk};
    }
    // offset order (= pair order): a short insertion sort
    for (int64_t j = 1; j < cnt; ++j)
      for (int64_t q = j; q > 0 && e[q - 1].pair > e[q].pair; --q) std::swap(e[q - 1], e[q]);
  }
  return idx;
}

}  // namespace

int64_t KernelMap::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t b = static_cast<int64_t>((in_rows.capacity() + out_rows.capacity()) * 4 +
                                   offset_begin.capacity() * 8);
  for (const auto* r : {by_out_.get(), by_in_.get()})
    if (r)
      b += static_cast<int64_t>(r->begin.capacity() * 8 + r->entries.capacity() * sizeof(RowEntry));
  return b;
}

const RowIndex& KernelMap::by_out() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!by_out_) by_out_ = group_rows(*this, out_rows, in_rows, out_size);
  return *by_out_;
}

const RowIndex& KernelMap::by_in() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!by_in_) {
    if (!mirror.empty()) {
      if (!by_out_) by_out_ = group_rows(*this, out_rows, in_rows, out_size);
      by_in_ = mirror_rows(*this, *by_out_);
    } else {
      by_in_ = group_rows(*this, in_rows, out_rows, in_size);
    }
  }
  return *by_in_;
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

namespace {

// The kernel-map build's own key layout: the batch index on top, below it the
// spatial axes from the one that changes least often between consecutive
// output rows to the one that changes most often (`line_axis`, lowest bits):
// for rows stored in coordinate order (as scenes and strided maps usually
// are) the key order is then the row order, so the writes of the build and
// the reads of a convolution run through memory sequentially. Every axis is
// padded by the kernel's reach on it, so out_key + delta(offset) is exactly
// the key of out_coord + offset (no carries, no bounds checks), and
// neighbours along line_axis have consecutive keys.
struct BuildLayout {
  std::vector<int64_t> lo;
  std::vector<int> shift;
  int bits = 0;
  int line_axis = 1;  // column
};

BuildLayout make_layout(const CoordinateMap& in, const CoordinateMap& out,
                        const std::vector<int32_t>& offsets) {
  const int w = in.width(), d = w - 1;
  const int64_t K = static_cast<int64_t>(offsets.size()) / d;
  BuildLayout l;
  l.lo.resize(w);
  l.shift.resize(w);
  std::vector<int64_t> reach(w, 0);
  for (int64_t k = 0; k < K; ++k)
    for (int i = 0; i < d; ++i)
      reach[i + 1] = std::max<int64_t>(reach[i + 1], std::abs(int64_t{offsets[k * d + i]}));
  const CoordinatePacker &pi = in.packer(), &po = out.packer();
  // How often each axis changes between consecutive output rows.
  std::vector<int64_t> changes(w, 0);
  for (int64_t i = 1; i < out.size(); ++i) {
    const int32_t *a = out.row(i - 1), *b = out.row(i);
    for (int c = 1; c < w; ++c) changes[c] += a[c] != b[c];
  }
  std::vector<int> order(d);  // columns from least to most significant, then 0
  std::iota(order.begin(), order.end(), 1);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return changes[a] > changes[b]; });
  order.push_back(0);
  l.line_axis = order[0];
  for (int c : order) {
    int64_t lo = std::min<int64_t>(pi.min(c), po.min(c)) - reach[c];
    int64_t hi = std::max<int64_t>(pi.min(c) + pi.extent(c), po.min(c) + po.extent(c)) + reach[c];
    int b = 0;
    while (b < 63 && (int64_t{1} << b) <= hi - lo) ++b;
    l.lo[c] = lo;
    l.shift[c] = l.bits;
    l.bits += b;
  }
  return l;
}

template <typename Key>
Key pack_key(const BuildLayout& l, const int32_t* row, int w) {
  Key k = 0;
  for (int c = 0; c < w; ++c)
    k |= static_cast<Key>(static_cast<int64_t>(row[c]) - l.lo[c]) << l.shift[c];
  return k;
}

// (key, row) of every map row in ascending key order: LSD radix sort, 11-bit
// digits over the layout's bits (stable, so deterministic). keys gets a
// sentinel above every key at index n (and rows a -1 there).
template <typename Key>
void sorted_keys(const CoordinateMap& m, const BuildLayout& l, std::vector<Key>& keys,
                 std::vector<int32_t>& rows) {
  const int64_t n = m.size();
  const int w = m.width();
  std::vector<Key> k2;
  std::vector<int32_t> r2;
  keys.resize(n + 1);
  rows.resize(n);
  fk::parallel_for(0, n, 32768, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      keys[i] = pack_key<Key>(l, m.row(i), w);
      rows[i] = static_cast<int32_t>(i);
    }
  });
  bool sorted = true;  // rows already in key order (scenes often are): no sort
  for (int64_t i = 1; i < n && sorted; ++i) sorted = keys[i - 1] < keys[i];
  constexpr int kDigit = 11;
  std::vector<int64_t> count(size_t{1} << kDigit);
  for (int s = 0; s < l.bits && !sorted; s += kDigit) {
    std::fill(count.begin(), count.end(), 0);
    const Key mask = (Key{1} << kDigit) - 1;
    k2.resize(n);
    r2.resize(n);
    for (int64_t i = 0; i < n; ++i) ++count[static_cast<size_t>((keys[i] >> s) & mask)];
    int64_t sum = 0;
    for (auto& c : count) sum += std::exchange(c, sum);
    for (int64_t i = 0; i < n; ++i) {
      int64_t at = count[static_cast<size_t>((keys[i] >> s) & mask)]++;
      k2[at] = keys[i];
      r2[at] = rows[i];
    }
    std::copy(k2.begin(), k2.begin() + n, keys.begin());
    rows.swap(r2);
  }
  keys[n] = ~Key{0};
  rows.push_back(-1);
}

// Offsets that differ only along the line axis form a line: one merge pointer per line
// finds all of them, as their keys are consecutive.
struct Line {
  Key128 delta;  // key offset of the line at dx = 0 (two's complement)
  std::vector<std::pair<int32_t, int32_t>> dx;  // (dx, k), ascending
};

std::vector<Line> make_lines(const std::vector<int32_t>& offsets, int d, const BuildLayout& l) {
  const int64_t K = static_cast<int64_t>(offsets.size()) / d;
  std::vector<Line> lines;
  std::vector<std::vector<int32_t>> rest;  // components 2..D of each line
  for (int64_t k = 0; k < K; ++k) {
    const int32_t* o = offsets.data() + k * d;
    std::vector<int32_t> r(o, o + d);
    r[l.line_axis - 1] = 0;
    size_t at = std::find(rest.begin(), rest.end(), r) - rest.begin();
    if (at == rest.size()) {
      rest.push_back(r);
      Key128 delta = 0;
      for (int i = 0; i < d; ++i)
        if (i + 1 != l.line_axis) delta += static_cast<Key128>(int64_t{o[i]}) << l.shift[i + 1];
      lines.push_back({delta, {}});
    }
    lines[at].dx.push_back({o[l.line_axis - 1], static_cast<int32_t>(k)});
  }
  for (Line& ln : lines) std::sort(ln.dx.begin(), ln.dx.end());
  return lines;
}

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

// Walks output rows [j0, j1) (in key order) and calls row(j, ks, ins, n) with
// the row's n neighbours (offsets ks ascending, input rows ins). Per line of
// offsets, a pointer moves forward to the first input key not below the
// line's first target; the line's targets are then checked in ascending
// order. Written to be branch-free in the common case (unit steps along the
// line, pointers moving at most two keys per row): every offset's result goes
// to its slot, and the row's list is the slots compacted in offset order.
template <typename Key, typename RowFn>
void search_rows(const std::vector<Key>& ikeys, const std::vector<int32_t>& irows,
                 const std::vector<Key>& okeys, const std::vector<Line>& lines, int64_t K,
                 int64_t j0, int64_t j1, const RowFn& row) {
  const int64_t nl = static_cast<int64_t>(lines.size());
  std::vector<int64_t> ptr(nl);
  std::vector<Key> base(nl), first(nl);
  std::vector<char> unit(nl);  // the line's offsets step by one along it
  for (int64_t L = 0; L < nl; ++L) {
    base[L] = static_cast<Key>(lines[L].delta);
    first[L] = base[L] + static_cast<Key>(int64_t{lines[L].dx.front().first});
    ptr[L] = std::lower_bound(ikeys.begin(), ikeys.end() - 1, okeys[j0] + first[L]) - ikeys.begin();
    unit[L] = 1;
    for (size_t a = 1; a < lines[L].dx.size(); ++a)
      unit[L] &= lines[L].dx[a].first == lines[L].dx[a - 1].first + 1;
  }
  std::vector<int32_t> slot(K), ks(K), ins(K);
  const Key* keys = ikeys.data();
  const int32_t* rows = irows.data();
  for (int64_t j = j0; j < j1; ++j) {
    const Key t = okeys[j];
    for (int64_t L = 0; L < nl; ++L) {
      int64_t q = ptr[L];
      const Key lo = t + first[L];
      q += keys[q] < lo;
      q += keys[q] < lo;
      while (keys[q] < lo) ++q;
      ptr[L] = q;
      const Key b = t + base[L];
      if (unit[L]) {
        for (const auto& [dx, k] : lines[L].dx) {
          const Key target = b + static_cast<Key>(int64_t{dx});
          q += keys[q] < target;  // at most one key lies below target here
          slot[k] = keys[q] == target ? static_cast<int32_t>(q) : -1;
        }
      } else {
        for (const auto& [dx, k] : lines[L].dx) {
          const Key target = b + static_cast<Key>(int64_t{dx});
          while (keys[q] < target) ++q;
          slot[k] = keys[q] == target ? static_cast<int32_t>(q) : -1;
        }
      }
    }
    int64_t n = 0;
    for (int64_t k = 0; k < K; ++k) {
      ks[n] = static_cast<int32_t>(k);
      ins[n] = slot[k];  // a key position for now
      n += slot[k] >= 0;
    }
    for (int64_t a = 0; a < n; ++a) ins[a] = rows[ins[a]];
    row(j, ks.data(), ins.data(), n);
  }
}

template <typename Key>
std::shared_ptr<KernelMap> build_with(const CoordinateMap& in, const CoordinateMap& out,
                                      const std::vector<int32_t>& offsets, const BuildLayout& l) {
  const int w = in.width(), d = w - 1;
  const int64_t K = static_cast<int64_t>(offsets.size()) / d;
  const int64_t n_out = out.size();
  auto m = std::make_shared<KernelMap>();
  m->volume = K;
  m->in_size = in.size();
  m->out_size = n_out;
  m->offset_begin.assign(K + 1, 0);

  std::vector<Key> ikeys, okeys_own;
  std::vector<int32_t> irows, orows_own;
  sorted_keys<Key>(in, l, ikeys, irows);
  const std::vector<Key>* okeys = &ikeys;
  const std::vector<int32_t>* orows = &irows;
  if (&in != &out) {
    sorted_keys<Key>(out, l, okeys_own, orows_own);
    okeys = &okeys_own;
    orows = &orows_own;
  }
  const std::vector<Line> lines = make_lines(offsets, d, l);

  // Fixed chunks of output rows in key order (the result does not depend on
  // the thread count, nor on the chunk size: pairs of an offset follow the
  // output keys either way). Pass 1 searches and keeps each row's (offset,
  // input row) list; pass 2, once the counts are known, lays out the pairs in
  // offset order and the rows' lists as by_out. Chunks are handed out on
  // demand, enough of them (~25 for 100k rows) that two threads end together.
  constexpr int64_t kChunk = 4096;
  const int64_t nc = (n_out + kChunk - 1) / kChunk;
  const bool parallel = n_out * K >= (int64_t{1} << 18);
  std::vector<int64_t> chunk_count(static_cast<size_t>(nc * K), 0);
  struct Free {
    void operator()(int32_t* p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<int32_t[], Free>> found_k(nc), found_in(nc);
  auto idx = std::make_shared<RowIndex>();
  idx->begin.resize(n_out + 1);
  int64_t* row_begin = idx->begin.data();
  fk::profile::count_launch(2);
  for_blocks(nc, 1, parallel, [&](auto&& each_chunk) {
    each_chunk([&](int64_t c) {
      int64_t* cc = chunk_count.data() + c * K;
      const int64_t j0 = c * kChunk, j1 = std::min(n_out, j0 + kChunk);
      // Room for the worst case, uninitialised (only the written prefix is
      // touched), shrunk to what was found afterwards.
      auto room = [&] {
        void* p = std::malloc(static_cast<size_t>((j1 - j0) * K) * sizeof(int32_t));
        if (!p) throw std::bad_alloc();
        return static_cast<int32_t*>(p);
      };
      found_k[c].reset(room());
      found_in[c].reset(room());
      int32_t* fk_ = found_k[c].get();
      int32_t* fi = found_in[c].get();
      search_rows(ikeys, irows, *okeys, lines, K, j0, j1,
                  [&](int64_t j, const int32_t* ks, const int32_t* ins, int64_t n) {
                    for (int64_t a = 0; a < n; ++a) ++cc[ks[a]];
                    std::memcpy(fk_, ks, n * sizeof(int32_t));
                    std::memcpy(fi, ins, n * sizeof(int32_t));
                    fk_ += n;
                    fi += n;
                    row_begin[(*orows)[j] + 1] = n;
                  });
      const size_t used = std::max<size_t>(1, (fi - found_in[c].get()) * sizeof(int32_t));
      for (auto* f : {&found_k[c], &found_in[c]})
        if (void* p = std::realloc(f->get(), used)) {
          (void)f->release();
          f->reset(static_cast<int32_t*>(p));
        }
    });
  });
  // Offset ranges, where each chunk's pairs of each offset start, and the rows'
  // ranges of by_out.
  int64_t total = 0;
  for (int64_t k = 0; k < K; ++k) {
    m->offset_begin[k] = total;
    for (int64_t c = 0; c < nc; ++c) total += std::exchange(chunk_count[c * K + k], total);
  }
  m->offset_begin[K] = total;
  row_begin[0] = 0;
  for (int64_t r = 0; r < n_out; ++r) row_begin[r + 1] += row_begin[r];
  m->in_rows.resize(total);
  m->out_rows.resize(total);
  idx->entries.resize(total);
  int32_t* in_rows = m->in_rows.data();
  int32_t* out_rows = m->out_rows.data();
  RowEntry* entries = idx->entries.data();
  for_blocks(nc, 1, parallel, [&](auto&& each_chunk) {
    each_chunk([&](int64_t c) {
      int64_t* cursor = chunk_count.data() + c * K;
      const int64_t j0 = c * kChunk, j1 = std::min(n_out, j0 + kChunk);
      const int32_t* ks = found_k[c].get();
      const int32_t* ins = found_in[c].get();
      for (int64_t j = j0; j < j1; ++j) {
        const int32_t o = (*orows)[j];
        const int64_t b = row_begin[o], n = row_begin[o + 1] - b;
        RowEntry* e = entries + b;
        for (int64_t a = 0; a < n; ++a) {
          const int64_t p = cursor[ks[a]]++;
          in_rows[p] = ins[a];
          out_rows[p] = o;
          e[a] = {static_cast<int32_t>(p), ins[a], ks[a]};
        }
        ks += n;
        ins += n;
      }
      found_k[c].reset();
      found_in[c].reset();
    });
  });
  m->mirror = find_mirror(in, out, offsets, d);
  m->adopt_by_out(std::move(idx));
  return m;
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
  if (l.bits <= 31) return build_with<uint32_t>(in, out, offsets, l);
  if (l.bits <= 63) return build_with<uint64_t>(in, out, offsets, l);
  FK_CHECK(l.bits <= 127, "minkowski::kernel_map",
           "coordinates (padded by the kernel's reach) whose per-axis extents pack into 127 bits",
           std::to_string(l.bits) + " bits");
  return build_with<Key128>(in, out, offsets, l);
}

}  // namespace minkowski
