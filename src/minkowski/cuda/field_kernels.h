#pragma once
// Launcher of the field voxelization kernel (field.cu), in kernels.h's
// conventions (raw device pointers, a stream as void*, T float or double).
#include <cstdint>

#include "minkowski/cuda/kernels.h"

namespace minkowski::cuda {

// tensor_field.cpp's voxel rows on the device: for each of n rows of field
// coordinates c (n x grid.width, T), rows[i, 0] = rint(c[i, 0]) (the batch
// index, rounded half to even) and, for a >= 1, q = floor(c[i, a] / voxel[a]) and rows[i, a] =
// floor(q / stride[a]) * stride[a], in f64 as on the host. *bad (set to n by
// the caller) becomes the lowest row whose rounded batch index is not finite
// and below 2^31 - 1 in magnitude, or whose q is not finite and below it.
struct VoxelGrid {
  int width = 0;
  double voxel[kMaxWidth] = {};   // index 0 unused
  double stride[kMaxWidth] = {};  // index 0 unused
};
template <typename T>
void launch_voxelize(const T* coords, int64_t n, const VoxelGrid& grid, int32_t* rows,
                     unsigned long long* bad, void* stream);

}  // namespace minkowski::cuda
