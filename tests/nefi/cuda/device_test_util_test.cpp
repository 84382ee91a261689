// The closeness check of nefi's CUDA tests (device_test_util.h) on host
// values: it needs no device, so these run wherever nefi_cuda_tests is built.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nefi/cuda/device_test_util.h"

namespace {

using nefi::cuda_test::expect_close;

TEST(NefiDeviceTestUtil, ExpectCloseFailsOnANanBeforeCloseValues) {
  // The NaN first: a later small difference must not replace it as the worst.
  const std::vector<double> want{1.0, 2.0, 3.0};
  EXPECT_NONFATAL_FAILURE(expect_close({std::nan(""), 2.0, 3.0}, want, 1e-6, "nan first"),
                          "nan first");
  EXPECT_NONFATAL_FAILURE(expect_close({1.0, 2.0, std::nan("")}, want, 1e-6, "nan last"),
                          "nan last");
}

TEST(NefiDeviceTestUtil, ExpectCloseScalesByTheLargestExpectedValue) {
  expect_close({100.0, 1.0}, {100.0 + 5e-5, 1.0}, 1e-6, "within 1e-6 of 100");
  EXPECT_NONFATAL_FAILURE(expect_close({100.0, 1.0}, {100.0 + 2e-4, 1.0}, 1e-6, "beyond"),
                          "beyond");
}

TEST(NefiDeviceTestUtil, MaxAbsDiffIsNanWhenAnyDifferenceIs) {
  using nefi::cuda_test::max_abs_diff;
  using nefi::cuda_test::nan_max;
  EXPECT_EQ(max_abs_diff<double>({1.0, -2.0, 3.0}, {1.5, -2.0, 1.0}), 2.0);
  // Wherever the NaN sits, the result is NaN and a tolerance check fails.
  EXPECT_TRUE(std::isnan(max_abs_diff<double>({std::nan(""), 2.0}, {1.0, 2.0})));
  EXPECT_TRUE(std::isnan(max_abs_diff<double>({1.0, 2.0, 5.0}, {1.0, std::nan(""), 1.0})));
  EXPECT_FALSE(max_abs_diff<double>({1.0, std::nan("")}, {1.0, 1.0}) <= 1.0);
  EXPECT_TRUE(std::isnan(nan_max(std::nan(""), 3.0)));
  EXPECT_EQ(nan_max(2.0, 3.0), 3.0);
}

}  // namespace
