// The wave operator's CUDA kernels (wave_kernels.h): one thread per (shot,
// cell), per shot, per (shot, receiver) or per (shot, cell a receiver
// touches); grid-stride loops, 64-bit indices. What each thread computes
// is wave_cells.h's, shared with the CPU test. Built with --fmad=false
// (CMakeLists.txt): the CPU loops it mirrors round every product and sum.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "nefi/cuda/resident_blocks_cache.h"
#include "nefi/cuda/wave_cells.h"
#include "nefi/cuda/wave_initial_cells.h"
#include "nefi/cuda/wave_kernels.h"
#include "nefi/cuda/wave_steps.h"

namespace nefi::cuda {
namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;

constexpr int kStatsThreads = 256;
// The first pass's grid: enough blocks to fill a GPU on a large 3-D velocity.
constexpr int64_t kMaxStatsBlocks = 1024;

// Tree-merges the block's folds in shared memory (fixed shape); thread 0
// ends with the block's (min, max, count) in acc.
__device__ void block_merge_velocity(double (*part)[kStatsThreads], double* acc) {
  for (int k = 0; k < 3; ++k) part[k][threadIdx.x] = acc[k];
  __syncthreads();
  for (int s = kStatsThreads / 2; s > 0; s /= 2) {
    if (static_cast<int>(threadIdx.x) < s) {
      const int o = threadIdx.x + s;
      const double other[3] = {part[0][o], part[1][o], part[2][o]};
      merge_velocity(acc, other);
      for (int k = 0; k < 3; ++k) part[k][threadIdx.x] = acc[k];
    }
    __syncthreads();
  }
}

// Pass 1: partials[3 b + k] := block b's fold of its grid-stride share of c.
template <typename T>
__global__ void __launch_bounds__(kStatsThreads)
    velocity_partials_kernel(const T* c, int64_t n, double* partials) {
  __shared__ double part[3][kStatsThreads];
  double acc[3] = {INFINITY, -INFINITY, 0.0};
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kStatsThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kStatsThreads + threadIdx.x; i < n;
       i += stride)
    fold_velocity(acc, static_cast<double>(c[i]));
  block_merge_velocity(part, acc);
  if (threadIdx.x == 0)
    for (int k = 0; k < 3; ++k) partials[3 * blockIdx.x + k] = acc[k];
}

// Pass 2 (one block): stats := the merge of the blocks' partials.
__global__ void __launch_bounds__(kStatsThreads)
    velocity_stats_kernel(const double* partials, int64_t blocks, double* stats) {
  __shared__ double part[3][kStatsThreads];
  double acc[3] = {INFINITY, -INFINITY, 0.0};
  for (int64_t b = threadIdx.x; b < blocks; b += kStatsThreads)
    merge_velocity(acc, partials + 3 * b);
  block_merge_velocity(part, acc);
  if (threadIdx.x == 0)
    for (int k = 0; k < 3; ++k) stats[k] = acc[k];
}

template <typename T>
__global__ void padded_kappa_kernel(WaveCells<T> g, const T* c, double* kappa) {
  FK_CUDA_LOOP(t, g.padded) {
    padded_kappa_cell(g, c, kappa, t);
  }
}

template <typename T>
__global__ void velocity_coefficients_kernel(WaveCells<T> g, const double* kappa,
                                             const double* k_per_kappa,
                                             AxisFields<const double> bpk, T* k,
                                             AxisFields<T> beta) {
  FK_CUDA_LOOP(t, g.padded) {
    velocity_coefficients_cell(g, kappa, k_per_kappa, bpk, k, beta, t);
  }
}

template <typename T>
__global__ void step_kernel(WaveCells<T> g, WaveCoefficientsView<T> co, int64_t shots, const T* up,
                            const T* u, T* un, AxisFields<T> psi) {
  FK_CUDA_LOOP(t, shots * g.padded) {
    step_cell(g, co, up, u, un, psi, (t / g.padded) * g.numel, padded_cell(g, t % g.padded).p);
  }
}

template <typename T>
__global__ void psi_kernel(WaveCells<T> g, WaveCoefficientsView<T> co, int64_t shots, const T* u,
                           const T* un, AxisFields<T> psi) {
  FK_CUDA_LOOP(t, shots * g.padded) {
    psi_cell(g, co, u, un, psi, (t / g.padded) * g.numel, padded_cell(g, t % g.padded).p);
  }
}

template <typename T>
__global__ void sources_kernel(WaveCells<T> g, StencilsView src, const T* ad, const double* wavelet,
                               int64_t n, T* un) {
  FK_CUDA_LOOP(s, src.count) {
    source_cell(g, src, ad, wavelet, n, un, s);
  }
}

template <typename T>
__global__ void sample_kernel(WaveCells<T> g, StencilsView rec, int64_t shots, const T* u,
                              T* traces, int64_t n_t, int64_t j) {
  FK_CUDA_LOOP(t, shots * rec.count) {
    traces[t * n_t + j] = sample_cell(g, rec, u, t / rec.count, t % rec.count);
  }
}

template <typename T>
__global__ void inject_traces_kernel(WaveCells<T> g, CellStencilsView rec, int64_t shots,
                                     const T* traces_bar, int64_t n_t, int64_t j, T* lam) {
  FK_CUDA_LOOP(t, shots * rec.count) {
    inject_traces_cell(g, rec, traces_bar, n_t, j, lam, t / rec.count, t % rec.count);
  }
}

template <typename T>
__global__ void psi_transpose_kernel(WaveCells<T> g, WaveCoefficientsView<T> co, int64_t shots,
                                     AxisFields<T> mu, T* lam, T* scratch) {
  FK_CUDA_LOOP(t, shots * g.padded) {
    psi_transpose_cell(g, co, mu, lam, scratch, (t / g.padded) * g.numel,
                       padded_cell(g, t % g.padded).p);
  }
}

template <typename T>
__global__ void adjoint_prepare_kernel(WaveCells<T> g, WaveCoefficientsView<T> co, int64_t shots,
                                       const T* lam, T* kl, AxisFields<T> mu, const T* u_n,
                                       const T* u_np1, AxisFields<T> fbar) {
  FK_CUDA_LOOP(t, shots * g.numel) {
    adjoint_prepare_cell(g, co, lam, kl, mu, u_n, u_np1, fbar, (t / g.numel) * g.numel,
                         t % g.numel);
  }
}

template <typename T>
__global__ void adjoint_kernel(WaveCells<T> g, WaveCoefficientsView<T> co, int64_t shots,
                               const T* lam_c, const T* kl, const T* lam_p, T* out_cur, T* out_prev,
                               T* kbar, const T* u_n) {
  FK_CUDA_LOOP(t, shots * g.padded) {
    adjoint_cell(g, co, lam_c, kl, lam_p, out_cur, out_prev, kbar, u_n, (t / g.padded) * g.numel,
                 padded_cell(g, t % g.padded).p);
  }
}

template <typename T>
__global__ void kappa_gradient_kernel(WaveCells<T> g, const double* k_per_kappa,
                                      AxisFields<const double> bpk, int64_t shots, const T* kbar,
                                      AxisFields<T> fbar, double* total) {
  FK_CUDA_LOOP(t, g.padded) {
    const int64_t p = padded_cell(g, t).p;
    total[p] = kappa_gradient_cell(g, k_per_kappa, bpk, shots, kbar, fbar, p);
  }
}

template <typename T>
__global__ void velocity_gradient_kernel(WaveCells<T> g, const T* c, const double* kappa_bar,
                                         T* out) {
  FK_CUDA_LOOP(i, g.domain) {
    out[i] = velocity_gradient_cell(g, c, kappa_bar, i);
  }
}

template <typename T>
__global__ void embed_kernel(WaveCells<T> g, const T* p0, T* x) {
  FK_CUDA_LOOP(q, g.domain) {
    x[domain_cell(g, q)] = p0[q];
  }
}

template <typename T>
__global__ void scaled_laplacian_kernel(WaveCells<T> g, const T* k, const T* u, T* out) {
  FK_CUDA_LOOP(t, g.padded) {
    scaled_laplacian_cell(g, k, u, out, t);
  }
}

template <typename T>
__global__ void scaled_product_kernel(const T* k, const T* u, T* ku, int64_t n) {
  FK_CUDA_LOOP(p, n) {
    scaled_product_cell(k, u, ku, p);
  }
}

template <typename T>
__global__ void initial_adjoint_end_kernel(WaveCells<T> g, const T* u, const T* ku, const T* lam0,
                                           T* out) {
  FK_CUDA_LOOP(q, g.domain) {
    out[q] = initial_adjoint_cell(g, u, ku, lam0, q);
  }
}

template <typename T>
__global__ void sensor_samples_kernel(const T* fine, int64_t n_rec, int64_t n_fine, int64_t every,
                                      const double* w, int64_t half, int64_t n_t, T* out) {
  FK_CUDA_LOOP(t, n_rec * n_t) {
    out[t] = static_cast<T>(sensor_sample_cell(fine, n_fine, every, w, half, t / n_t, t % n_t));
  }
}

template <typename T>
__global__ void sensor_adjoint_kernel(const double* g, int64_t n_rec, int64_t n_t, int64_t n_fine,
                                      int64_t every, const double* w, int64_t half, T* out) {
  FK_CUDA_LOOP(t, n_rec * n_fine) {
    out[t] =
        static_cast<T>(sensor_adjoint_cell(g, n_t, n_fine, every, w, half, t / n_fine, t % n_fine));
  }
}

// wave_steps.h's launcher inside one cooperative launch: each call is a
// grid-stride pass of its cells (the same per-cell functions as the kernels
// above), then a grid-wide barrier where a later call reads what it wrote.
// Samples and checkpoint copies need none: nothing in a run reads the traces
// or the slots, and the fields they read are rewritten only after later
// barriers (u^{n+1} overwrites u^{n−2}). Every thread runs the same
// schedule, so all reach every barrier.
template <typename T>
struct GridSteps {
  const WaveSolve<T>& s;
  cooperative_groups::grid_group grid;
  int64_t first, stride;  // this thread's index, the grid's thread count

  __device__ void sample(const T* u, T* traces, int64_t j) {
    const int64_t n = s.shots * s.receivers.count;
    for (int64_t t = first; t < n; t += stride)
      traces[t * s.n_t + j] =
          sample_cell(s.cells, s.receivers, u, t / s.receivers.count, t % s.receivers.count);
  }
  __device__ void checkpoint(const T* up, const T* u, const AxisFields<T>& psi, T* slot) {
    const int64_t B = s.shots * s.cells.numel;
    const int np = s.cells.pml ? s.cells.nd : 0;
    for (int64_t t = first; t < B; t += stride) {
      slot[t] = up[t];
      slot[B + t] = u[t];
      for (int a = 0; a < kWaveAxes && a < np; ++a) slot[(2 + a) * B + t] = psi.a[a][t];
    }
  }
  __device__ void restore(const T* slot, T* up, T* u, const AxisFields<T>& psi) {
    const int64_t B = s.shots * s.cells.numel;
    const int np = s.cells.pml ? s.cells.nd : 0;
    for (int64_t t = first; t < B; t += stride) {
      up[t] = slot[t];
      u[t] = slot[B + t];
      for (int a = 0; a < kWaveAxes && a < np; ++a) psi.a[a][t] = slot[(2 + a) * B + t];
    }
    grid.sync();
  }
  __device__ void step(int64_t n, const T* up, const T* u, T* un, const AxisFields<T>& psi) {
    const WaveCells<T>& g = s.cells;
    const int64_t cells = s.shots * g.padded;
    for (int64_t t = first; t < cells; t += stride)
      step_cell(g, s.co, up, u, un, psi, (t / g.padded) * g.numel, padded_cell(g, t % g.padded).p);
    grid.sync();
    if (g.pml) {
      for (int64_t t = first; t < cells; t += stride)
        psi_cell(g, s.co, u, un, psi, (t / g.padded) * g.numel, padded_cell(g, t % g.padded).p);
      grid.sync();
    }
    if (s.wavelet) {
      for (int64_t t = first; t < s.sources.count; t += stride)
        source_cell(g, s.sources, s.co.ad, s.wavelet, n, un, t);
      grid.sync();
    }
  }
  __device__ void inject_traces(const T* traces_bar, int64_t j, T* lam) {
    const int64_t n = s.shots * s.injection.count;
    for (int64_t t = first; t < n; t += stride)
      inject_traces_cell(s.cells, s.injection, traces_bar, s.n_t, j, lam, t / s.injection.count,
                         t % s.injection.count);
    grid.sync();
  }
  __device__ void adjoint(T* lam_c, const T* lam_p, T* out_cur, T* out_prev, T* kl,
                          const AxisFields<T>& mu, const T* u_n, const T* u_np1, T* kbar,
                          const AxisFields<T>& fbar) {
    const WaveCells<T>& g = s.cells;
    const int64_t cells = s.shots * g.padded, stored = s.shots * g.numel;
    if (g.pml) {
      for (int64_t t = first; t < cells; t += stride)
        psi_transpose_cell(g, s.co, mu, lam_c, out_prev, (t / g.padded) * g.numel,
                           padded_cell(g, t % g.padded).p);
      grid.sync();
    }
    for (int64_t t = first; t < stored; t += stride)
      adjoint_prepare_cell(g, s.co, lam_c, kl, mu, u_n, u_np1, fbar, (t / g.numel) * g.numel,
                           t % g.numel);
    grid.sync();
    for (int64_t t = first; t < cells; t += stride)
      adjoint_cell(g, s.co, lam_c, kl, lam_p, out_cur, out_prev, kbar, u_n,
                   (t / g.padded) * g.numel, padded_cell(g, t % g.padded).p);
    grid.sync();
  }
};

template <typename T>
__device__ GridSteps<T> grid_steps(const WaveSolve<T>& s) {
  return {s, cooperative_groups::this_grid(),
          blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x,
          static_cast<int64_t>(gridDim.x) * blockDim.x};
}

// __launch_bounds__: at least one block fits on every SM, so the
// occupancy-capped cooperative grid is never empty.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    forward_run_kernel(const __grid_constant__ WaveSolve<T> s,
                       const __grid_constant__ WaveForwardRun<T> r) {
  GridSteps<T> launch = grid_steps(s);
  wave_forward_steps(r, s.substeps, launch);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    adjoint_run_kernel(const __grid_constant__ WaveSolve<T> s,
                       const __grid_constant__ WaveAdjointRun<T> r) {
  GridSteps<T> launch = grid_steps(s);
  wave_adjoint_steps(r, s.substeps, launch);
}

// One per process, keyed by kernel (resident_blocks_cache.h).
ResidentBlocksCache& resident_blocks() {
  static ResidentBlocksCache cache;
  return cache;
}

// Cooperative launch of kernel over `work` thread indices: as many blocks
// as cover them, at most the device's resident blocks of it. heat.cu's
// launch_fused_sweeps does the same; it is not shared through a header
// because the emulated device redirects a .cu file's runtime calls in that
// file's own text (tests/cuda_emu/rewrite_cuda_source.pl).
void launch_cooperative(const void* kernel, int64_t work, void** args, void* stream,
                        const char* where) {
  int device = 0;
  fk::cuda::detail::check_cuda(cudaGetDevice(&device), where);
  const int resident = resident_blocks().get(device, kernel, kThreads, [&] {
    int sms = 0, per_sm = 0;
    fk::cuda::detail::check_cuda(
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), where);
    fk::cuda::detail::check_cuda(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0), where);
    return per_sm * sms;
  });
  const unsigned grid = static_cast<unsigned>(
      std::min<int64_t>(std::max<int64_t>(1, (work + kThreads - 1) / kThreads),
                        std::max<int64_t>(1, int64_t{resident})));
  // A refused launch is also the thread's last error: check_cuda clears it.
  fk::cuda::detail::check_cuda(
      cudaLaunchCooperativeKernel(kernel, dim3(grid), dim3(kThreads), args, 0, as_stream(stream)),
      where);
}

}  // namespace

template <typename T>
void launch_embed(const WaveCells<T>& g, const T* p0, T* x, void* stream) {
  embed_kernel<T><<<blocks_for(g.domain), kThreads, 0, as_stream(stream)>>>(g, p0, x);
  check_launch("nefi::cuda::launch_embed");
}

template <typename T>
void launch_scaled_laplacian(const WaveCells<T>& g, const T* k, const T* u, T* out, void* stream) {
  scaled_laplacian_kernel<T>
      <<<blocks_for(g.padded), kThreads, 0, as_stream(stream)>>>(g, k, u, out);
  check_launch("nefi::cuda::launch_scaled_laplacian");
}

template <typename T>
void launch_scaled_product(const T* k, const T* u, T* ku, int64_t n, void* stream) {
  scaled_product_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(k, u, ku, n);
  check_launch("nefi::cuda::launch_scaled_product");
}

template <typename T>
void launch_initial_adjoint_end(const WaveCells<T>& g, const T* u, const T* ku, const T* lam0,
                                T* out, void* stream) {
  initial_adjoint_end_kernel<T>
      <<<blocks_for(g.domain), kThreads, 0, as_stream(stream)>>>(g, u, ku, lam0, out);
  check_launch("nefi::cuda::launch_initial_adjoint_end");
}

template <typename T>
void launch_sensor_samples(const T* fine, int64_t n_rec, int64_t n_fine, int64_t every,
                           const double* w, int64_t half, int64_t n_t, T* out, void* stream) {
  sensor_samples_kernel<T><<<blocks_for(n_rec * n_t), kThreads, 0, as_stream(stream)>>>(
      fine, n_rec, n_fine, every, w, half, n_t, out);
  check_launch("nefi::cuda::launch_sensor_samples");
}

template <typename T>
void launch_sensor_adjoint(const double* g, int64_t n_rec, int64_t n_t, int64_t n_fine,
                           int64_t every, const double* w, int64_t half, T* out, void* stream) {
  sensor_adjoint_kernel<T><<<blocks_for(n_rec * n_fine), kThreads, 0, as_stream(stream)>>>(
      g, n_rec, n_t, n_fine, every, w, half, out);
  check_launch("nefi::cuda::launch_sensor_adjoint");
}

int64_t velocity_stats_blocks(int64_t n) {
  const int64_t b = (n + kStatsThreads - 1) / kStatsThreads;
  return b < 1 ? 1 : b < kMaxStatsBlocks ? b : kMaxStatsBlocks;
}

template <typename T>
void launch_velocity_stats(const T* c, int64_t n, double* partials, double* stats, void* stream) {
  const int64_t blocks = velocity_stats_blocks(n);
  velocity_partials_kernel<T>
      <<<static_cast<unsigned>(blocks), kStatsThreads, 0, as_stream(stream)>>>(c, n, partials);
  check_launch("nefi::cuda::launch_velocity_stats");
  velocity_stats_kernel<<<1, kStatsThreads, 0, as_stream(stream)>>>(partials, blocks, stats);
  check_launch("nefi::cuda::launch_velocity_stats");
}

template <typename T>
void launch_padded_kappa(const WaveCells<T>& g, const T* c, double* kappa, void* stream) {
  padded_kappa_kernel<T><<<blocks_for(g.padded), kThreads, 0, as_stream(stream)>>>(g, c, kappa);
  check_launch("nefi::cuda::launch_padded_kappa");
}

template <typename T>
void launch_velocity_coefficients(const WaveCells<T>& g, const double* kappa,
                                  const double* k_per_kappa, const AxisFields<const double>& bpk,
                                  T* k, const AxisFields<T>& beta, void* stream) {
  velocity_coefficients_kernel<T><<<blocks_for(g.padded), kThreads, 0, as_stream(stream)>>>(
      g, kappa, k_per_kappa, bpk, k, beta);
  check_launch("nefi::cuda::launch_velocity_coefficients");
}

template <typename T>
void launch_leapfrog_step(const WaveCells<T>& g, const WaveCoefficientsView<T>& co, int64_t shots,
                          const T* up, const T* u, T* un, const AxisFields<T>& psi, void* stream) {
  const unsigned b = blocks_for(shots * g.padded);
  step_kernel<T><<<b, kThreads, 0, as_stream(stream)>>>(g, co, shots, up, u, un, psi);
  check_launch("nefi::cuda::launch_leapfrog_step");
  if (!g.pml) return;
  psi_kernel<T><<<b, kThreads, 0, as_stream(stream)>>>(g, co, shots, u, un, psi);
  check_launch("nefi::cuda::launch_leapfrog_step");
}

template <typename T>
void launch_wave_forward_run(const WaveSolve<T>& s, const WaveForwardRun<T>& r, void* stream) {
  WaveSolve<T> sv = s;
  WaveForwardRun<T> rv = r;
  void* args[] = {&sv, &rv};
  const int64_t work =
      std::max({s.shots * s.cells.numel, s.shots * s.receivers.count, s.sources.count});
  launch_cooperative(reinterpret_cast<const void*>(forward_run_kernel<T>), work, args, stream,
                     "nefi::cuda::launch_wave_forward_run");
}

template <typename T>
void launch_wave_adjoint_run(const WaveSolve<T>& s, const WaveAdjointRun<T>& r, void* stream) {
  WaveSolve<T> sv = s;
  WaveAdjointRun<T> rv = r;
  void* args[] = {&sv, &rv};
  const int64_t work = std::max(s.shots * s.cells.numel, s.shots * s.injection.count);
  launch_cooperative(reinterpret_cast<const void*>(adjoint_run_kernel<T>), work, args, stream,
                     "nefi::cuda::launch_wave_adjoint_run");
}

template <typename T>
void launch_inject_sources(const WaveCells<T>& g, const StencilsView& src, const T* ad,
                           const double* wavelet, int64_t n, T* un, void* stream) {
  sources_kernel<T>
      <<<blocks_for(src.count), kThreads, 0, as_stream(stream)>>>(g, src, ad, wavelet, n, un);
  check_launch("nefi::cuda::launch_inject_sources");
}

template <typename T>
void launch_sample(const WaveCells<T>& g, const StencilsView& rec, int64_t shots, const T* u,
                   T* traces, int64_t n_t, int64_t j, void* stream) {
  sample_kernel<T><<<blocks_for(shots * rec.count), kThreads, 0, as_stream(stream)>>>(
      g, rec, shots, u, traces, n_t, j);
  check_launch("nefi::cuda::launch_sample");
}

template <typename T>
void launch_inject_traces(const WaveCells<T>& g, const CellStencilsView& rec, int64_t shots,
                          const T* traces_bar, int64_t n_t, int64_t j, T* lam, void* stream) {
  inject_traces_kernel<T><<<blocks_for(shots * rec.count), kThreads, 0, as_stream(stream)>>>(
      g, rec, shots, traces_bar, n_t, j, lam);
  check_launch("nefi::cuda::launch_inject_traces");
}

template <typename T>
void launch_adjoint_step(const WaveCells<T>& g, const WaveCoefficientsView<T>& co, int64_t shots,
                         T* lam_c, const T* lam_p, T* out_cur, T* out_prev, T* kl,
                         const AxisFields<T>& mu, const T* u_n, const T* u_np1, T* kbar,
                         const AxisFields<T>& fbar, void* stream) {
  const char* where = "nefi::cuda::launch_adjoint_step";
  const unsigned b = blocks_for(shots * g.padded);
  if (g.pml) {
    psi_transpose_kernel<T>
        <<<b, kThreads, 0, as_stream(stream)>>>(g, co, shots, mu, lam_c, out_prev);
    check_launch(where);
  }
  adjoint_prepare_kernel<T><<<blocks_for(shots * g.numel), kThreads, 0, as_stream(stream)>>>(
      g, co, shots, lam_c, kl, mu, u_n, u_np1, fbar);
  check_launch(where);
  adjoint_kernel<T><<<b, kThreads, 0, as_stream(stream)>>>(g, co, shots, lam_c, kl, lam_p, out_cur,
                                                           out_prev, kbar, u_n);
  check_launch(where);
}

template <typename T>
void launch_kappa_gradient(const WaveCells<T>& g, const double* k_per_kappa,
                           const AxisFields<const double>& bpk, int64_t shots, const T* kbar,
                           const AxisFields<T>& fbar, double* total, void* stream) {
  kappa_gradient_kernel<T><<<blocks_for(g.padded), kThreads, 0, as_stream(stream)>>>(
      g, k_per_kappa, bpk, shots, kbar, fbar, total);
  check_launch("nefi::cuda::launch_kappa_gradient");
}

template <typename T>
void launch_velocity_gradient(const WaveCells<T>& g, const T* c, const double* kappa_bar, T* out,
                              void* stream) {
  velocity_gradient_kernel<T>
      <<<blocks_for(g.domain), kThreads, 0, as_stream(stream)>>>(g, c, kappa_bar, out);
  check_launch("nefi::cuda::launch_velocity_gradient");
}

template <typename T>
void launch_copy(const T* src, T* dst, int64_t n, void* stream) {
  fk::cuda::detail::check_cuda(cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * sizeof(T),
                                               cudaMemcpyDeviceToDevice, as_stream(stream)),
                               "nefi::cuda::launch_copy");
}

#define NEFI_WAVE_INSTANTIATE(T)                                                                   \
  template void launch_velocity_stats<T>(const T*, int64_t, double*, double*, void*);              \
  template void launch_padded_kappa<T>(const WaveCells<T>&, const T*, double*, void*);             \
  template void launch_velocity_coefficients<T>(const WaveCells<T>&, const double*, const double*, \
                                                const AxisFields<const double>&, T*,               \
                                                const AxisFields<T>&, void*);                      \
  template void launch_leapfrog_step<T>(const WaveCells<T>&, const WaveCoefficientsView<T>&,       \
                                        int64_t, const T*, const T*, T*, const AxisFields<T>&,     \
                                        void*);                                                    \
  template void launch_inject_sources<T>(const WaveCells<T>&, const StencilsView&, const T*,       \
                                         const double*, int64_t, T*, void*);                       \
  template void launch_sample<T>(const WaveCells<T>&, const StencilsView&, int64_t, const T*, T*,  \
                                 int64_t, int64_t, void*);                                         \
  template void launch_inject_traces<T>(const WaveCells<T>&, const CellStencilsView&, int64_t,     \
                                        const T*, int64_t, int64_t, T*, void*);                    \
  template void launch_adjoint_step<T>(const WaveCells<T>&, const WaveCoefficientsView<T>&,        \
                                       int64_t, T*, const T*, T*, T*, T*, const AxisFields<T>&,    \
                                       const T*, const T*, T*, const AxisFields<T>&, void*);       \
  template void launch_kappa_gradient<T>(const WaveCells<T>&, const double*,                       \
                                         const AxisFields<const double>&, int64_t, const T*,       \
                                         const AxisFields<T>&, double*, void*);                    \
  template void launch_velocity_gradient<T>(const WaveCells<T>&, const T*, const double*, T*,      \
                                            void*);                                                \
  template void launch_copy<T>(const T*, T*, int64_t, void*);                                      \
  template void launch_wave_forward_run<T>(const WaveSolve<T>&, const WaveForwardRun<T>&, void*);  \
  template void launch_wave_adjoint_run<T>(const WaveSolve<T>&, const WaveAdjointRun<T>&, void*);  \
  template void launch_embed<T>(const WaveCells<T>&, const T*, T*, void*);                         \
  template void launch_scaled_laplacian<T>(const WaveCells<T>&, const T*, const T*, T*, void*);    \
  template void launch_scaled_product<T>(const T*, const T*, T*, int64_t, void*);                  \
  template void launch_initial_adjoint_end<T>(const WaveCells<T>&, const T*, const T*, const T*,   \
                                              T*, void*);                                          \
  template void launch_sensor_samples<T>(const T*, int64_t, int64_t, int64_t, const double*,       \
                                         int64_t, int64_t, T*, void*);                             \
  template void launch_sensor_adjoint<T>(const double*, int64_t, int64_t, int64_t, int64_t,        \
                                         const double*, int64_t, T*, void*);
NEFI_WAVE_INSTANTIATE(float)
NEFI_WAVE_INSTANTIATE(double)
#undef NEFI_WAVE_INSTANTIATE

}  // namespace nefi::cuda
