// The closeness check of the minkowski CUDA tests (device_test_util.h) on
// host tensors: it needs no device, so these run wherever
// minkowski_cuda_tests is built.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "device_test_util.h"

namespace minkowski {
namespace {

using cuda_test::expect_close;

fk::Tensor values(const std::vector<double>& v, fk::DType t) {
  return fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size())}).to(t);
}

TEST(MinkowskiDeviceTestUtil, ExpectCloseFailsOnANanBeforeCloseValues) {
  for (fk::DType t : {fk::DType::F32, fk::DType::F64}) {
    const fk::Tensor want = values({1.0, 2.0, 3.0}, t);
    // The NaN first: a later small difference must not replace it as the worst.
    EXPECT_NONFATAL_FAILURE(expect_close(values({std::nan(""), 2.0, 3.0}, t), want, 1e-6, "first"),
                            "first");
    EXPECT_NONFATAL_FAILURE(expect_close(values({1.0, 2.0, std::nan("")}, t), want, 1e-6, "last"),
                            "last");
  }
}

TEST(MinkowskiDeviceTestUtil, ExpectCloseComparesF64InF64) {
  const fk::Tensor want = values({1.0, 2.0}, fk::DType::F64);
  expect_close(values({1.0, 2.0 + 1e-13}, fk::DType::F64), want, 1e-12, "within");
  // 1e-9 apart: equal once rounded to f32, not in f64.
  EXPECT_NONFATAL_FAILURE(
      expect_close(values({1.0, 2.0 + 1e-9}, fk::DType::F64), want, 1e-12, "f64 difference"),
      "f64 difference");
}

}  // namespace
}  // namespace minkowski
