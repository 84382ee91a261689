// CPU-only builds: features on a CUDA device cannot be normalized.
#include "fk/error.h"
#include "minkowski/ops/normalization_device.h"

namespace minkowski {

namespace {
[[noreturn]] void no_cuda(const fk::Device& d) {
  throw fk::Error("minkowski::normalize", "features on the CPU (this build has no CUDA backend)",
                  "features on " + d.str());
}
}  // namespace

fk::Tensor device_statistics(const fk::Tensor& x, const Segments&, const std::vector<int64_t>&,
                             int64_t, double) {
  no_cuda(x.device());
}
fk::Tensor device_fixed_statistics(const fk::Tensor& mean, const fk::Tensor&, double) {
  no_cuda(mean.device());
}
fk::Tensor device_upload_statistics(const NormStats&, int64_t, const fk::Device& device) {
  no_cuda(device);
}
fk::Tensor device_normalize_forward(const fk::Tensor& x, const Segments&, const fk::Tensor&,
                                    const fk::Tensor&, const fk::Tensor&) {
  no_cuda(x.device());
}
NormGrads device_normalize_backward(const fk::Tensor&, const fk::Tensor& x, const Segments&,
                                    const fk::Tensor&, const fk::Tensor&, bool, bool, int64_t) {
  no_cuda(x.device());
}
void device_running_update(const fk::Tensor& moments, double, double, fk::Tensor&, fk::Tensor&) {
  no_cuda(moments.device());
}

}  // namespace minkowski
