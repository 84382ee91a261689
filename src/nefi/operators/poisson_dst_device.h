#pragma once
// The Poisson DST solve on a CUDA device (cuda/poisson_dst_device.cpp,
// kernels in cuda/poisson_dst.cu); CPU-only builds refuse it
// (poisson_dst_device_stub.cpp). Reached through PoissonOperator::apply with
// a device field.
#include "fk/tensor.h"
#include "nefi/operators/poisson_dst.h"

namespace nefi {

// The solve of f (batch, *shape), f32/f64 on a CUDA device, no autograd:
// odd extension, cuFFT, division by the eigenvalues, inverse cuFFT, the
// box's real part. The operator is symmetric: this is also its adjoint.
fk::Tensor poisson_solve_device(const PoissonOperator& op, const fk::Tensor& f);

// op.apply(x) for a field on a CUDA device (shape and dtype already
// checked): the potential on that device, differentiable in x (the backward
// is the same solve of the cotangent).
fk::Tensor poisson_device(const PoissonOperator& op, const fk::Tensor& x);

}  // namespace nefi
