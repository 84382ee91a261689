// Kernel maps against plain lookups: pairs per offset, their order, row
// indices (by_out, by_in, mirrored and regrouped), transposes.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>

#include "fk/fk.h"
#include "fk/thread_count.h"
#include "minkowski/coords/coordinate_rows.h"
#include "minkowski/minkowski.h"

namespace minkowski {
namespace {

TEST(MinkowskiKernelMap, LineCounts) {
  // Points 0,1,2,4 on a line: offsets -1, 0, +1.
  CoordinateManager m(1);
  auto k = m.insert(coords({0, 0, 0, 1, 0, 2, 0, 4}, 2), {1}).key;
  auto km = m.kernel_map(k, k, KernelRegion::cube({3}), false);
  ASSERT_EQ(km->volume, 3);
  EXPECT_EQ(km->count(0), 2);  // out 1 <- in 0, out 2 <- in 1
  EXPECT_EQ(km->count(1), 4);
  EXPECT_EQ(km->count(2), 2);
  EXPECT_EQ(km->pairs(), 8);
  std::vector<int32_t> in0(km->in_rows.begin(), km->in_rows.begin() + 2),
      out0(km->out_rows.begin(), km->out_rows.begin() + 2);
  EXPECT_EQ(in0, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(out0, (std::vector<int32_t>{1, 2}));
  // cached
  EXPECT_EQ(m.kernel_map(k, k, KernelRegion::cube({3}), false).get(), km.get());
  EXPECT_EQ(m.num_kernel_maps(), 1);
  EXPECT_GT(km->bytes(), 0);
  // by_out regroups in offset order
  const RowIndex& bo = km->by_out();
  EXPECT_EQ(bo.begin[2] - bo.begin[1], 3);  // row 1 has neighbors 0, 1, 2
  m.clear();
  EXPECT_EQ(m.num_maps(), 0);
  EXPECT_EQ(m.num_kernel_maps(), 0);
}

// Row indices checked against a plain regrouping of the pair arrays.
void expect_row_index(const KernelMap& km, const RowIndex& idx, bool by_out) {
  int64_t rows = by_out ? km.out_size : km.in_size;
  std::vector<std::vector<RowEntry>> want(rows);
  for (int64_t k = 0; k < km.volume; ++k)
    for (int64_t p = km.offset_begin[k]; p < km.offset_begin[k + 1]; ++p) {
      int32_t self = by_out ? km.out_rows[p] : km.in_rows[p];
      int32_t other = by_out ? km.in_rows[p] : km.out_rows[p];
      want[self].push_back({static_cast<int32_t>(p), other, static_cast<int32_t>(k)});
    }
  ASSERT_EQ(static_cast<int64_t>(idx.begin.size()), rows + 1);
  for (int64_t r = 0; r < rows; ++r) {
    ASSERT_EQ(idx.begin[r + 1] - idx.begin[r], static_cast<int64_t>(want[r].size())) << r;
    for (size_t j = 0; j < want[r].size(); ++j) {
      const RowEntry& e = idx.entries[idx.begin[r] + j];
      EXPECT_EQ(e.pair, want[r][j].pair);
      EXPECT_EQ(e.other, want[r][j].other);
      EXPECT_EQ(e.offset, want[r][j].offset);
    }
  }
}

TEST(MinkowskiKernelMap, RowIndicesSymmetricAndNot) {
  std::vector<int32_t> v;
  uint32_t s = 99;
  for (int i = 0; i < 3000; ++i) {
    s = s * 1664525u + 1013904223u;
    v.insert(v.end(),
             {0, static_cast<int32_t>((s >> 4) % 20) - 10,
              static_cast<int32_t>((s >> 12) % 20) - 10, static_cast<int32_t>((s >> 20) % 20)});
  }
  CoordinateManager m(3);
  auto k = m.insert(coords(v, 4), {1}).key;
  auto sub = m.kernel_map(k, k, KernelRegion::cube({3}), false);
  EXPECT_FALSE(sub->mirror.empty());            // symmetric: half the offsets searched
  expect_row_index(*sub, sub->by_in(), false);  // derived from by_out through the mirror
  expect_row_index(*sub, sub->by_out(), true);
  auto cross = m.kernel_map(k, k, KernelRegion::cross({3}), false);  // mirrors out of order
  EXPECT_FALSE(cross->mirror.empty());
  expect_row_index(*cross, cross->by_in(), false);
  auto strided = m.kernel_map(k, m.stride(k, {2}), KernelRegion::cube({3}), false);
  EXPECT_TRUE(strided->mirror.empty());
  expect_row_index(*strided, strided->by_in(), false);
  expect_row_index(*strided, strided->by_out(), true);
  auto even = m.kernel_map(k, k, KernelRegion::cube({2}), false);  // {0,1}: not symmetric
  EXPECT_TRUE(even->mirror.empty());
  expect_row_index(*even, even->by_in(), false);
}

// Kernel maps on random inputs against a plain construction: a std::map from
// coordinate to row, every (output row, offset) looked up. Checks the pair
// sets per offset, one output row at most once per offset, the documented
// order within an offset (output rows in lexicographic coordinate order, batch
// first, axes as the build orders them: only checked to be a fixed order, i.e.
// equal across thread counts), the mirror property and by_out.
struct MapCase {
  int d;
  int n;
  int range;
  int batches;
  KernelRegion region;
  int stride;     // output map: the input strided by this (1: the input itself)
  int32_t shift;  // added to every other point (wide extents: 64- and 128-bit keys)
};

std::vector<int32_t> random_coords(const MapCase& c, unsigned seed) {
  std::vector<int32_t> v;
  uint64_t s = seed;
  for (int i = 0; i < c.n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v.push_back(static_cast<int32_t>((s >> 60) % c.batches));
    for (int a = 0; a < c.d; ++a) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      int32_t x = static_cast<int32_t>((s >> 33) % c.range) - c.range / 2;
      v.push_back(x + (i % 2 == 0 ? c.shift : 0));  // two far-apart clouds
    }
  }
  return v;
}

void check_map_against_plain(const MapCase& c, unsigned seed) {
  SCOPED_TRACE(std::to_string(c.d) + "-D " + c.region.str(c.d) + " stride " +
               std::to_string(c.stride));
  CoordinateManager m(c.d);
  auto k = m.insert(coords(random_coords(c, seed), c.d + 1), {1}).key;
  MapKey out_key = c.stride == 1 ? k : m.stride(k, {c.stride});
  auto in = m.map(k), out = m.map(out_key);
  std::vector<int32_t> offsets = c.region.offsets(in->tensor_stride());
  std::shared_ptr<KernelMap> km;
  {
    const fk::test::ThreadCount threads(1);
    km = build_kernel_map(*in, *out, offsets);
    for (int t : {2, 3}) {  // chunks are handed out on demand: any thread may build any
      threads.set(t);
      auto km2 = build_kernel_map(*in, *out, offsets);
      EXPECT_EQ(km->offset_begin, km2->offset_begin) << t << " threads";
      EXPECT_EQ(km->in_rows, km2->in_rows) << t << " threads";
      EXPECT_EQ(km->out_rows, km2->out_rows) << t << " threads";
      const RowIndex &a = km->by_out(), &b = km2->by_out();
      EXPECT_EQ(a.begin, b.begin) << t << " threads";
      bool same = a.entries.size() == b.entries.size();
      for (size_t j = 0; same && j < a.entries.size(); ++j)
        same = a.entries[j].pair == b.entries[j].pair && a.entries[j].other == b.entries[j].other &&
               a.entries[j].offset == b.entries[j].offset;
      EXPECT_TRUE(same) << t << " threads: by_out";
    }
  }

  std::map<std::vector<int32_t>, int32_t> rows;
  for (int64_t i = 0; i < in->size(); ++i)
    rows.emplace(std::vector<int32_t>(in->row(i), in->row(i) + c.d + 1), static_cast<int32_t>(i));
  const int64_t K = static_cast<int64_t>(offsets.size()) / c.d;
  ASSERT_EQ(km->volume, K);
  for (int64_t q = 0; q < K; ++q) {
    std::set<std::pair<int32_t, int32_t>> want, got;
    for (int64_t o = 0; o < out->size(); ++o) {
      std::vector<int32_t> x(out->row(o), out->row(o) + c.d + 1);
      for (int a = 0; a < c.d; ++a) x[a + 1] += offsets[q * c.d + a];
      auto it = rows.find(x);
      if (it != rows.end()) want.insert({it->second, static_cast<int32_t>(o)});
    }
    std::set<int32_t> outs;
    for (int64_t p = km->offset_begin[q]; p < km->offset_begin[q + 1]; ++p) {
      got.insert({km->in_rows[p], km->out_rows[p]});
      EXPECT_TRUE(outs.insert(km->out_rows[p]).second) << "output row twice in offset " << q;
    }
    EXPECT_EQ(got, want) << "offset " << q;
  }
  if (!km->mirror.empty())
    for (int64_t q = 0; q < K; ++q) {
      int64_t mq = km->mirror[q];
      ASSERT_EQ(km->count(q), km->count(mq));
      for (int64_t j = 0; j < km->count(q); ++j) {
        EXPECT_EQ(km->in_rows[km->offset_begin[q] + j], km->out_rows[km->offset_begin[mq] + j]);
        EXPECT_EQ(km->out_rows[km->offset_begin[q] + j], km->in_rows[km->offset_begin[mq] + j]);
      }
    }
  expect_row_index(*km, km->by_out(), true);
  expect_row_index(*km, km->by_in(), false);
}

TEST(MinkowskiKernelMap, RandomAgainstPlainLookup) {
  std::vector<int32_t> custom{0, 0, 0, 2, -1, 0, 0, 2, 1, 1};  // incl. a repeated offset
  MapCase cases[] = {
      {2, 400, 30, 2, KernelRegion::cube({3}), 1, 0},
      {2, 400, 30, 1, KernelRegion::cube({3}, {2}), 1, 0},     // dilated
      {2, 400, 30, 3, KernelRegion::cube({2}), 2, 0},          // strided, even kernel
      {2, 300, 20, 1, KernelRegion::custom(custom, 2), 1, 0},  // custom, not symmetric
      {3, 600, 12, 2, KernelRegion::cube({3}), 1, 0},
      {3, 600, 12, 2, KernelRegion::cube({5, 3, 1}), 1, 0},  // lines of 5 along x_1
      {3, 600, 12, 2, KernelRegion::cross({3}), 1, 0},
      {3, 600, 16, 2, KernelRegion::cube({3}), 2, 0},
      {3, 600, 16, 1, KernelRegion::cube({3}, {3}), 3, 0},  // dilated and strided
      {4, 500, 6, 2, KernelRegion::cube({3}), 1, 0},
      {4, 500, 8, 2, KernelRegion::cube({3}), 2, 0},
      {4, 300, 8, 2, KernelRegion::cube({3}), 1, (1 << 30) - 8},  // 128-bit keys
      {1, 100, 40, 2, KernelRegion::cube({5}), 1, 0},
      {2, 400, 40, 1, KernelRegion::cube({3}, {5}), 1, 0},  // lines too long for a window
      {3, 400, 10, 1, KernelRegion::cube({5}), 1, 0},       // 125 offsets: masks of 2 words
      {3, 300, 12, 1, KernelRegion::cross({33}), 1, 0},     // 97 offsets, mirrors out of order
      {3, 300, 12, 1, KernelRegion::cube({5}), 2, 0},       // 125 offsets, strided
      // enough rows that the build runs in parallel over several chunks
      {3, 30000, 40, 2, KernelRegion::cube({3}), 1, 0},
  };
  unsigned seed = 1;
  for (const MapCase& c : cases) check_map_against_plain(c, seed++);
}

TEST(MinkowskiKernelMap, ManyRowsAcrossChunksAndThreads) {
  // More output rows than one build chunk (4096), two batches.
  check_map_against_plain({3, 12000, 30, 2, KernelRegion::cube({3}), 1, 0}, 77);
}

TEST(MinkowskiKernelMap, SamePairsWhateverTheRowOrder) {
  // Rows in scene order (z fastest, which the build picks as its line axis),
  // nearly in scene order (same axis order, rows taken from the map's sorted
  // index) and permuted (another axis order may be picked) give the same
  // pairs once the rows of one are mapped onto the other's.
  std::vector<int32_t> v;
  for (int x = 0; x < 6; ++x)
    for (int y = 0; y < 5; ++y)
      for (int z = 0; z < 7; ++z)
        if ((x * 7 + y * 3 + z) % 4 != 0) v.insert(v.end(), {0, x, y, z});
  const int64_t n = static_cast<int64_t>(v.size()) / 4;
  ASSERT_EQ(std::gcd(n, int64_t{37}), 1);
  std::vector<int32_t> scattered(n), swapped(n);
  for (int64_t i = 0; i < n; ++i) {
    scattered[i] = static_cast<int32_t>((i * 37) % n);
    swapped[i] = static_cast<int32_t>(i % 10 == 0 && i + 1 < n ? i + 1 : i % 10 == 1 ? i - 1 : i);
  }
  CoordinateManager ma(3);
  auto ka = ma.insert(coords(v, 4), {1}).key;
  auto a = ma.kernel_map(ka, ka, KernelRegion::cube({3}), false);
  std::vector<std::set<std::pair<int32_t, int32_t>>> sa(27);
  for (int64_t q = 0; q < 27; ++q)
    for (int64_t p = a->offset_begin[q]; p < a->offset_begin[q + 1]; ++p)
      sa[q].insert({a->in_rows[p], a->out_rows[p]});
  for (const auto& perm : {scattered, swapped}) {
    std::vector<int32_t> w(v.size());
    for (int64_t i = 0; i < n; ++i) std::copy(&v[perm[i] * 4], &v[perm[i] * 4 + 4], &w[i * 4]);
    CoordinateManager mb(3);
    auto kb = mb.insert(coords(w, 4), {1}).key;
    auto b = mb.kernel_map(kb, kb, KernelRegion::cube({3}), false);
    ASSERT_EQ(a->offset_begin, b->offset_begin);
    // row i of b is row perm[i] of a
    std::vector<std::set<std::pair<int32_t, int32_t>>> sb(27);
    for (int64_t q = 0; q < 27; ++q)
      for (int64_t p = b->offset_begin[q]; p < b->offset_begin[q + 1]; ++p)
        sb[q].insert({perm[b->in_rows[p]], perm[b->out_rows[p]]});
    EXPECT_EQ(sa, sb);
    expect_row_index(*b, b->by_out(), true);
    expect_row_index(*b, b->by_in(), false);
  }
}

// Row indices that are regrouped from the pair arrays (maps without a mirror,
// transposed maps, identity maps) under 1, 2 and 3 threads: the same RowIndex
// every time, equal to a plain regrouping. The maps hold enough pairs (> 3 x
// 2^15) that 2 and 3 threads split them into 2 and 3 chunks.
RowIndex copy_of(const RowIndex& r) {
  RowIndex c;
  c.begin = r.begin;
  c.entries = r.entries;
  return c;
}

void expect_same_index(const RowIndex& a, const RowIndex& b, int threads) {
  EXPECT_EQ(a.begin, b.begin) << threads << " threads";
  ASSERT_EQ(a.entries.size(), b.entries.size()) << threads << " threads";
  bool same = true;
  for (size_t j = 0; same && j < a.entries.size(); ++j)
    same = a.entries[j].pair == b.entries[j].pair && a.entries[j].other == b.entries[j].other &&
           a.entries[j].offset == b.entries[j].offset;
  EXPECT_TRUE(same) << threads << " threads";
}

// The entries of every row as a std::map from row to its (pair, other,
// offset) list, walking the pairs offset by offset.
std::map<int32_t, std::vector<std::array<int32_t, 3>>> rows_by_map(const KernelMap& km,
                                                                   bool by_out) {
  std::map<int32_t, std::vector<std::array<int32_t, 3>>> want;
  for (int64_t k = 0; k < km.volume; ++k)
    for (int64_t p = km.offset_begin[k]; p < km.offset_begin[k + 1]; ++p) {
      const int32_t self = km.identity ? static_cast<int32_t>(p)
                           : by_out    ? km.out_rows[p]
                                       : km.in_rows[p];
      const int32_t other = km.identity ? static_cast<int32_t>(p)
                            : by_out    ? km.in_rows[p]
                                        : km.out_rows[p];
      want[self].push_back({static_cast<int32_t>(p), other, static_cast<int32_t>(k)});
    }
  return want;
}

void expect_index_as_map(const KernelMap& km, const RowIndex& idx, bool by_out) {
  const auto want = rows_by_map(km, by_out);
  const int64_t rows = by_out ? km.out_size : km.in_size;
  ASSERT_EQ(static_cast<int64_t>(idx.begin.size()), rows + 1);
  EXPECT_EQ(idx.begin[0], 0);
  EXPECT_EQ(idx.begin[rows], km.pairs());
  int64_t mismatches = 0;
  for (int64_t r = 0; r < rows; ++r) {
    auto it = want.find(static_cast<int32_t>(r));
    std::vector<std::array<int32_t, 3>> got;
    for (int64_t j = idx.begin[r]; j < idx.begin[r + 1]; ++j)
      got.push_back({idx.entries[j].pair, idx.entries[j].other, idx.entries[j].offset});
    mismatches += got != (it == want.end() ? std::vector<std::array<int32_t, 3>>{} : it->second);
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(MinkowskiKernelMap, RegroupedIndicesSameUnderOneTwoThreeThreads) {
  // ~45k points of a 40^3 block: a strided map (stride 2, cube 3), a custom
  // region on the map itself that is not symmetric and has an offset that
  // matches nothing (an empty offset range between full ones), the strided
  // map's transpose without row indices yet, and an identity map.
  std::vector<int32_t> v;
  for (int x = 0; x < 40; ++x)
    for (int y = 0; y < 40; ++y)
      for (int z = 0; z < 40; ++z)
        if ((x * 7 + y * 13 + z * 5) % 10 < 7) v.insert(v.end(), {0, x, y, z});
  CoordinateManager m(3);
  auto k = m.insert(coords(v, 4), {1}).key;
  auto s = m.stride(k, {2});
  auto in = m.map(k), out = m.map(s);
  const std::vector<int32_t> custom{0, 0, 0, 1, 0, 0, 1000, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 0};
  struct Case {
    const char* name;
    std::function<std::shared_ptr<KernelMap>()> make;
    bool by_out;
  };
  const Case cases[] = {
      {"strided by_in",
       [&] {
         return build_kernel_map(*in, *out, KernelRegion::cube({3}).offsets({1, 1, 1}));
       },
       false},
      {"custom by_in", [&] { return build_kernel_map(*in, *in, custom); }, false},
      {"transposed by_out",
       [&] {
         return build_kernel_map(*in, *out, KernelRegion::cube({3}).offsets({1, 1, 1}))
             ->transposed();
       },
       true},
      {"identity by_out", [] { return KernelMap::make_identity(100000); }, true},
  };
  const fk::test::ThreadCount threads(1);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    threads.set(1);
    auto m1 = c.make();
    ASSERT_GT(m1->pairs(), 3 * (int64_t{1} << 15));
    EXPECT_TRUE(m1->mirror.empty());
    const RowIndex serial = copy_of(c.by_out ? m1->by_out() : m1->by_in());
    expect_index_as_map(*m1, serial, c.by_out);
    for (int t : {2, 3}) {
      threads.set(1);
      auto mt = c.make();
      threads.set(t);
      expect_same_index(serial, c.by_out ? mt->by_out() : mt->by_in(), t);
    }
  }
}

TEST(MinkowskiKernelMap, SquareAndBatchesDoNotMix) {
  // 2x2 square in batch 0, one point in batch 1 at (0,0): 3x3 submanifold.
  CoordinateManager m(2);
  auto k = m.insert(coords({0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 1, 0, 0}, 3), {1}).key;
  auto km = m.kernel_map(k, k, KernelRegion::cube({3}), false);
  // every point of the square sees all 4 -> 16 pairs; batch 1 sees itself.
  EXPECT_EQ(km->pairs(), 17);
  EXPECT_EQ(km->count(4), 5);  // center
  EXPECT_EQ(km->count(0), 1);  // (-1,-1): only (1,1) -> (0,0)
}

TEST(MinkowskiKernelMap, StridedAndTransposedReuse) {
  // 1-D: points 0..5 at stride 1 -> stride 2 gives 0, 2, 4; kernel 2 offsets {0, 1}.
  CoordinateManager m(1);
  auto k = m.insert(coords({0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5}, 2), {1}).key;
  MapKey s = m.stride(k, {2});
  auto fwd = m.kernel_map(k, s, KernelRegion::cube({2}), false);
  EXPECT_EQ(fwd->count(0), 3);
  EXPECT_EQ(fwd->count(1), 3);
  fwd->by_out();
  fwd->by_in();
  auto tr = m.kernel_map(s, k, KernelRegion::cube({2}), true);
  EXPECT_EQ(tr->pairs(), 6);
  expect_row_index(*tr, tr->by_out(), true);  // the forward map's by_in
  expect_row_index(*tr, tr->by_in(), false);  // the forward map's by_out
  EXPECT_EQ(&tr->by_out(), &fwd->by_in());    // shared, not rebuilt
  EXPECT_EQ(&tr->by_in(), &fwd->by_out());
  EXPECT_EQ(tr->in_rows, fwd->out_rows);
  EXPECT_EQ(tr->out_rows, fwd->in_rows);
  EXPECT_EQ(m.num_kernel_maps(), 2);
}

TEST(MinkowskiKernelMap, TransposeSharesIndicesBuiltLater) {
  // The transpose is made before the forward map has a by_in: whichever map
  // builds that index, the other one uses it.
  CoordinateManager m(1);
  auto k = m.insert(coords({0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 7}, 2), {1}).key;
  MapKey s = m.stride(k, {2});
  auto fwd = m.kernel_map(k, s, KernelRegion::cube({3}), false);
  auto tr = m.kernel_map(s, k, KernelRegion::cube({3}), true);
  EXPECT_EQ(fwd->row_indices().size(), 1u);  // by_out, built with the pairs
  EXPECT_EQ(&tr->by_in(), &fwd->by_out());
  const RowIndex& t_out = tr->by_out();  // builds the forward map's by_in
  expect_row_index(*tr, t_out, true);
  EXPECT_EQ(&fwd->by_in(), &t_out);
  expect_row_index(*fwd, fwd->by_in(), false);
  EXPECT_EQ(tr->row_indices().size(), 2u);
  // and the transpose of the transpose is the forward map again
  auto back = tr->transposed();
  EXPECT_EQ(&back->by_out(), &fwd->by_out());
  EXPECT_EQ(&back->by_in(), &fwd->by_in());
}

TEST(MinkowskiKernelMap, TransposeKeepsDeviceCopiesBesideOurs) {
  // A map and its transposes keep their device copies together, each under
  // its own orientation: the device code derives one from the other.
  CoordinateManager m(1);
  auto k = m.insert(coords({0, 0, 0, 1, 0, 2, 0, 3}, 2), {1}).key;
  MapKey s = m.stride(k, {2});
  auto fwd = m.kernel_map(k, s, KernelRegion::cube({2}), false);
  auto tr = m.kernel_map(s, k, KernelRegion::cube({2}), true);
  int made = 0;
  auto make = [&made] { return std::shared_ptr<const void>(std::make_shared<int>(++made)); };
  EXPECT_EQ(tr->transposed_device_copy(0), nullptr);
  const auto f0 = fwd->device_copy(0, make);
  EXPECT_EQ(tr->transposed_device_copy(0), f0);
  EXPECT_EQ(fwd->transposed_device_copy(0), nullptr);  // the transpose has none yet
  EXPECT_EQ(tr->transposed_device_copy(1), nullptr);   // nor another device
  const auto t0 = tr->device_copy(0, make);            // its own orientation: made
  EXPECT_NE(t0, f0);
  EXPECT_EQ(made, 2);
  EXPECT_EQ(fwd->transposed_device_copy(0), t0);
  // The transpose of the transpose is the forward map's orientation.
  auto back = tr->transposed();
  EXPECT_EQ(back->device_copy(0, make), f0);
  EXPECT_EQ(back->transposed_device_copy(0), t0);
  EXPECT_EQ(made, 2);
}

}  // namespace
}  // namespace minkowski
