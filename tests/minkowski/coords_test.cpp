// Coordinate maps, kernel regions and kernel maps on hand-computed cases.
#include <gtest/gtest.h>

#include <set>

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

TEST(MinkowskiMap, ShardedBuildMatchesSerial) {
  // >= 65536 rows with 2 threads builds sharded tables; results must not change.
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
  auto tr = m.kernel_map(s, k, KernelRegion::cube({2}), true);
  EXPECT_EQ(tr->pairs(), 6);
  EXPECT_EQ(tr->in_rows, fwd->out_rows);
  EXPECT_EQ(tr->out_rows, fwd->in_rows);
  EXPECT_EQ(m.num_kernel_maps(), 2);
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
