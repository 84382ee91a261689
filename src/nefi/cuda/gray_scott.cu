// The Gray-Scott kernels (gray_scott_kernels.h): one explicit Euler substep
// fused into one kernel (both Laplacians or the Du flux divergence, the
// reaction, the checkpoint copy and the observed snapshot), its adjoint
// likewise (the observed cotangents added on the fly, the unknown's
// gradient accumulated per cell), and the range guard. One thread per cell;
// what it computes is gray_scott_cells.h's. Built with --fmad=false
// (CMakeLists.txt), so the products and sums round as the CPU's do.
#include <cuda_runtime.h>

#include "fk/cuda/common.cuh"
#include "nefi/cuda/gray_scott_cells.h"
#include "nefi/cuda/gray_scott_kernels.h"

namespace nefi::cuda {
namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;

constexpr int kGuardThreads = 256;

__global__ void step_kernel(GrayScottCoefficients k, GrayScottFields f, GrayScottStep b) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < k.n0 * k.n1) step_cell(k, f, b, c);
}

__global__ void adjoint_kernel(GrayScottCoefficients k, GrayScottFields f, GrayScottAdjoint b) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < k.n0 * k.n1) adjoint_cell(k, f, b, c);
}

// One block: every thread tests a strided share, __syncthreads_or folds them.
__global__ void __launch_bounds__(kGuardThreads)
    range_guard_kernel(const double* __restrict__ x, int n, double lo, double hi, int* flag) {
  int bad = 0;
  for (int i = threadIdx.x; i < n; i += kGuardThreads) bad |= out_of_range(x[i], lo, hi) ? 1 : 0;
  bad = __syncthreads_or(bad);
  if (threadIdx.x == 0) *flag = bad ? 1 : 0;
}

}  // namespace

void launch_gray_scott_step(const GrayScottCoefficients& k, const GrayScottFields& f,
                            const GrayScottStep& b, void* stream) {
  step_kernel<<<blocks_for(k.n0 * k.n1), kThreads, 0, as_stream(stream)>>>(k, f, b);
  check_launch("nefi::cuda::gray_scott_step");
}

void launch_gray_scott_adjoint(const GrayScottCoefficients& k, const GrayScottFields& f,
                               const GrayScottAdjoint& b, void* stream) {
  adjoint_kernel<<<blocks_for(k.n0 * k.n1), kThreads, 0, as_stream(stream)>>>(k, f, b);
  check_launch("nefi::cuda::gray_scott_adjoint");
}

void launch_gray_scott_range_guard(const double* x, int n, double lo_exclusive, double hi,
                                   int* flag, void* stream) {
  range_guard_kernel<<<1, kGuardThreads, 0, as_stream(stream)>>>(x, n, lo_exclusive, hi, flag);
  check_launch("nefi::cuda::gray_scott_range_guard");
}

}  // namespace nefi::cuda
