// Device coordinate maps (cuda/device_coordinates.h) refuse host coordinates
// in every build: a CUDA build says where the coordinates must be, a CPU-only
// build's stubs say the backend is missing. Runs without a GPU.
#include <gtest/gtest.h>

#include <vector>

#include "fk/fk.h"
#include "minkowski/cuda/device_coordinates.h"

namespace minkowski {
namespace {

TEST(DeviceCoordinates, RefuseHostCoordinates) {
  const fk::Tensor host = fk::from_vector(std::vector<int32_t>{0, 1, 2}, fk::Dims{1, 3});
  try {
    cuda::unique_coordinates(host, {1});
    FAIL() << "host coordinates were accepted";
  } catch (const fk::Error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.find("CUDA") != std::string::npos) << what;
  }
}

}  // namespace
}  // namespace minkowski
