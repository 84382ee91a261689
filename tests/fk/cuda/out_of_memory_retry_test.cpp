// The device pool's answer to an out-of-memory (fk/cuda/out_of_memory_retry.h),
// with no GPU: the wait-trim-retry is allowed only when no capture is in the
// way (on the device, on this thread, or reported by CUDA on the stream), and
// the error thrown instead names the device, the exact request and what to
// do. The runtime's use of it inside a real capture is in graph_test.cpp.
#include "fk/cuda/out_of_memory_retry.h"

#include <gtest/gtest.h>

#include <string>

namespace fk::cuda {
namespace {

TEST(OutOfMemoryRetry, AllowedOnlyWithNoCaptureInTheWay) {
  EXPECT_TRUE(may_retry_out_of_memory(false, false, false));
  for (int mask = 1; mask < 8; ++mask) {
    EXPECT_FALSE(may_retry_out_of_memory(mask & 1, mask & 2, mask & 4)) << "mask " << mask;
  }
}

TEST(OutOfMemoryRetry, TheRefusalNamesTheRequestAndTheCapture) {
  const size_t request = size_t{3} << 30;  // 3 GiB
  const std::string msg = out_of_memory_in_capture(1, request).what();
  EXPECT_NE(msg.find("cuda:1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("stream capture"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3221225472 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3072.0 MiB"), std::string::npos) << msg;
  EXPECT_NE(msg.find("eagerly"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lower the size"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fk::cuda
