#pragma once
// The angular-spectrum propagation and the holography operator on a CUDA
// device (cuda/angular_spectrum_device.cpp, kernels in
// cuda/angular_spectrum.cu); CPU-only builds refuse them
// (angular_spectrum_device_stub.cpp). Reached through propagate(tensor) and
// HolographyOperator::apply with device operands.
#include "fk/tensor.h"
#include "nefi/operators/angular_spectrum.h"

namespace nefi {

// propagate() of u (batch, n0, n1) c128 on a CUDA device with H the transfer
// function of the padded grid (n0 pad_factor, n1 pad_factor) c128 on that
// device: pad (or crop^T), FFT, multiply by H (conj(H) for the adjoint),
// inverse FFT, crop (or pad^T). No autograd.
fk::Tensor propagate_device(const fk::Tensor& u, const fk::Tensor& H, const PropagationOptions& o,
                            bool adjoint);

// op.apply(phi) for a phase on a CUDA device: the intensity on that device,
// differentiable in phi (the exact adjoint, as on the CPU).
fk::Tensor holography_device(const HolographyOperator& op, const fk::Tensor& phi);

}  // namespace nefi
