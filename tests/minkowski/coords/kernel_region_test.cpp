// Kernel regions: offset order, scaling and the offsets' range.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fk/fk.h"
#include "minkowski/coords/coordinate_rows.h"
#include "minkowski/minkowski.h"

namespace minkowski {
namespace {

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

// A volume past int32 is refused, never wrapped: 2^16 in 4-D and 2^30 in 3-D
// wrapped to 0 (a K=0 weight and all-zero outputs) and 2^21 in 3-D to -2^63.
TEST(MinkowskiRegion, KernelVolumeBeyondInt32IsRefused) {
  EXPECT_EQ(KernelRegion::cube({46340}).volume(2), int64_t{46340} * 46340);
  for (const auto& [k, d] :
       std::vector<std::pair<int32_t, int>>{{1 << 16, 4}, {1 << 30, 3}, {1 << 21, 3}, {46341, 2}}) {
    try {
      (void)KernelRegion::cube({k}).volume(d);
      ADD_FAILURE() << k << " in " << d << "-D";
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find("kernel volume"), std::string::npos) << e.what();
    }
  }
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

TEST(MinkowskiRegion, OffsetsUpToTwoToTheThirtyAreExactLargerOnesRefused) {
  const int32_t limit = int32_t{1} << 30;
  // 1 x dilation 2^15 x tensor stride 2^15 = 2^30 exactly.
  EXPECT_EQ(KernelRegion::cube({3}, {1 << 15}).offsets({1 << 15}),
            (std::vector<int32_t>{-limit, 0, limit}));
  // 2 x 2^15 x 2^15 = 2^31 would wrap in int32.
  EXPECT_THROW(KernelRegion::cube({5}, {1 << 15}).offsets({1 << 15}), fk::Error);
  EXPECT_THROW(KernelRegion::custom({3}, 1).offsets({1 << 29}), fk::Error);
  EXPECT_THROW(KernelRegion::cross({3}, {1 << 16}).offsets({1 << 16}), fk::Error);
  try {
    KernelRegion::cube({3}, {limit + 1}).offsets({1});
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("dilation of at most 2^30"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace minkowski
