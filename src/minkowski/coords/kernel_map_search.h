#pragma once
// The kernel-map build's merge search: for output rows in key order, the
// input keys at every kernel offset, found by one pointer per line of offsets
// walking the sorted input keys (kernel_map_layout.h) forward. Two variants:
// search_rows (any plan) and search_rows_sliding (every line windowed, K <=
// 63), which moves every window by one key along runs of consecutive output
// keys. Internal to build_kernel_map (kernel_map_build.cpp).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "minkowski/coords/kernel_map_layout.h"

namespace minkowski::kernel_map_build {

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

}  // namespace minkowski::kernel_map_build
