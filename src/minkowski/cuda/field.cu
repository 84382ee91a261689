// Field voxelization (tensor_field_device.h): one thread per coordinate, the
// host loop's f64 divisions and floors (IEEE, so the same voxels), the
// lowest invalid row kept by an atomic minimum (the same row whatever the
// scheduling).
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "minkowski/cuda/field_kernels.h"

namespace minkowski::cuda {

namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;

// [-2^31, 2^31 - 1], the int32 values (a NaN is not within): the host loop's bounds.
__device__ inline bool within_int32(double v) {
  return v >= -2147483648.0 && v <= 2147483647.0;
}

template <typename T>
__global__ void voxelize_kernel(const T* coords, int64_t n, VoxelGrid grid, int32_t* rows,
                                unsigned long long* bad) {
  FK_CUDA_LOOP(t, n * grid.width) {
    const int64_t i = t / grid.width;
    const int a = static_cast<int>(t - i * grid.width);
    const double v = static_cast<double>(coords[t]);
    bool ok;
    double out;
    if (a == 0) {  // the batch index rounded half to even, as the host loop
      out = rint(v);
      ok = within_int32(out);
    } else {
      // As the host loop: the stride-floored value is the one checked.
      const double q = floor(v / grid.voxel[a]);
      out = floor(q / grid.stride[a]) * grid.stride[a];
      ok = within_int32(out);
    }
    if (ok) {
      rows[t] = static_cast<int32_t>(out);
    } else {
      rows[t] = 0;
      atomicMin(bad, static_cast<unsigned long long>(i));
    }
  }
}

}  // namespace

template <typename T>
void launch_voxelize(const T* coords, int64_t n, const VoxelGrid& grid, int32_t* rows,
                     unsigned long long* bad, void* stream) {
  if (n * grid.width == 0) return;
  voxelize_kernel<T>
      <<<blocks_for(n * grid.width), kThreads, 0, as_stream(stream)>>>(coords, n, grid, rows, bad);
  check_launch("minkowski::cuda::launch_voxelize");
}

template void launch_voxelize<float>(const float*, int64_t, const VoxelGrid&, int32_t*,
                                     unsigned long long*, void*);
template void launch_voxelize<double>(const double*, int64_t, const VoxelGrid&, int32_t*,
                                      unsigned long long*, void*);

}  // namespace minkowski::cuda
