// TensorField's device voxelization (tensor_field_device.h): field.cu's
// kernel on the current stream, then one int64 read back (the first invalid
// row).
#include <string>

#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "minkowski/cuda/dispatch_util.h"
#include "minkowski/cuda/field_kernels.h"
#include "minkowski/tensor_field_device.h"

namespace minkowski {

using cuda_dispatch::with_type;

DeviceVoxelRows device_voxel_rows(const fk::Tensor& coordinates,
                                  const std::vector<double>& voxel_size,
                                  const std::vector<int32_t>& tensor_stride) {
  const char* where = "minkowski::TensorField::sparse";
  const int64_t n = coordinates.size(0), w = coordinates.size(1);
  FK_CHECK(w <= cuda::kMaxWidth, where,
           "at most " + fk::to_text(cuda::kMaxWidth - 1) + " spatial axes on a CUDA device",
           fk::to_text(w - 1));
  cuda::VoxelGrid grid;
  grid.width = static_cast<int>(w);
  for (int64_t a = 1; a < w; ++a) {
    grid.voxel[a] = voxel_size[a - 1];
    grid.stride[a] = static_cast<double>(tensor_stride[a - 1]);
  }
  const int dev = coordinates.device().index;
  fk::cuda::detail::DeviceGuard guard(dev);
  const fk::Tensor c = coordinates.contiguous();
  DeviceVoxelRows out;
  out.rows = fk::empty({n, w}, {fk::DType::I32, coordinates.device()});
  fk::Tensor bad = fk::full({1}, static_cast<double>(n), {fk::DType::I64, coordinates.device()});
  with_type(c, [&](auto zero) {
    using T = decltype(zero);
    cuda::launch_voxelize<T>(c.data<T>(), n, grid, out.rows.data<int32_t>(),
                             reinterpret_cast<unsigned long long*>(bad.data<int64_t>()),
                             fk::cuda::current_stream(dev));
  });
  fk::profile::count_launch();
  fk::cuda::after_op(dev);
  const int64_t first = bad.to_vector<int64_t>()[0];
  out.first_bad = first < n ? first : -1;
  return out;
}

}  // namespace minkowski
