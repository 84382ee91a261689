// The coordinate manager: insertion, strides, expansion, the coordinate range
// and memory accounting, on hand-computed cases.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "fk/cuda/runtime.h"
#include "fk/fk.h"
#include "fk/test_util.h"
#include "minkowski/coords/coordinate_rows.h"
#include "minkowski/minkowski.h"

namespace minkowski {
namespace {

using fk::test::error_of;

TEST(MinkowskiManager, InsertDeduplicatesFirstOccurrence) {
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

TEST(MinkowskiManager, StrideFloorsTowardMinusInfinity) {
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

TEST(MinkowskiManager, StridedMapRowsInCoordinateOrder) {
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

TEST(MinkowskiManager, BytesCountSharedRowIndicesOnce) {
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

TEST(MinkowskiManager, Errors) {
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

// The supported range (coordinate_map.h): spatial coordinates within
// [-2^30, 2^30], tensor strides and kernel offsets at most 2^30.
constexpr int32_t kLimit = int32_t{1} << 30;

// floor(c / t) * t by plain 64-bit arithmetic (the reference for strides).
int64_t floored(int64_t c, int64_t t) {
  const int64_t r = ((c % t) + t) % t;
  return c - r;
}

TEST(MinkowskiManager, CoordinatesOutsideTheRangeAreRefusedAtInsertion) {
  CoordinateManager m(2);
  for (int32_t bad : {kLimit + 1, -kLimit - 1, 2147483647, -2147483647 - 1}) {
    const std::string e = error_of([&] { m.insert(coords({0, 0, 0, 3, 5, bad}, 3), {1}); });
    EXPECT_NE(e.find("within [-2^30, 2^30]"), std::string::npos) << e;
    EXPECT_NE(e.find("coordinate " + std::to_string(bad) + " on axis 1 of row 1"),
              std::string::npos)
        << e;
  }
  // The batch index is not a spatial coordinate: any int32.
  auto k = m.insert(coords({-2147483647 - 1, 0, 0, 2147483647, 0, 0}, 3), {1}).key;
  EXPECT_EQ(m.size(k), 2);
  EXPECT_EQ(m.num_maps(), 1);
}

TEST(MinkowskiManager, StridesAtTheEdgesOfTheRangeAreExact) {
  // Both ends, and their neighbours, under strides that divide 2^30 and
  // strides that do not (the floor then goes below -2^30).
  const std::vector<int32_t> xs{-kLimit, -kLimit + 1, -1, 0, 1, kLimit - 1, kLimit};
  for (int32_t t : {2, 3, 7, 1 << 20, kLimit - 1, kLimit}) {
    CoordinateManager m(1);
    std::vector<int32_t> rows;
    for (int32_t x : xs) rows.insert(rows.end(), {0, x});
    MapKey s = m.stride(m.insert(coords(rows, 2), {1}).key, {t});
    std::set<int64_t> want;
    for (int32_t x : xs) want.insert(floored(x, t));
    const auto got = m.coordinates(s).to_vector<int32_t>();
    ASSERT_EQ(got.size(), 2 * want.size()) << t;
    size_t r = 0;
    for (int64_t w : want) EXPECT_EQ(got[2 * r++ + 1], w) << "stride " << t;
  }
}

TEST(MinkowskiManager, StridedMapsBeyondTheRangeAreExactOrRefused) {
  // Coordinates near the int32 limits exist only through expansion (a
  // generative transposed convolution): -2^30 plus an offset of -2^30 is
  // -2^31, 2^30 plus 2^30 - 1 is 2^31 - 1.
  CoordinateManager m(1);
  auto k = m.insert(coords({0, -kLimit, 0, kLimit}, 2), {1}).key;
  auto far = m.expand(k, KernelRegion::custom({-kLimit, kLimit - 1}, 1), {1});
  std::vector<int32_t> got = m.coordinates(far).to_vector<int32_t>();
  EXPECT_EQ(got, (std::vector<int32_t>{0, -2147483647 - 1, 0, -1, 0, 0, 0, 2147483647}));
  // Stride 2: -2^31 stays itself and 2^31 - 1 floors to 2^31 - 2 (two rows).
  got = m.coordinates(m.stride(far, {2})).to_vector<int32_t>();
  EXPECT_EQ(got, (std::vector<int32_t>{0, -2147483647 - 1, 0, -2, 0, 0, 0, 2147483646}));
  // Stride 3 would floor -2^31 to -2^31 - 1: refused, not wrapped.
  std::string e = error_of([&] { m.stride(far, {3}); });
  EXPECT_NE(e.find("strided coordinates within int32"), std::string::npos) << e;
  // Expanding past int32 is refused too.
  e = error_of([&] { m.expand(far, KernelRegion::custom({-1}, 1), {1}); });
  EXPECT_NE(e.find("expanded coordinates within int32"), std::string::npos) << e;
}

TEST(MinkowskiManager, TensorStridesAboveTheRangeAreRefused) {
  CoordinateManager m(1);
  auto k = m.insert(coords({0, 0, 0, 1 << 16}, 2), {1}).key;
  MapKey s = m.stride(k, {1 << 15});
  EXPECT_EQ(m.stride(s, {1 << 15}).tensor_stride, (std::vector<int32_t>{kLimit}));
  const std::string e = error_of([&] { m.stride(s, {1 << 16}); });
  EXPECT_NE(e.find("tensor strides of at most 2^30"), std::string::npos) << e;
  EXPECT_THROW(m.insert(coords({0, 0}, 2), {kLimit + 1}), fk::Error);
}

TEST(MinkowskiManager, KernelMapsAtTheEdgesOfTheRange) {
  // Neighbours at the ends of the range: 2^30 - 1 and 2^30 see each other,
  // -2^30 is alone; 3 self pairs + 2.
  CoordinateManager m(1);
  auto k = m.insert(coords({0, -kLimit, 0, kLimit - 1, 0, kLimit}, 2), {1}).key;
  auto km = m.kernel_map(k, k, KernelRegion::cube({3}), false);
  EXPECT_EQ(km->pairs(), 5);
  EXPECT_EQ(km->count(0), 1);  // offset -1: out 2^30 <- in 2^30 - 1
  EXPECT_EQ(km->in_rows[km->offset_begin[0]], 1);
  EXPECT_EQ(km->out_rows[km->offset_begin[0]], 2);
  // Stride 2^30: -2^30, 0 (from 2^30 - 1) and 2^30, each its own row.
  EXPECT_EQ(m.coordinates(m.stride(k, {kLimit})).to_vector<int32_t>(),
            (std::vector<int32_t>{0, -kLimit, 0, 0, 0, kLimit}));
  // Stride 2 with a 2-kernel (offsets 0, 1): -2^30 <- -2^30, 2^30 - 2 <- 2^30 - 1,
  // 2^30 <- 2^30.
  MapKey s = m.stride(k, {2});
  EXPECT_EQ(m.coordinates(s).to_vector<int32_t>(),
            (std::vector<int32_t>{0, -kLimit, 0, kLimit - 2, 0, kLimit}));
  auto down = m.kernel_map(k, s, KernelRegion::cube({2}), false);
  EXPECT_EQ(down->pairs(), 3);
  EXPECT_EQ(down->count(1), 1);
}

// Without a usable CUDA device (every CPU-only build, and a CUDA build on a
// machine without a GPU) device coordinates cannot even be made: the user
// gets one fk::Error naming the missing CUDA backend or device, not a crash
// in the manager. (With a device, the manager builds their maps there:
// tests/minkowski/cuda/coordinate_manager_device_test.cpp.)
TEST(MinkowskiManager, DeviceCoordinatesWithoutADeviceAreOneClearError) {
  if (fk::cuda::device_count() > 0) GTEST_SKIP() << "a CUDA device is usable here";
  const fk::Tensor f = fk::ones({2, 3});
  auto make = [&] {
    const fk::Tensor c = fk::zeros({2, 4}, {fk::DType::I32, fk::cuda_device(0)});
    SparseTensor x(f, c);
  };
  try {
    make();
    FAIL() << "device coordinates were accepted without a device";
  } catch (const fk::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("CUDA"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace minkowski
