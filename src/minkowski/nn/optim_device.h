#pragma once
// The optimizers' element updates (optim.h) for parameters on a CUDA device:
// one kernel per parameter tensor (Adam: per list of them), one thread per element, the same
// formulas in f64 as the host loops, each product rounded on its own (the CPU build does not
// contract into fused multiply-adds; rounding.cuh), so a device step gives the host step's values
// bit for bit from the same gradients. Parameters f32 or f64, contiguous; the gradient is taken in
// the parameter's dtype (contiguous copy when it is not); moment buffers f64 of the parameter's
// shape, on its device. Mismatched devices are fk::Error.
//
// CUDA builds implement these in minkowski/cuda/optim_dispatch.cpp; CPU-only
// builds in optim_device_stub.cpp, as an fk::Error that says so.
#include <vector>

#include "fk/tensor.h"

namespace minkowski::nn {

struct SgdUpdate {
  double lr = 0, momentum = 0, weight_decay = 0;
  bool nesterov = false;
};
// momentum_buffer: undefined when momentum == 0.
void device_sgd_update(const fk::Tensor& param, const fk::Tensor& momentum_buffer,
                       const SgdUpdate& u);

struct AdamUpdate {
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  double bias1 = 1, bias2 = 1;  // 1 - beta^t, formed on the host as the CPU step does
  bool decoupled = false;
};
// Every parameter of the list in a few launches (one per 64 parameters of a
// dtype and device), none copying from the host.
struct AdamOperands {
  fk::Tensor param, exp_avg, exp_avg_sq;
};
void device_adam_update(const std::vector<AdamOperands>& params, const AdamUpdate& u);

}  // namespace minkowski::nn
