// CPU-only builds: there is no device to build coordinate maps on (nor a
// device kernel map to download: the CoordinateManager links to_host).
#include "fk/error.h"
#include "minkowski/cuda/device_coordinates.h"

namespace minkowski::cuda {

namespace {
[[noreturn]] void no_cuda(const char* where) {
  throw fk::Error(where, "a build with the CUDA backend", "a CPU-only build");
}
}  // namespace

DeviceUnique unique_coordinates(const fk::Tensor&, const std::vector<int32_t>&, RowOrder) {
  no_cuda("minkowski::cuda::unique_coordinates");
}
DeviceCoordinateMap stride_coordinates(const DeviceCoordinateMap&, const std::vector<int32_t>&,
                                       RowOrder) {
  no_cuda("minkowski::cuda::stride_coordinates");
}
DeviceCoordinateMap expand_coordinates(const DeviceCoordinateMap&, const std::vector<int32_t>&,
                                       const std::vector<int32_t>&) {
  no_cuda("minkowski::cuda::expand_coordinates");
}
fk::Tensor lookup_coordinates(const DeviceCoordinateMap&, const fk::Tensor&) {
  no_cuda("minkowski::cuda::lookup_coordinates");
}
DeviceKernelMap build_device_kernel_map(const DeviceCoordinateMap&, const DeviceCoordinateMap&,
                                        const std::vector<int32_t>&) {
  no_cuda("minkowski::cuda::build_device_kernel_map");
}
DeviceKernelMap transposed(const DeviceKernelMap&) {
  no_cuda("minkowski::cuda::transposed");
}
std::shared_ptr<KernelMap> DeviceKernelMap::to_host() const {
  no_cuda("minkowski::cuda::DeviceKernelMap::to_host");
}

}  // namespace minkowski::cuda
