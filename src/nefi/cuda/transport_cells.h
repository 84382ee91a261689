#pragma once
// The per-cell arithmetic of the advection-diffusion kernels (transport.cu):
// operators/transport_steps.cpp's Euler step and StepWeights, operation for
// operation. Host and device functions alike, so that a CPU build compiles
// the same code (the emulated device runs it).
#include <cstdint>

#include "nefi/cuda/host_device.h"
#include "nefi/cuda/transport_kernels.h"

namespace nefi::cuda {

// a + b and a b, each rounded: what the CPU's loops (baseline x86-64, built
// with -ffp-contract=off) compute; nvcc would otherwise contract a product
// into the sum that follows it.
NEFI_HOST_DEVICE inline double rounded_add(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
NEFI_HOST_DEVICE inline double rounded_mul(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// Cell i of state row `c` after one Euler step: c_i + tau (s_i + sum_e w_e
// c[col_e]), w_e = weight_e + tau per_tau_e (StepWeights::set), the sum from
// s_i (0 without a source) in entry order.
NEFI_HOST_DEVICE inline double stepped_cell(const TransportRows& m, double tau, const double* c,
                                            const double* s, int64_t i) {
  double acc = s != nullptr ? s[i] : 0.0;
  for (int64_t e = m.row_start[i]; e < m.row_start[i + 1]; ++e) {
    const double w = m.per_tau != nullptr ? rounded_add(m.weight[e], rounded_mul(tau, m.per_tau[e]))
                                          : m.weight[e];
    acc = rounded_add(acc, rounded_mul(w, c[m.col[e]]));
  }
  return rounded_add(c[i], rounded_mul(tau, acc));
}

}  // namespace nefi::cuda
