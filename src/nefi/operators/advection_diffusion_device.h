#pragma once
// The advection-diffusion steps on a CUDA device, either unknown
// (cuda/transport_device.cpp, kernels in cuda/transport.cu); CPU-only builds
// refuse them (advection_diffusion_device_stub.cpp). Reached through
// AdvectionDiffusionOperator::apply with a device field.
#include "fk/tensor.h"
#include "nefi/operators/advection_diffusion.h"

namespace nefi {

// op.apply(x) for releases, a diffusivity map or a velocity on a CUDA device (shape and
// dtype already checked): the observations on that device in x's dtype,
// differentiable in x through the steps' exact transposes; the same f64
// arithmetic as the CPU's (forward_rows and adjoint_rows; the coefficients'
// transport_coefficients.cpp), equal to the bit.
fk::Tensor advection_diffusion_device(const AdvectionDiffusionOperator& op, const fk::Tensor& x);

}  // namespace nefi
