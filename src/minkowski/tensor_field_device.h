#pragma once
// TensorField::sparse's voxelization of coordinates on a CUDA device
// (tensor_field.h): the voxel rows are computed there (cuda/field.cu, the
// host loop's f64 arithmetic, so the same int32 rows) and handed to
// SparseTensor's constructor on the device, whose coordinate manager builds
// the map there (coords/coordinate_manager.h). Nothing but one int64 (the
// first invalid row, if any) crosses to the host.
//
// CUDA builds implement this in minkowski/cuda/field_dispatch.cpp; CPU-only
// builds in tensor_field_device_stub.cpp, as an fk::Error that says so.
#include <cstdint>
#include <vector>

#include "fk/tensor.h"

namespace minkowski {

struct DeviceVoxelRows {
  fk::Tensor rows;         // N x (1 + D) int32 on the coordinates' device
  int64_t first_bad = -1;  // the lowest row the host loop would refuse, or -1
};

// coordinates: N x (1 + D) f32/f64 on a CUDA device; voxel_size and
// tensor_stride: D values each.
DeviceVoxelRows device_voxel_rows(const fk::Tensor& coordinates,
                                  const std::vector<double>& voxel_size,
                                  const std::vector<int32_t>& tensor_stride);

}  // namespace minkowski
