#pragma once
// Products rounded on their own, for the kernels that must reproduce the
// CPU's sums: nvcc contracts a * b + c into one fused multiply-add (a single
// rounding), the CPU build (x86-64 baseline, no FMA) does not, so the kernels
// multiply with these and add separately.

namespace minkowski::cuda {

__device__ inline float mul_rn(float a, float b) {
  return __fmul_rn(a, b);
}
__device__ inline double mul_rn(double a, double b) {
  return __dmul_rn(a, b);
}

}  // namespace minkowski::cuda
