#pragma once
// The Born and Rytov operators on a CUDA device (cuda/scattering_device.cpp,
// kernels in cuda/scattering.cu); CPU-only builds refuse them
// (scattering_device_stub.cpp). Reached through BornOperator::apply with a
// device field.
#include "fk/tensor.h"
#include "nefi/operators/scattering.h"

namespace nefi {

// op.apply(x) for a field on a CUDA device (shape and dtype already checked):
// the scattered field (or Rytov phase) on that device in x's dtype, computed
// in f64, differentiable in x through the exact adjoint. Equal to the CPU's
// to the rounding of the GEMMs (cuBLAS and OpenBLAS sum in different orders).
fk::Tensor born_device(const BornOperator& op, const fk::Tensor& x);

}  // namespace nefi
