// CPU-only builds: features on a CUDA device cannot be convolved channelwise.
#include "fk/error.h"
#include "minkowski/ops/conv_channelwise_device.h"

namespace minkowski {

namespace {
[[noreturn]] void no_cuda(const fk::Tensor& features) {
  throw fk::Error("minkowski::channelwise_convolution",
                  "features on the CPU (this build has no CUDA backend)",
                  "features on " + features.device().str());
}
}  // namespace

fk::Tensor device_channelwise_forward(const fk::Tensor& features, const fk::Tensor&,
                                      const KernelMap&) {
  no_cuda(features);
}
ConvGrads device_channelwise_backward(const fk::Tensor&, const fk::Tensor& features,
                                      const fk::Tensor&, const KernelMap&, bool, bool) {
  no_cuda(features);
}

}  // namespace minkowski
