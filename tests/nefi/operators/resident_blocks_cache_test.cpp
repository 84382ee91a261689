// ResidentBlocksCache (nefi/cuda/resident_blocks_cache.h), the cache of the
// heat sweep's cooperative grid limit, with a counting query in place of the
// CUDA occupancy calculator: one query per (device, kernel, block size).
#include "nefi/cuda/resident_blocks_cache.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace {

int kernel_a, kernel_b;  // two distinct "kernel" addresses

TEST(NefiResidentBlocksCache, QueriesOncePerDeviceKernelAndBlockSize) {
  nefi::cuda::ResidentBlocksCache cache;
  int queries = 0;
  auto query = [&](int value) {
    return [&queries, value] {
      ++queries;
      return value;
    };
  };
  EXPECT_EQ(cache.get(0, &kernel_a, 512, query(128)), 128);
  EXPECT_EQ(cache.get(0, &kernel_a, 512, query(999)), 128);  // remembered, not asked
  EXPECT_EQ(queries, 1);
  EXPECT_EQ(cache.get(1, &kernel_a, 512, query(64)), 64);    // another device
  EXPECT_EQ(cache.get(0, &kernel_b, 512, query(96)), 96);    // another kernel
  EXPECT_EQ(cache.get(0, &kernel_a, 256, query(256)), 256);  // another block size
  EXPECT_EQ(queries, 4);
  EXPECT_EQ(cache.size(), 4u);
  EXPECT_EQ(cache.get(1, &kernel_a, 512, query(0)), 64);
  EXPECT_EQ(queries, 4);
}

TEST(NefiResidentBlocksCache, AFailedQueryIsNotRemembered) {
  nefi::cuda::ResidentBlocksCache cache;
  EXPECT_THROW(cache.get(0, &kernel_a, 512, []() -> int { throw std::runtime_error("no device"); }),
               std::runtime_error);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.get(0, &kernel_a, 512, [] { return 7; }), 7);
}

}  // namespace
