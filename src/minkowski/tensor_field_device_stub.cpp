// CPU-only builds: field coordinates on a CUDA device cannot be voxelized.
#include "fk/error.h"
#include "minkowski/tensor_field_device.h"

namespace minkowski {

DeviceVoxelRows device_voxel_rows(const fk::Tensor& coordinates, const std::vector<double>&,
                                  const std::vector<int32_t>&) {
  throw fk::Error("minkowski::TensorField::sparse",
                  "coordinates on the CPU (this build has no CUDA backend)",
                  "coordinates on " + coordinates.device().str());
}

}  // namespace minkowski
