#pragma once
// FusedOptimizer's two passes on a CUDA device (cuda/adam_device.cpp, kernels in
// cuda/adam.cu); CPU-only builds refuse them (adam_device_stub.cpp).
#include <vector>

#include "fk/tensor.h"
#include "nefi/solve/fused_optimizer.h"

namespace nefi {

// The sum of squares of every defined gradient (f32/f64, contiguous, all on
// one CUDA device), in f64 by fixed-order reductions: the one host read of a
// step.
double device_grad_sq_sum(const std::vector<fk::Tensor>& grads);

// adam_update on the device buffers of p, g, m, v (same dtype and device).
void adam_update_device(fk::Tensor& p, const fk::Tensor& g, fk::Tensor& m, fk::Tensor& v, double lr,
                        double clip, const OptimizerOptions& o, int64_t t);

// The sync-free forms a captured step enqueues (nothing is read on the host;
// pointers are device f64 memory on the tensors' device, `block` the device
// step block of solve/device_step_slots.h):
// the squared norm of the defined gradients (at least one) into *out, by the
// same fixed-order passes as device_grad_sq_sum;
void enqueue_grad_sq_sum(const std::vector<fk::Tensor>& grads, double* out);
// adam_update with the step's scalars, clip factor and finite-loss gate read
// from the block when the kernel runs;
void adam_update_device_gated(fk::Tensor& p, const fk::Tensor& g, fk::Tensor& m, fk::Tensor& v,
                              const double* block);
// one-element f32/f64 tensors (undefined: 0) widened to f64 into out[0..n).
void enqueue_gather_scalars(const std::vector<fk::Tensor>& scalars, double* out);

}  // namespace nefi
