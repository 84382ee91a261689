// TensorField from coordinates on the GPU (tensor_field.h): sparse() voxelizes
// them there and builds the map through the device coordinate manager. Against
// the same field with host coordinates: the map's coordinates, the inverse
// mapping and the quantization record exactly, the reduced features and
// slice() to 1e-6 (f32), a convolution on the result (its kernel map built on
// the device) to 1e-5, for f32 and f64 coordinates, voxel sizes per axis and a
// tensor stride; an invalid row is the host's fk::Error; features left on the
// host are refused.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "device_test_util.h"
#include "fk/test_util.h"
#include "minkowski/ops/conv.h"

namespace minkowski {
namespace {

using cuda_test::expect_close;
using cuda_test::kGpu;
using cuda_test::random_values;
using fk::test::error_of;

// n points [batch, x, y, z] over 3 batch items, coordinates uniform in
// [-span, span), on the CPU in `dtype`.
fk::Tensor random_points(int64_t n, double span, fk::DType dtype, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(-span, span);
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) {
    v.push_back(static_cast<double>(i % 3));
    for (int a = 0; a < 3; ++a) v.push_back(u(g));
  }
  return fk::from_vector(v, fk::Dims{n, 4}).to(dtype);
}

void expect_same_sparse(const std::vector<double>& voxel, const std::vector<int32_t>& stride,
                        fk::DType coordinate_dtype, QuantizationMode mode, unsigned seed) {
  const std::string what =
      std::string(fk::name(coordinate_dtype)) + " coordinates, seed " + std::to_string(seed);
  const fk::Tensor points = random_points(3000, 6.0, coordinate_dtype, seed);
  const fk::Tensor f = random_values({3000, 4}, 1.0, seed + 1);
  TensorField host(f, points), device(f.to(kGpu), points.to(kGpu));
  const SparseTensor sh = host.sparse(voxel, mode, nullptr, stride);
  const SparseTensor sd = device.sparse(voxel, mode, nullptr, stride);
  ASSERT_NE(sd.manager()->device_map(sd.key()), nullptr) << what << ": no device map";
  EXPECT_EQ(sd.key(), sh.key()) << what;
  EXPECT_EQ(sd.C().to_vector<int32_t>(), sh.C().to_vector<int32_t>()) << what;
  EXPECT_EQ(sd.inverse_mapping(), sh.inverse_mapping()) << what;
  EXPECT_EQ(sd.unique_index(), sh.unique_index()) << what;
  EXPECT_EQ(device.inverse_mapping(), host.inverse_mapping()) << what;
  ASSERT_EQ(sd.F().device(), kGpu) << what;
  expect_close(sd.F(), sh.F(), 1e-6, what + " features");
  expect_close(device.slice(sd), host.slice(sh), 1e-6, what + " slice");
  // A 3x3x3 convolution on each: the device map's kernel map is the host's.
  const fk::Tensor w = random_values({27, 4, 5}, 0.3, seed + 2);
  const KernelRegion k = KernelRegion::cube({3});
  const SparseTensor yh = convolution(sh, w, fk::Tensor(), k, {1});
  const SparseTensor yd = convolution(sd, w.to(kGpu), fk::Tensor(), k, {1});
  expect_close(yd.F(), yh.F(), 1e-5, what + " convolution");
}

TEST(MinkowskiCudaTensorField, DeviceCoordinatesGiveTheHostMap) {
  MK_SKIP_WITHOUT_GPU();
  expect_same_sparse({0.5}, {1}, fk::DType::F64, QuantizationMode::UnweightedAverage, 3);
  expect_same_sparse({0.4, 0.7, 0.3}, {1}, fk::DType::F32, QuantizationMode::UnweightedSum, 5);
  expect_same_sparse({0.25}, {2}, fk::DType::F64, QuantizationMode::RandomSubsample, 7);
}

TEST(MinkowskiCudaTensorField, InvalidRowsAreTheHostsErrors) {
  MK_SKIP_WITHOUT_GPU();
  const fk::Tensor f = random_values({50, 2}, 1.0, 11);
  for (int bad = 0; bad < 3; ++bad) {
    std::vector<double> v = random_points(50, 3.0, fk::DType::F64, 13).to_vector<double>();
    // row 17: a NaN batch index, an infinite coordinate, a coordinate
    // whose voxel leaves int32; row 31 too (the lowest row is named)
    for (int64_t row : {31, 17}) {
      if (bad == 0) v[row * 4] = NAN;
      if (bad == 1) v[row * 4 + 2] = INFINITY;
      if (bad == 2) v[row * 4 + 3] = 1e12;
    }
    const fk::Tensor points = fk::from_vector(v, fk::Dims{50, 4});
    TensorField host(f, points), device(f.to(kGpu), points.to(kGpu));
    const std::string want = error_of([&] { host.sparse(0.1); });
    ASSERT_NE(want.find("row 17"), std::string::npos) << want;
    EXPECT_EQ(error_of([&] { device.sparse(0.1); }), want);
  }
}

TEST(MinkowskiCudaTensorField, FeaturesOffTheCoordinatesDeviceAreRefused) {
  MK_SKIP_WITHOUT_GPU();
  const fk::Tensor points = random_points(20, 3.0, fk::DType::F32, 17);
  const fk::Tensor f = random_values({20, 2}, 1.0, 19);
  EXPECT_NE(error_of([&] {
              TensorField(f, points.to(kGpu));
            }).find("features on the coordinates' device cuda:0"),
            std::string::npos);
}

}  // namespace
}  // namespace minkowski
