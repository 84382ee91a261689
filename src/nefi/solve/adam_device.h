#pragma once
// FusedAdam's two passes on a CUDA device (cuda/adam_device.cpp, kernels in
// cuda/adam.cu); CPU-only builds refuse them (adam_device_stub.cpp).
#include <vector>

#include "fk/tensor.h"
#include "nefi/solve/adam.h"

namespace nefi {

// The sum of squares of every defined gradient (f32/f64, contiguous, all on
// one CUDA device), in f64 by fixed-order reductions: the one host read of a
// step.
double device_grad_sq_sum(const std::vector<fk::Tensor>& grads);

// adam_update on the device buffers of p, g, m, v (same dtype and device).
void adam_update_device(fk::Tensor& p, const fk::Tensor& g, fk::Tensor& m, fk::Tensor& v, double lr,
                        double clip, const AdamOptions& o, int64_t t);

}  // namespace nefi
