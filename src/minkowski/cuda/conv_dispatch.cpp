// convolve_features' device path (conv_device.h): the host map's device copy,
// made once per device and kept with the map, then the device convolution.
#include "fk/error.h"
#include "minkowski/cuda/device_conv.h"
#include "minkowski/cuda/device_kernel_map.h"
#include "minkowski/ops/conv_device.h"

namespace minkowski {

namespace {

const cuda::DeviceKernelMap& on_device(const KernelMap& map, const fk::Tensor& features) {
  return cuda::device_copy_of(map, features.device().index);
}

// A 1x1 convolution's (C_in, C_out) weight is the single offset's (1, C_in, C_out).
fk::Tensor as_offsets(const fk::Tensor& weight) {
  FK_CHECK(weight.defined(), "minkowski::convolution", "a weight tensor", "an undefined tensor");
  fk::Tensor w = weight.contiguous();
  return w.dim() == 2 ? w.reshape({1, w.size(0), w.size(1)}) : w;
}

}  // namespace

fk::Tensor device_conv_forward(const fk::Tensor& features, const fk::Tensor& weight,
                               const KernelMap& map) {
  return cuda::conv_forward(features.contiguous(), as_offsets(weight), on_device(map, features));
}

// The output gradient autograd hands back may be in another dtype than the
// output (a caller's f32 gradient of a bf16 output): taken in the features'
// dtype, as the CPU path takes it in its compute dtype.
ConvGrads device_conv_backward(const fk::Tensor& grad_out, const fk::Tensor& features,
                               const fk::Tensor& weight, const KernelMap& map, bool need_features,
                               bool need_weight) {
  const fk::Tensor g_in = grad_out.defined() && grad_out.dtype() != features.dtype()
                              ? grad_out.to(features.dtype())
                              : grad_out;
  cuda::DeviceConvGrads g =
      cuda::conv_backward(g_in.contiguous(), features.contiguous(), as_offsets(weight),
                          on_device(map, features), need_features, need_weight);
  if (g.weight.defined() && weight.dim() == 2) g.weight = g.weight.reshape(weight.shape());
  return {g.features, g.weight};
}

}  // namespace minkowski
