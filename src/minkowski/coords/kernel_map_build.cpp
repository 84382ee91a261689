// build_kernel_map: the pairs (input row, output row) of every kernel offset
// between two coordinate maps, found by a merge over packed, sorted keys.
#include "minkowski/coords/kernel_map.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
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
  // Axes in the order of the coordinate maps' own keys (batch, x_1, .., x_D),
  // whose sorted row lists then give this layout's sorted order.
  bool lexicographic = false;
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
  l.lexicographic = true;
  for (int i = 0; i < d; ++i) l.lexicographic &= order[i] == d - i;
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

// Sentinel keys after the last real key: the search reads up to this many
// keys past a pointer without bounds checks.
constexpr int64_t kKeyPad = 16;
// Packing keys costs ~2 ns a row: threads pay only for millions of rows.
constexpr int64_t kPackGrain = int64_t{1} << 20;

// (key, row) of every map row in ascending key order: the map's own sorted
// row list when the layout orders axes as the map's keys do, else an LSD
// radix sort, 11-bit digits over the layout's bits (stable, so
// deterministic). keys gets kKeyPad sentinels above every key from index n on
// (and rows a -1 at n). Returns whether row i is at position i.
template <typename Key>
bool sorted_keys(const CoordinateMap& m, const BuildLayout& l, LargeArray<Key>& keys,
                 LargeArray<int32_t>& rows) {
  const int64_t n = m.size();
  const int w = m.width();
  LargeArray<Key> k2;
  LargeArray<int32_t> r2;
  keys.resize(n + kKeyPad);
  rows.resize(n + 1);
  rows[n] = -1;
  if (l.lexicographic) {  // the map's index already lists its rows in key order
    const int32_t* order = m.rows_in_key_order().data();
    fk::parallel_for(0, n, kPackGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        rows[i] = order[i];
        keys[i] = pack_key<Key>(l, m.row(order[i]), w);
      }
    });
    bool identity = true;
    for (int64_t i = 0; i < n; ++i) identity &= rows[i] == i;
    std::fill(keys.begin() + n, keys.end(), ~Key{0});
    return identity;
  }
  fk::parallel_for(0, n, kPackGrain, [&](int64_t lo, int64_t hi) {
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
    r2.resize(n + 1);
    r2[n] = -1;
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
  std::fill(keys.begin() + n, keys.end(), ~Key{0});
  return sorted;
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

// How the lines are searched. A line of distinct offsets whose keys span at
// most kMaxSpan + 1 (every line of a cube or cross, dilated or not) is
// "windowed": once its pointer sits on the first input key not below the
// line's lowest target, the next span + 1 keys are all compared at once, and
// each key inside the span names its offset through a table (no
// data-dependent branches, and no chain of dependent loads). Other lines
// (long spans, repeated offsets) check their targets one after another.
// Results go to per-offset slots plus a bit mask of the offsets found, whose
// set bits in ascending order are the row's neighbours in offset order.
template <typename Key>
struct SearchPlan {
  static constexpr int64_t kMaxSpan = 8;
  int words = 1;                  // 64-bit mask words
  int32_t trash = 63;             // slot/bit for keys inside a window that are no offset
  std::vector<Key> first;         // per line: key offset of its lowest target
  std::vector<int32_t> span;      // per windowed line: highest dx - lowest dx
  std::vector<int64_t> table_at;  // per windowed line: its table in `table`
  std::vector<int32_t> table;     // span + 2 entries per windowed line
  int64_t windowed = 0;           // lines [0, windowed) are windowed
  std::vector<Line> other;        // the remaining lines, searched target by target
};

template <typename Key>
SearchPlan<Key> make_plan(const std::vector<Line>& lines, int64_t K) {
  SearchPlan<Key> p;
  // Up to 63 offsets: one word, bit 63 the trash (masked off). More: the
  // trash gets a word of its own after the mask.
  p.words = K <= 63 ? 1 : static_cast<int>((K + 63) / 64);
  p.trash = K <= 63 ? 63 : p.words * 64;
  std::vector<const Line*> rest;
  for (const Line& ln : lines) {
    const int64_t span = int64_t{ln.dx.back().first} - ln.dx.front().first;
    bool distinct = true;
    for (size_t a = 1; a < ln.dx.size(); ++a) distinct &= ln.dx[a].first != ln.dx[a - 1].first;
    if (!distinct || span > SearchPlan<Key>::kMaxSpan) {
      rest.push_back(&ln);
      continue;
    }
    p.first.push_back(static_cast<Key>(ln.delta) + static_cast<Key>(int64_t{ln.dx.front().first}));
    p.span.push_back(static_cast<int32_t>(span));
    p.table_at.push_back(static_cast<int64_t>(p.table.size()));
    const size_t at = p.table.size();
    p.table.resize(at + span + 2, p.trash);
    for (const auto& [dx, k] : ln.dx) p.table[at + (dx - ln.dx.front().first)] = k;
    ++p.windowed;
  }
  for (const Line* ln : rest) {
    p.first.push_back(static_cast<Key>(ln->delta) +
                      static_cast<Key>(int64_t{ln->dx.front().first}));
    p.other.push_back(*ln);
  }
  return p;
}

// Walks output rows [j0, j1) (in key order) and calls row(j, mask, slot) with
// the row's neighbours: the set bits of mask (plan.words words) are the
// offsets found, slot[k] the position of offset k's input key. kWords is 1
// when K <= 63 (the mask then lives in a register), else 0.
template <int kWords, typename Key, typename RowFn>
void search_rows(const Key* keys, int64_t n_in, const Key* okeys, const SearchPlan<Key>& plan,
                 int64_t j0, int64_t j1, const RowFn& row) {
  const int words = kWords > 0 ? kWords : plan.words;
  const int64_t nl = static_cast<int64_t>(plan.first.size()), nw = plan.windowed;
  std::vector<int64_t> ptr(nl);
  for (int64_t L = 0; L < nl; ++L)
    ptr[L] = std::lower_bound(keys, keys + n_in, okeys[j0] + plan.first[L]) - keys;
  std::vector<uint64_t> mask(words + 1);
  std::vector<int32_t> slot(plan.trash + 1);
  const Key* first = plan.first.data();
  const int32_t* span = plan.span.data();
  const int64_t* table_at = plan.table_at.data();
  const int32_t* table = plan.table.data();
  int64_t* at = ptr.data();
  uint64_t* mk = mask.data();
  int32_t* __restrict sl = slot.data();
  for (int64_t j = j0; j < j1; ++j) {
    const Key t = okeys[j];
    uint64_t m0 = 0;
    auto mark = [&](int32_t k) {
      if constexpr (kWords == 1)
        m0 |= uint64_t{1} << k;
      else
        mk[k >> 6] |= uint64_t{1} << (k & 63);
    };
    if constexpr (kWords != 1)
      for (int w = 0; w <= words; ++w) mk[w] = 0;
    for (int64_t L = 0; L < nw; ++L) {
      const Key lo = t + first[L];
      int64_t q = at[L];
      // Pointers mostly move by 0-2 keys per row: four independent compares
      // instead of a loop; a longer jump (a gap in the data) takes the loop.
      const int64_t c =
          (keys[q] < lo) + (keys[q + 1] < lo) + (keys[q + 2] < lo) + (keys[q + 3] < lo);
      q += c;
      if (c == 4) [[unlikely]]
        while (keys[q] < lo) ++q;
      at[L] = q;
      const int32_t* tab = table + table_at[L];
      const int64_t sp = span[L];
      for (int64_t i = 0; i <= sp; ++i) {
        const Key d = keys[q + i] - lo;  // >= 0: keys from q on are not below lo
        const int32_t k = tab[static_cast<int64_t>(std::min(d, static_cast<Key>(sp + 1)))];
        sl[k] = static_cast<int32_t>(q + i);
        mark(k);
      }
    }
    for (int64_t L = nw; L < nl; ++L) {
      const Line& ln = plan.other[L - nw];
      int64_t q = at[L];
      const Key lo = t + first[L];
      while (keys[q] < lo) ++q;
      at[L] = q;
      const Key b = t + static_cast<Key>(ln.delta);
      for (const auto& [dx, k] : ln.dx) {
        const Key target = b + static_cast<Key>(int64_t{dx});
        while (keys[q] < target) ++q;
        if (keys[q] == target) {
          sl[k] = static_cast<int32_t>(q);
          mark(k);
        }
      }
    }
    if constexpr (kWords == 1) mk[0] = m0 & ~(uint64_t{1} << 63);
    row(j, static_cast<const uint64_t*>(mk), [&](int32_t k) { return int64_t{sl[k]}; });
  }
}

// The same for plans whose lines are all windowed and K <= 63, faster on
// runs: when an output key follows the previous one (t = t' + 1, e.g. a run
// of voxels along the line axis), every line's window moves by one key, so
// the window keeps its keys but the lowest and gains at most one, at the
// line's end pointer: one compare per line instead of a search. Per line the
// state is `end` (the first input position after the window) and `present`
// (bit d: key lo + d is there); the window's keys are the popcount(present)
// positions before `end`, so offset (line, d) sits at end - popcount(present
// >> d). Rows that start a run search their lines afresh.
// Tables of the sliding search, built once per kernel map: per line,
// spread[L][present] = the mask of the offsets present and rank[L][present *
// (span + 1) + d] = popcount(present >> d); per offset, where it sits.
struct SlidingTables {
  struct Where {
    int32_t line, rank_base, span1;  // rank_base: the line's rank table + d
  };
  std::vector<int64_t> spread_at, rank_at;
  std::vector<uint64_t> spread;
  std::vector<uint8_t> rank;
  std::vector<Where> where;  // per offset
  // Every key of every window is an offset, and a line's offsets ascend with
  // d (cubes): walking a row's offsets in order then meets each line's keys
  // in position order, so positions come from a cursor per line.
  bool ordered = true;
  std::vector<int32_t> line_of;  // per offset
};

template <typename Key>
SlidingTables make_sliding_tables(const SearchPlan<Key>& plan, int64_t K) {
  SlidingTables st;
  const int64_t nl = plan.windowed;
  st.spread_at.resize(nl);
  st.rank_at.resize(nl);
  st.where.resize(K);
  st.line_of.resize(K);
  for (int64_t L = 0; L < nl; ++L) {
    const int64_t s1 = plan.span[L] + 1;
    const int32_t* tab = plan.table.data() + plan.table_at[L];
    st.spread_at[L] = static_cast<int64_t>(st.spread.size());
    st.rank_at[L] = static_cast<int64_t>(st.rank.size());
    for (int64_t p = 0; p < (int64_t{1} << s1); ++p) {
      uint64_t m = 0;
      for (int64_t d = 0; d < s1; ++d) {
        if ((p >> d) & 1 && tab[d] != plan.trash) m |= uint64_t{1} << tab[d];
        st.rank.push_back(
            static_cast<uint8_t>(__builtin_popcountll(static_cast<uint64_t>(p) >> d)));
      }
      st.spread.push_back(m);
    }
    for (int64_t d = 0; d < s1; ++d) {
      st.ordered &= tab[d] != plan.trash && (d == 0 || tab[d] > tab[d - 1]);
      if (tab[d] != plan.trash) {
        st.where[tab[d]] = {static_cast<int32_t>(L), static_cast<int32_t>(st.rank_at[L] + d),
                            static_cast<int32_t>(s1)};
        st.line_of[tab[d]] = static_cast<int32_t>(L);
      }
    }
  }
  return st;
}

template <typename Key, typename RowFn>
void search_rows_sliding(const Key* keys, int64_t n_in, const Key* okeys,
                         const SearchPlan<Key>& plan, const SlidingTables& st, int64_t j0,
                         int64_t j1, const RowFn& row) {
  const int64_t nl = plan.windowed;
  const Key* first = plan.first.data();
  const int32_t* span = plan.span.data();
  // Per line: the window's first position (first key >= lo), its end and
  // which of its keys are present; cursor: positions handed out in this row.
  std::vector<int64_t> start(nl), end(nl), cursor(nl);
  std::vector<uint32_t> present(nl, 0);
  for (int64_t L = 0; L < nl; ++L)
    start[L] = end[L] = std::lower_bound(keys, keys + n_in, okeys[j0] + first[L]) - keys;
  int64_t* __restrict sa = start.data();
  int64_t* __restrict en = end.data();
  int64_t* __restrict cur = cursor.data();
  uint32_t* __restrict pr = present.data();
  const int32_t* line_of = st.line_of.data();
  const uint64_t* sp = st.spread.data();
  const int64_t* sp_at = st.spread_at.data();
  const uint8_t* rank = st.rank.data();
  const int64_t* rank_at = st.rank_at.data();
  const SlidingTables::Where* wh = st.where.data();
  auto position = [&](int32_t k) {
    const SlidingTables::Where w = wh[k];
    return en[w.line] - rank[w.rank_base + pr[w.line] * w.span1];
  };
  Key prev = okeys[j0];
  for (int64_t j = j0; j < j1; ++j) {
    const Key t = okeys[j];
    uint64_t m0 = 0;
    if (j > j0 && t == prev + 1) {
      for (int64_t L = 0; L < nl; ++L) {
        const int64_t e = en[L];
        const uint32_t gained = keys[e] == t + first[L] + static_cast<Key>(span[L]);
        en[L] = e + gained;
        sa[L] += pr[L] & 1;  // the old lowest key (if there) left the window
        const uint32_t p = (pr[L] >> 1) | (gained << span[L]);
        pr[L] = p;
        m0 |= sp[sp_at[L] + p];
      }
    } else {
      for (int64_t L = 0; L < nl; ++L) {
        const Key lo = t + first[L];
        int64_t q = sa[L];  // first key >= the previous row's lo
        const int64_t c =
            (keys[q] < lo) + (keys[q + 1] < lo) + (keys[q + 2] < lo) + (keys[q + 3] < lo);
        q += c;
        if (c == 4) [[unlikely]]
          while (keys[q] < lo) ++q;
        const int64_t s = span[L];
        uint32_t p = 0;
        for (int64_t i = 0; i <= s; ++i)
          p |= uint32_t{1} << static_cast<int64_t>(
                   std::min(keys[q + i] - lo, static_cast<Key>(s + 1)));
        p &= (uint32_t{1} << (s + 1)) - 1;
        pr[L] = p;
        sa[L] = q;
        en[L] = q + rank[rank_at[L] + p * (s + 1)];
        m0 |= sp[sp_at[L] + p];
      }
    }
    prev = t;
    if (st.ordered) {
      for (int64_t L = 0; L < nl; ++L) cur[L] = sa[L];
      row(j, static_cast<const uint64_t*>(&m0), [&](int32_t k) { return cur[line_of[k]]++; });
    } else {
      row(j, static_cast<const uint64_t*>(&m0), position);
    }
  }
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
  fk::profile::count_launch(2);
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
           "at most 2^31 - 1 pairs (int32 pair ids)", std::to_string(total) + " pairs");
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

KernelMapKeyLayout kernel_map_key_layout(const CoordinateMap& in, const CoordinateMap& out,
                                         const std::vector<int32_t>& offsets) {
  BuildLayout l = make_layout(in, out, offsets);
  return {std::move(l.lo), std::move(l.shift), l.bits};
}

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
           std::to_string(l.bits) + " bits");
  return build_keyed<Key128>(in, out, offsets, l);
}

}  // namespace minkowski
