#pragma once
// WaveOperator on a CUDA device (cuda/wave_device.cpp, kernels in
// cuda/wave.cu); CPU-only builds refuse it (wave_device_stub.cpp). Reached
// through WaveOperator::apply with a device velocity.
#include "fk/tensor.h"

namespace nefi {

class WaveOperator;

// op.apply(c) for a velocity on a CUDA device (shape and dtype already
// checked): the traces on that device, differentiable in c through the
// discrete adjoint (full trajectories or checkpoints kept on the device, as
// op.config().grad_mode says), with the CPU path's arithmetic and order.
fk::Tensor wave_device(const WaveOperator& op, const fk::Tensor& c);

// NEFI_WAVE_FUSED (read per call): whether the device wave solves
// (wave_device, wave_initial_device) run each run of leapfrog steps as one
// cooperative launch where the device supports it (wave_kernels.h's
// launch_wave_forward_run), or one launch per phase.
bool wave_fused_runs();

}  // namespace nefi
