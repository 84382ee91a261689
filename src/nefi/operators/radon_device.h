#pragma once
// The Radon projection on a CUDA device (cuda/radon_device.cpp, kernels in
// cuda/radon.cu); CPU-only builds refuse it (radon_device_stub.cpp). Reached
// through RadonOperator::apply with a device image.
#include "fk/tensor.h"
#include "nefi/operators/radon.h"

namespace nefi {

// op.apply(x) for an image on a CUDA device (shape and dtype already
// checked): the sinogram on that device, differentiable in x through the
// exact adjoint (the transpose's gather), equal to the CPU's to the bit.
fk::Tensor radon_device(const RadonOperator& op, const fk::Tensor& x);

}  // namespace nefi
