#pragma once
// WaveInitialConditionOperator on a CUDA device (cuda/wave_initial_device.cpp,
// kernels in cuda/wave.cu); CPU-only builds refuse it
// (wave_initial_device_stub.cpp). Reached through its apply with a device p0.
#include "fk/tensor.h"

namespace nefi {

class WaveInitialConditionOperator;

// op.apply(p0) for p0 on a CUDA device (shape and dtype already checked): the
// sensor's traces (n_rec, n_t) on that device, differentiable in p0 through
// the exact discrete adjoint, with the CPU path's arithmetic and order.
fk::Tensor wave_initial_device(const WaveInitialConditionOperator& op, const fk::Tensor& p0);

}  // namespace nefi
