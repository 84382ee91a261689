// CPU-only builds: features on a CUDA device cannot be pooled.
#include "fk/error.h"
#include "minkowski/ops/pooling_device.h"

namespace minkowski {

namespace {
[[noreturn]] void no_cuda(const fk::Tensor& features) {
  throw fk::Error("minkowski::pooling", "features on the CPU (this build has no CUDA backend)",
                  "features on " + features.device().str());
}
}  // namespace

PoolingResult device_pool_forward(const fk::Tensor& features, const KernelMap&, PoolingMode) {
  no_cuda(features);
}
fk::Tensor device_pool_backward(const fk::Tensor& grad_out, const KernelMap&, PoolingMode,
                                const fk::Tensor&) {
  no_cuda(grad_out);
}
GlobalPoolingResult device_global_pool_forward(const fk::Tensor& a, const fk::Tensor&,
                                               const RowGroups&, PoolingMode) {
  no_cuda(a);
}
fk::Tensor device_global_pool_backward(const fk::Tensor& grad_out, const RowGroups&, PoolingMode,
                                       const fk::Tensor&) {
  no_cuda(grad_out);
}

}  // namespace minkowski
