// Coordinate maps, kernel regions and kernel maps on hand-computed cases.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "fk/fk.h"
#include "minkowski/minkowski.h"

namespace minkowski {
namespace {

fk::Tensor coords(const std::vector<int32_t>& v, int width) {
  return fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size()) / width, width});
}

TEST(MinkowskiRegion, CubeOrderAxisZeroFastestCenteredForOdd) {
  auto off = KernelRegion::cube({3, 2}).offsets({1, 1});
  // axis 0 (k=3, centered) fastest, axis 1 (k=2, not centered) slowest.
  std::vector<int32_t> want{-1, 0, 0, 0, 1, 0, -1, 1, 0, 1, 1, 1};
  EXPECT_EQ(off, want);
  EXPECT_EQ(KernelRegion::cube({3}).volume(3), 27);
  // dilation and tensor stride scale per axis
  auto o2 = KernelRegion::cube({3}, {2}).offsets({1, 4});
  EXPECT_EQ(o2[0], -2);
  EXPECT_EQ(o2[1], -8);
}

TEST(MinkowskiRegion, CrossOrder) {
  KernelRegion r = KernelRegion::cross({5, 3});
  EXPECT_EQ(r.volume(2), 1 + 4 + 2);
  std::vector<int32_t> want{0, 0, 1, 0, 2, 0, -2, 0, -1, 0, 0, 1, 0, -1};
  EXPECT_EQ(r.offsets({1, 1}), want);
  EXPECT_THROW(KernelRegion::cross({2}).volume(2), fk::Error);
}

TEST(MinkowskiRegion, CustomAndErrors) {
  KernelRegion r = KernelRegion::custom({0, 0, 1, 2}, 2);
  EXPECT_EQ(r.volume(2), 2);
  EXPECT_EQ(r.offsets({2, 2}), (std::vector<int32_t>{0, 0, 2, 4}));
  EXPECT_THROW(KernelRegion::cube({3, 3, 3}).volume(2), fk::Error);
  try {
    KernelRegion::cube({0}).volume(2);
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("kernel size"), std::string::npos);
  }
}

TEST(MinkowskiMap, InsertDeduplicatesFirstOccurrence) {
  CoordinateManager m(2);
  auto ins = m.insert(coords({0, 1, 1, 0, 2, 2, 0, 1, 1, 1, 1, 1, 0, 2, 2}, 3), {1});
  EXPECT_EQ(m.size(ins.key), 3);
  EXPECT_EQ(ins.unique_rows, (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(ins.inverse, (std::vector<int64_t>{0, 1, 0, 2, 1}));
  auto map = m.map(ins.key);
  int32_t q[3] = {1, 1, 1};
  EXPECT_EQ(map->find(q), 2);
  int32_t r[3] = {1, 1, 2};
  EXPECT_EQ(map->find(r), -1);
  int32_t far[3] = {0, -100, 5};
  EXPECT_EQ(map->find(far), -1);
  EXPECT_GT(m.bytes(), 0);
}

TEST(MinkowskiMap, StrideFloorsTowardMinusInfinity) {
  CoordinateManager m(1);
  auto ins = m.insert(coords({0, -3, 0, -1, 0, 0, 0, 1, 0, 3, 0, 4}, 2), {1});
  MapKey s = m.stride(ins.key, {2});
  EXPECT_EQ(s.tensor_stride, (std::vector<int32_t>{2}));
  auto c = m.coordinates(s).to_vector<int32_t>();
  EXPECT_EQ(c, (std::vector<int32_t>{0, -4, 0, -2, 0, 0, 0, 2, 0, 4}));
  MapKey s4 = m.stride(s, {2});
  EXPECT_EQ(m.size(s4), 3);              // -4, 0, 4
  EXPECT_EQ(m.stride(ins.key, {2}), s);  // reused
  EXPECT_EQ(m.num_maps(), 3);
}

TEST(MinkowskiMap, StridedMapRowsInCoordinateOrder) {
  // Rows of a strided map: the distinct floored coordinates, sorted by
  // (batch, x_1, .., x_D), whatever the order of the finer map's rows.
  std::vector<int32_t> v;
  uint32_t s = 3;
  for (int i = 0; i < 2000; ++i) {
    s = s * 1664525u + 1013904223u;
    v.insert(v.end(), {static_cast<int32_t>(s >> 30), static_cast<int32_t>((s >> 4) % 40) - 20,
                       static_cast<int32_t>((s >> 12) % 40) - 20, static_cast<int32_t>(s >> 24)});
  }
  CoordinateManager m(3);
  auto k = m.insert(coords(v, 4), {1}).key;
  std::set<std::vector<int32_t>> want;
  for (size_t i = 0; i < v.size(); i += 4) {
    std::vector<int32_t> c(v.begin() + i, v.begin() + i + 4);
    for (int a = 1; a < 4; ++a) c[a] = static_cast<int32_t>(std::floor(c[a] / 4.0) * 4);
    want.insert(c);
  }
  MapKey s4 = m.stride(m.stride(k, {2}), {2});
  auto got = m.coordinates(s4).to_vector<int32_t>();
  ASSERT_EQ(got.size(), want.size() * 4);
  size_t r = 0;
  for (const auto& c : want) {
    EXPECT_EQ(std::vector<int32_t>(got.begin() + r * 4, got.begin() + r * 4 + 4), c) << r;
    ++r;
  }
}

TEST(MinkowskiMap, ManyDimensionsAndWideExtents) {
  // 5-D with a wide spread still packs; the full int32 range in 3-D packs too.
  CoordinateManager m5(5);
  auto a = m5.insert(coords({0, 1, 2, 3, 4, 5, 1, -1, -2, -3, -4, -5}, 6), {1});
  EXPECT_EQ(m5.size(a.key), 2);
  CoordinateManager m3(3);
  auto b = m3.insert(coords({0, -2147483647 - 1, 0, 2147483647, 0, 5, 5, 5}, 4), {1});
  EXPECT_EQ(m3.size(b.key), 2);
  int32_t q[4] = {0, 5, 5, 5};
  EXPECT_EQ(m3.map(b.key)->find(q), 1);
}

TEST(MinkowskiMap, UnorderedBuildSameUnderOneAndTwoThreads) {
  // Unordered rows with duplicates (radix-sorted index) under 1 and 2
  // threads. Below 2^20 rows the build runs on the calling thread whatever
  // the setting, so this checks the setting changes nothing there; the
  // parallel packing above 2^20 rows is not exercised (too slow for a unit
  // test under ASan).
  std::vector<int32_t> v;
  uint32_t s = 12345;
  for (int i = 0; i < 80000; ++i) {
    s = s * 1664525u + 1013904223u;
    v.insert(v.end(), {static_cast<int32_t>(s >> 31), static_cast<int32_t>((s >> 8) % 60) - 30,
                       static_cast<int32_t>((s >> 16) % 50) - 25, static_cast<int32_t>(s % 40)});
  }
  int threads = fk::get_num_threads();
  fk::set_num_threads(2);
  std::vector<int64_t> u2, i2;
  CoordinateMap m2(v.data(), 80000, 4, {1, 1, 1}, &u2, &i2);
  fk::set_num_threads(1);
  std::vector<int64_t> u1, i1;
  CoordinateMap m1(v.data(), 80000, 4, {1, 1, 1}, &u1, &i1);
  fk::set_num_threads(threads);
  EXPECT_EQ(u1, u2);
  EXPECT_EQ(i1, i2);
  EXPECT_LT(m1.size(), 80000);
  for (int64_t r = 0; r < m1.size(); r += 97) EXPECT_EQ(m2.find(m1.row(r)), r);
  for (int i = 0; i < 80000; i += 101) EXPECT_EQ(m2.find(v.data() + 4 * i), i1[i]);
}

// Insert against a plain std::map (first occurrence wins), for rows given in
// key order without duplicates (no sort), shuffled with duplicates (radix
// sort), and with keys wider than 64 bits.
// In key order, map row r is the r-th distinct coordinate in lexicographic
// order (std::map's), taken from its first occurrence.
void check_insert_against_plain(const std::vector<int32_t>& v, int width,
                                RowOrder order = RowOrder::kFirstOccurrence) {
  const int64_t n = static_cast<int64_t>(v.size()) / width;
  std::vector<int64_t> uniq, inv;
  CoordinateMap m(v.data(), n, width, std::vector<int32_t>(width - 1, 1), &uniq, &inv, order);
  std::map<std::vector<int32_t>, int64_t> first;  // coordinate -> map row
  std::vector<int64_t> want_uniq, want_inv;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> c(v.begin() + i * width, v.begin() + (i + 1) * width);
    auto [it, fresh] = first.emplace(c, static_cast<int64_t>(want_uniq.size()));
    if (fresh) want_uniq.push_back(i);
    want_inv.push_back(it->second);
  }
  if (order == RowOrder::kKeys) {
    std::vector<int64_t> rank(want_uniq.size()), by_key;  // first-occurrence row -> key row
    for (auto& [c, r] : first) {
      rank[r] = static_cast<int64_t>(by_key.size());
      by_key.push_back(want_uniq[r]);
      r = rank[r];
    }
    for (auto& r : want_inv) r = rank[r];
    want_uniq = by_key;
  }
  ASSERT_EQ(m.size(), static_cast<int64_t>(want_uniq.size()));
  EXPECT_EQ(uniq, want_uniq);
  EXPECT_EQ(inv, want_inv);
  for (const auto& [c, r] : first) {
    EXPECT_EQ(std::vector<int32_t>(m.row(r), m.row(r) + width), c);
    EXPECT_EQ(m.find(c.data()), r);
    std::vector<int32_t> miss = c;  // a neighbour that is not in the map
    for (miss.back() = c.back() + 1; first.count(miss) && miss.back() < c.back() + 8;)
      ++miss.back();
    if (!first.count(miss)) {
      EXPECT_EQ(m.find(miss.data()), -1);
    }
  }
}

TEST(MinkowskiMap, InsertSortedShuffledAndWideAgainstPlain) {
  std::vector<int32_t> sorted;  // (batch, x, y, z) lexicographic, as scenes come
  for (int b = 0; b < 2; ++b)
    for (int x = -3; x < 4; ++x)
      for (int y = 0; y < 5; ++y)
        for (int z = -2; z < 6; ++z)
          if ((x * 5 + y * 3 + z + b) % 3 != 0) sorted.insert(sorted.end(), {b, x, y, z});
  check_insert_against_plain(sorted, 4);
  std::vector<int32_t> shuffled;
  uint32_t s = 7;
  const int64_t n = static_cast<int64_t>(sorted.size()) / 4;
  for (int64_t i = 0; i < 2 * n; ++i) {  // every row about twice, in random order
    s = s * 1664525u + 1013904223u;
    const int64_t r = (s >> 8) % n;
    shuffled.insert(shuffled.end(), sorted.begin() + r * 4, sorted.begin() + r * 4 + 4);
  }
  check_insert_against_plain(shuffled, 4);
  check_insert_against_plain(shuffled, 4, RowOrder::kKeys);
  check_insert_against_plain(sorted, 4, RowOrder::kKeys);  // already in key order
  std::vector<int32_t> wide;  // 4-D over most of the int32 range: > 64 key bits
  for (int i = 0; i < 300; ++i) {
    s = s * 1664525u + 1013904223u;
    int32_t a = static_cast<int32_t>(s), b = static_cast<int32_t>(s * 2654435761u);
    wide.insert(wide.end(), {i % 3, a, b, a ^ b, i % 5});
    if (i % 4 == 0) wide.insert(wide.end(), {i % 3, a, b, a ^ b, i % 5});  // duplicate
  }
  check_insert_against_plain(wide, 5);
  check_insert_against_plain(wide, 5, RowOrder::kKeys);
  CoordinateMap one(wide.data(), 1, 5, {1, 1, 1, 1});  // a single point: no key bits
  EXPECT_EQ(one.find(wide.data()), 0);
  int32_t other[5] = {0, 1, 2, 3, 4};
  EXPECT_EQ(one.find(other), -1);
}

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
  int threads = fk::get_num_threads();
  fk::set_num_threads(1);
  auto km = build_kernel_map(*in, *out, offsets);
  for (int t : {2, 3}) {  // chunks are handed out on demand: any thread may build any
    fk::set_num_threads(t);
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
  fk::set_num_threads(threads);

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
      {4, 300, 8, 2, KernelRegion::cube({3}), 1, 1 << 30},  // 128-bit keys
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
  const int threads = fk::get_num_threads();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    fk::set_num_threads(1);
    auto m1 = c.make();
    ASSERT_GT(m1->pairs(), 3 * (int64_t{1} << 15));
    EXPECT_TRUE(m1->mirror.empty());
    const RowIndex serial = copy_of(c.by_out ? m1->by_out() : m1->by_in());
    expect_index_as_map(*m1, serial, c.by_out);
    for (int t : {2, 3}) {
      fk::set_num_threads(1);
      auto mt = c.make();
      fk::set_num_threads(t);
      expect_same_index(serial, c.by_out ? mt->by_out() : mt->by_in(), t);
    }
  }
  fk::set_num_threads(threads);
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

TEST(MinkowskiMap, BytesCountSharedRowIndicesOnce) {
  // A manager with two coordinate maps, a strided map, its transpose (the
  // same row indices, swapped) and a submanifold map on the coarse map.
  std::vector<int32_t> v;
  for (int x = 0; x < 9; ++x)
    for (int y = 0; y < 7; ++y)
      if ((x + 2 * y) % 3 != 0) v.insert(v.end(), {x % 2, x, y});
  CoordinateManager m(2);
  auto k = m.insert(coords(v, 3), {1}).key;
  MapKey s = m.stride(k, {2});
  auto fwd = m.kernel_map(k, s, KernelRegion::cube({3}), false);
  fwd->by_in();
  auto tr = m.kernel_map(s, k, KernelRegion::cube({3}), true);
  tr->by_out();
  auto sub = m.kernel_map(s, s, KernelRegion::cube({3}), false);
  ASSERT_EQ(m.num_kernel_maps(), 3);
  const int64_t n = m.size(k), n_s = m.size(s);
  const int64_t P = fwd->pairs(), P_sub = sub->pairs();
  ASSERT_GT(P, 0);
  ASSERT_GT(P_sub, 0);
  // Coordinate map: 3 int32 per row, one 64-bit key and an int32 row per
  // row, plus its bucket table (2^b + 1 int32 with 2^b the first power of two
  // >= its rows).
  auto map_bytes = [](int64_t rows) {
    int64_t buckets = 1;
    while (buckets < rows) buckets *= 2;
    return rows * 3 * 4 + rows * (8 + 4) + (buckets + 1) * 4;
  };
  // Pair arrays: two int32 per pair and 9 + 1 offset starts; row index: one
  // int64 start per row + 1 and a 12-byte entry per pair.
  auto pair_bytes = [](int64_t pairs) { return pairs * 2 * 4 + 10 * 8; };
  auto index_bytes = [](int64_t rows, int64_t pairs) { return (rows + 1) * 8 + pairs * 12; };
  const int64_t want = map_bytes(n) + map_bytes(n_s) + 2 * pair_bytes(P) + index_bytes(n_s, P) +
                       index_bytes(n, P) + pair_bytes(P_sub) + index_bytes(n_s, P_sub);
  EXPECT_EQ(m.bytes(), want);
  // Each map on its own keeps the shared indices alive.
  EXPECT_EQ(fwd->bytes(), pair_bytes(P) + index_bytes(n_s, P) + index_bytes(n, P));
  EXPECT_EQ(tr->bytes(), fwd->bytes());
}

TEST(MinkowskiMap, Errors) {
  CoordinateManager m(2);
  try {
    m.insert(coords({0, 1, 2}, 3), {2});
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiples of the tensor stride"), std::string::npos);
  }
  EXPECT_THROW(m.insert(coords({0, 1, 2, 3}, 4), {1}), fk::Error);  // width 4 for D=2
  EXPECT_THROW(m.insert(fk::from_vector(std::vector<float>{0, 1, 2}, fk::Dims{1, 3}), {1}),
               fk::Error);
  EXPECT_THROW(m.map(MapKey{{4, 4}, "nope"}), fk::Error);
  EXPECT_THROW(CoordinateManager(0), fk::Error);
}

}  // namespace
}  // namespace minkowski
