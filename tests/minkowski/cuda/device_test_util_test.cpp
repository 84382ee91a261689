// The comparisons the minkowski CUDA tests rely on (device_test_util.h), on
// host tensors (no device needed): a NaN anywhere in the result fails,
// also one before finite elements.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "device_test_util.h"

namespace minkowski {
namespace {

TEST(MinkowskiCudaTestUtil, ExpectCloseFailsOnANaNBeforeFiniteElements) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const fk::Tensor want = fk::from_vector(std::vector<float>{1, 2, 3});
  EXPECT_NONFATAL_FAILURE(
      cuda_test::expect_close(fk::from_vector(std::vector<float>{nan, 2, 3}), want, 1e-3, "first"),
      "worst at element 0");
  EXPECT_NONFATAL_FAILURE(
      cuda_test::expect_close(fk::from_vector(std::vector<float>{1, nan, 3}), want, 1e-3, "middle"),
      "worst at element 1");
  // A difference past the tolerance fails, one within it passes.
  EXPECT_NONFATAL_FAILURE(
      cuda_test::expect_close(fk::from_vector(std::vector<float>{1, 2, 3.1f}), want, 1e-3, "far"),
      "worst at element 2");
  cuda_test::expect_close(fk::from_vector(std::vector<float>{1, 2, 3.001f}), want, 1e-3, "near");
}

}  // namespace
}  // namespace minkowski
