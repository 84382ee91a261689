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
#include "nefi/cuda/gray_scott_rollout.h"

namespace nefi::cuda {
namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;

constexpr int kGuardThreads = 256;
// The fused kernels run as one block (the grid of their launches and the
// minimum of their __launch_bounds__). Saying so lets ptxas use up to 128
// registers a thread: given the thread count alone it held
// fused_backward_kernel at 64 and spilled (ptxas resource audit,
// docs/performance.md, session 18).
constexpr int kFusedBlocks = 1;

// Grid-stride: blocks_for caps the grid at 2^20 blocks (2^28 threads), below
// the 2^30 cells the driver admits.
__global__ void step_kernel(GrayScottCoefficients k, GrayScottFields f, GrayScottStep b) {
  FK_CUDA_LOOP(c, k.n0 * k.n1) step_cell(k, f, b, static_cast<int>(c));
}

__global__ void adjoint_kernel(GrayScottCoefficients k, GrayScottFields f, GrayScottAdjoint b) {
  FK_CUDA_LOOP(c, k.n0 * k.n1) adjoint_cell(k, f, b, static_cast<int>(c));
}

// One block: every thread tests a strided share, __syncthreads_or folds them.
__global__ void __launch_bounds__(kGuardThreads)
    range_guard_kernel(const double* __restrict__ x, int n, double lo, double hi, int* flag) {
  int bad = 0;
  for (int i = threadIdx.x; i < n; i += kGuardThreads) bad |= out_of_range(x[i], lo, hi) ? 1 : 0;
  bad = __syncthreads_or(bad);
  if (threadIdx.x == 0) *flag = bad ? 1 : 0;
}

// gray_scott_rollout.h's launcher inside one block: every thread takes its
// cells of the substep, then the block waits, so the next substep reads
// complete buffers (__syncthreads orders the block's global writes too).
// Every thread runs the same schedule, so all reach every barrier.
struct BlockLaunch {
  GrayScottCoefficients k;
  GrayScottFields f;
  __device__ void step(const GrayScottStep& b) {
    for (int c = threadIdx.x; c < k.n0 * k.n1; c += kFusedThreads) step_cell(k, f, b, c);
    __syncthreads();
  }
  __device__ void adjoint(const GrayScottAdjoint& b) {
    for (int c = threadIdx.x; c < k.n0 * k.n1; c += kFusedThreads) adjoint_cell(k, f, b, c);
    __syncthreads();
  }
};

__global__ void __launch_bounds__(kFusedThreads, kFusedBlocks)
    fused_forward_kernel(GrayScottCoefficients k, GrayScottFields f, GrayScottFusedRollout r,
                         const double* initial, double* state0, double* state1, double* checkpoints,
                         double* out, const int* poison) {
  BlockLaunch launch{k, f};
  double* const state[2] = {state0, state1};
  gray_scott_forward(r, initial, state, checkpoints, out, poison, launch);
}

__global__ void __launch_bounds__(kFusedThreads, kFusedBlocks)
    fused_backward_kernel(GrayScottCoefficients k, GrayScottFields f, GrayScottFusedRollout r,
                          const double* checkpoints, double* block, const double* g, double* cot0,
                          double* cot1, GrayScottAdjoint proto) {
  BlockLaunch launch{k, f};
  double* const cot[2] = {cot0, cot1};
  gray_scott_backward(r, checkpoints, block, g, cot, proto, launch);
}

}  // namespace

void launch_gray_scott_fused_forward(const GrayScottCoefficients& k, const GrayScottFields& f,
                                     const GrayScottFusedRollout& r, const double* initial,
                                     double* state0, double* state1, double* checkpoints,
                                     double* out, const int* poison, void* stream) {
  fused_forward_kernel<<<kFusedBlocks, kFusedThreads, 0, as_stream(stream)>>>(
      k, f, r, initial, state0, state1, checkpoints, out, poison);
  check_launch("nefi::cuda::gray_scott_fused_forward");
}

void launch_gray_scott_fused_backward(const GrayScottCoefficients& k, const GrayScottFields& f,
                                      const GrayScottFusedRollout& r, const double* checkpoints,
                                      double* block, const double* g, double* cot0, double* cot1,
                                      const GrayScottAdjoint& proto, void* stream) {
  fused_backward_kernel<<<kFusedBlocks, kFusedThreads, 0, as_stream(stream)>>>(
      k, f, r, checkpoints, block, g, cot0, cot1, proto);
  check_launch("nefi::cuda::gray_scott_fused_backward");
}

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
