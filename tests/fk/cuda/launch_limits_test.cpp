// fk::cuda::grid_dim (fk/cuda/launch_limits.h), without a device (fk_tests,
// every build): the blocks are ceil(total / per_block), written out by hand,
// up to CUDA's limits exactly (2^31 − 1 along x, 65535 along y and z), and
// one block past a limit is an fk::Error naming the axis, the limit, the
// blocks and the items asked for.
#include "fk/cuda/launch_limits.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "fk/error.h"
#include "fk/test_util.h"

namespace fk::cuda {
namespace {

using fk::test::error_of;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(CudaLaunchLimits, BlocksCoverTheItemsRoundedUp) {
  EXPECT_EQ(grid_dim("t", 'x', 1, 64, "rows"), 1u);
  EXPECT_EQ(grid_dim("t", 'x', 64, 64, "rows"), 1u);
  EXPECT_EQ(grid_dim("t", 'x', 65, 64, "rows"), 2u);
  EXPECT_EQ(grid_dim("t", 'y', 100, 32, "channels"), 4u);  // 32 + 32 + 32 + 4
  EXPECT_EQ(grid_dim("t", 'z', 7, 1, "chunks"), 7u);
}

TEST(CudaLaunchLimits, EachAxisTakesItsLimitExactly) {
  EXPECT_EQ(max_grid_dim('x'), 2147483647);
  EXPECT_EQ(max_grid_dim('y'), 65535);
  EXPECT_EQ(max_grid_dim('z'), 65535);
  // x: 2^31 − 1 blocks of 64 rows, the last one partial.
  EXPECT_EQ(grid_dim("t", 'x', int64_t{2147483647} * 64 - 5, 64, "rows"), 2147483647u);
  EXPECT_EQ(grid_dim("t", 'y', int64_t{65535} * 64, 64, "output channels"), 65535u);
  EXPECT_EQ(grid_dim("t", 'z', 65535, 1, "chunks"), 65535u);
}

TEST(CudaLaunchLimits, OneBlockPastTheLimitNamesAxisLimitAndSize) {
  // 4,194,241 channels in tiles of 64: 65,536 tiles, one past gridDim.y's 65,535.
  const std::string y = error_of([] { grid_dim("conv", 'y', 4194241, 64, "output channels"); });
  EXPECT_TRUE(contains(y, "conv")) << y;
  EXPECT_TRUE(contains(y, "gridDim.y")) << y;
  EXPECT_TRUE(contains(y, "at most 65535 blocks")) << y;
  EXPECT_TRUE(contains(y, "65536 blocks for 4194241 output channels")) << y;
  const std::string z = error_of([] { grid_dim("w", 'z', 65536, 1, "chunks"); });
  EXPECT_TRUE(contains(z, "gridDim.z") && contains(z, "65536 blocks")) << z;
  // x: 2^31 blocks of one row.
  const std::string x = error_of([] { grid_dim("w", 'x', int64_t{1} << 31, 1, "rows"); });
  EXPECT_TRUE(contains(x, "at most 2147483647 blocks along gridDim.x")) << x;
  EXPECT_TRUE(contains(x, "2147483648 blocks for 2147483648 rows")) << x;
}

TEST(CudaLaunchLimits, EmptyCountsAndUnknownAxesAreErrors) {
  EXPECT_TRUE(contains(error_of([] { grid_dim("w", 'x', 0, 64, "rows"); }), "0 and 64"));
  EXPECT_TRUE(contains(error_of([] { grid_dim("w", 'x', 10, 0, "rows"); }), "10 and 0"));
  const std::string axis = error_of([] { max_grid_dim('w'); });
  EXPECT_TRUE(contains(axis, "'x', 'y' or 'z'") && contains(axis, "'w'")) << axis;
}

}  // namespace
}  // namespace fk::cuda
