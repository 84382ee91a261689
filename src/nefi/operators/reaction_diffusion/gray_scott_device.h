#pragma once
// The checkpointed Gray-Scott solve on a CUDA device (cuda/gray_scott_device.cpp,
// kernels in cuda/gray_scott.cu); CPU-only builds refuse it
// (gray_scott_device_stub.cpp). Reached through ReactionDiffusionOperator::apply
// with a field on a device and grad_mode checkpoint.
#include "fk/tensor.h"
#include "nefi/operators/reaction_diffusion/reaction_diffusion_operator.h"

namespace nefi {

// op.apply(x) for a field on a CUDA device (shape and dtype already
// checked): the snapshots on that device, differentiable in x through the
// discrete adjoint run there, equal to the CPU's to the bit.
fk::Tensor gray_scott_device(const ReactionDiffusionOperator& op, const fk::Tensor& x);

}  // namespace nefi
