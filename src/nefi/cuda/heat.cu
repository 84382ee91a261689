// The heat operator's CUDA kernels (kernels.h): one thread per cell, 32-bit
// indices, neighbours found by wrapping x and y (no ghost cells: the padded
// layout of the CPU sweep exists for its vector loop, not for the device).
// What each thread computes is heat_cells.h's, shared with the CPU tests.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "fk/cuda/device_guard.h"
#include "nefi/cuda/heat_cells.h"
#include "nefi/cuda/kernels.h"
#include "nefi/cuda/resident_blocks_cache.h"

namespace nefi::cuda {
namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::check_launch;

constexpr int kThreads = 256;
constexpr int kFusedThreads = 512;  // launch_fused_sweeps
constexpr int kBoundThreads = 512;  // launch_chebyshev_weights: one block

// At least one: CUDA refuses a grid of 0 blocks, and every per-cell kernel
// checks its index against the cell count, so an empty grid launches a no-op.
unsigned blocks(int64_t n) {
  return static_cast<unsigned>(std::max<int64_t>(1, (n + kThreads - 1) / kThreads));
}

template <typename T>
__global__ void system_kernel(const T* __restrict__ alpha, T* __restrict__ faces,
                              T* __restrict__ root_d, T* __restrict__ row_sums,
                              SystemConstants<T> k) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < k.nx * k.ny * k.nz) system_cell(alpha, faces, root_d, row_sums, i, k);
}

template <typename T>
__global__ void symmetric_faces_kernel(T* __restrict__ faces, const T* __restrict__ root_d,
                                       SystemConstants<T> k) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < k.nx * k.ny * k.nz) symmetric_face_cell(faces, root_d, i, k);
}

// One block: each thread folds a strided share of the row sums, a tree folds
// the block's (larger() is exact and order-free), thread 0 writes the weights.
template <typename T>
__global__ void __launch_bounds__(kBoundThreads)
    chebyshev_weights_kernel(const T* __restrict__ row_sums, int n, T* __restrict__ omega, int k) {
  __shared__ T part[kBoundThreads];
  T best = 0;
  // 64-bit i: n may be 2^31 − 2 (Grid::indexable), and a 32-bit i + 512
  // past 2^31 − 1 would wrap to a negative index instead of ending the loop.
  for (int64_t i = threadIdx.x; i < n; i += kBoundThreads) best = larger(best, row_sums[i]);
  part[threadIdx.x] = best;
  __syncthreads();
  for (int s = kBoundThreads / 2; s > 0; s /= 2) {
    if (static_cast<int>(threadIdx.x) < s)
      part[threadIdx.x] = larger(part[threadIdx.x], part[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) chebyshev_weights_from(part[0], omega, k);
}

template <typename T, bool kLerp>
__global__ void face_sweep_kernel(const T* __restrict__ in, T* __restrict__ out,
                                  const T* __restrict__ c, const T* __restrict__ fx,
                                  const T* __restrict__ fy, const T* __restrict__ fz, int nx,
                                  int ny, int nz, const T* __restrict__ omega, int j) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < nx * ny * nz)
    sweep_cell(in, out, c, fx, fy, fz, i, nx, ny, nz, kLerp, kLerp ? omega[j] : T(1));
}

// __launch_bounds__: at most 128 registers a thread, so at least one 512-thread
// block fits on every SM and the occupancy-capped cooperative grid is never empty.
template <typename T>
__global__ void __launch_bounds__(kFusedThreads)
    fused_sweeps_kernel(T* b0, T* b1, int cur, const T* __restrict__ c, const T* __restrict__ fx,
                        const T* __restrict__ fy, const T* __restrict__ fz, int nx, int ny, int nz,
                        const T* __restrict__ omega, int k, int lerp_from) {
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  const int n = nx * ny * nz, stride = gridDim.x * blockDim.x;
  for (int j = 0; j < k; ++j) {
    const bool from_b1 = sweep_input(cur, j) == 1;
    const T* in = from_b1 ? b1 : b0;
    T* out = from_b1 ? b0 : b1;
    const bool lerp = j >= lerp_from;
    const T w = lerp ? omega[j] : T(1);
    // 64-bit i: the last i + stride may pass 2^31 − 1 when n is near it.
    for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
      sweep_cell(in, out, c, fx, fy, fz, static_cast<int>(i), nx, ny, nz, lerp, w);
    if (j + 1 < k) grid.sync();
  }
}

template <typename T>
__global__ void scale_kernel(const T* __restrict__ a, const T* __restrict__ r, T* __restrict__ out,
                             int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = r[i] * a[i];
}

template <typename T>
__global__ void scale_twice_kernel(const T* __restrict__ a, const T* __restrict__ r,
                                   T* __restrict__ out, T* __restrict__ c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const T o = r[i] * a[i];
  out[i] = o;
  c[i] = r[i] * o;
}

template <typename T>
__global__ void add_surface_kernel(const T* __restrict__ s, const T* __restrict__ r,
                                   T* __restrict__ c, int columns, int nz) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k < columns) c[k * nz] += r[k * nz] * s[k];
}

template <typename T>
__global__ void face_products_kernel(T* __restrict__ sums, const T* __restrict__ m,
                                     const T* __restrict__ v, int nx, int ny, int nz,
                                     bool closed_sides) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < nx * ny * nz) face_products_cell(sums, m, v, i, nx, ny, nz, closed_sides);
}

template <typename T>
__global__ void alpha_gradient_kernel(const T* __restrict__ sums, const T* __restrict__ a,
                                      T* __restrict__ out, SystemConstants<T> k) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < k.nx * k.ny * k.nz) out[i] = alpha_gradient_cell(sums, a, i, k);
}

}  // namespace

template <typename T>
void launch_heat_system(const T* alpha, T* faces, T* root_d, T* row_sums, Grid g,
                        const HeatCoefficients& k, void* stream) {
  const SystemConstants<T> c = system_constants<T>(g, k);
  system_kernel<T>
      <<<blocks(g.numel()), kThreads, 0, as_stream(stream)>>>(alpha, faces, root_d, row_sums, c);
  check_launch("nefi::cuda::launch_heat_system");
  symmetric_faces_kernel<T>
      <<<blocks(g.numel()), kThreads, 0, as_stream(stream)>>>(faces, root_d, c);
  check_launch("nefi::cuda::launch_heat_system");
}

template <typename T>
void launch_chebyshev_weights(const T* row_sums, int64_t n, T* omega, int k, void* stream) {
  chebyshev_weights_kernel<T>
      <<<1, kBoundThreads, 0, as_stream(stream)>>>(row_sums, static_cast<int>(n), omega, k);
  check_launch("nefi::cuda::launch_chebyshev_weights");
}

template <typename T>
void launch_face_sweep(const T* in, T* out, const T* c, const T* faces, Grid g, const T* omega,
                       int j, bool lerp, void* stream) {
  const int64_t n = g.numel();
  const int nx = static_cast<int>(g.nx), ny = static_cast<int>(g.ny), nz = static_cast<int>(g.nz);
  if (lerp)
    face_sweep_kernel<T, true><<<blocks(n), kThreads, 0, as_stream(stream)>>>(
        in, out, c, faces, faces + n, faces + 2 * n, nx, ny, nz, omega, j);
  else
    face_sweep_kernel<T, false><<<blocks(n), kThreads, 0, as_stream(stream)>>>(
        in, out, c, faces, faces + n, faces + 2 * n, nx, ny, nz, omega, j);
  check_launch("nefi::cuda::launch_face_sweep");
}

namespace {
// One per process, keyed by kernel: launch_fused_sweeps<float> and <double> share it.
ResidentBlocksCache& resident_blocks() {
  static ResidentBlocksCache cache;
  return cache;
}
}  // namespace

bool cooperative_launch_supported(int device) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrCooperativeLaunch, device) == cudaSuccess)
    return v != 0;
  // A failed query is "unsupported"; clear the error it recorded, or the next
  // check_launch (cudaGetLastError) would blame its own launch for it.
  cudaGetLastError();
  return false;
}

template <typename T>
void launch_fused_sweeps(T* buf0, T* buf1, int cur, const T* c, const T* faces, Grid g,
                         const T* omega, int k, int lerp_from, void* stream) {
  const char* where = "nefi::cuda::launch_fused_sweeps";
  // Every block must be resident at once: at most the occupancy limit. Wide
  // blocks keep the grid small (128 for the paper's 65,536 cells, one per SM
  // of an H100/H200): a grid barrier's cost grows with the blocks it waits on.
  // The limit is asked once per device and dtype (resident_blocks_cache.h).
  int device = 0;
  fk::cuda::detail::check_cuda(cudaGetDevice(&device), where);
  const void* kernel = reinterpret_cast<const void*>(fused_sweeps_kernel<T>);
  const int resident = resident_blocks().get(device, kernel, kFusedThreads, [&] {
    int sms = 0, per_sm = 0;
    fk::cuda::detail::check_cuda(
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), where);
    fk::cuda::detail::check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                                     &per_sm, fused_sweeps_kernel<T>, kFusedThreads, 0),
                                 where);
    return per_sm * sms;
  });
  const int64_t n = g.numel();
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(
      (n + kFusedThreads - 1) / kFusedThreads, std::max<int64_t>(1, int64_t{resident})));
  int nx = static_cast<int>(g.nx), ny = static_cast<int>(g.ny), nz = static_cast<int>(g.nz);
  const T* fx = faces;
  const T* fy = faces + n;
  const T* fz = faces + 2 * n;
  void* args[] = {&buf0, &buf1, &cur, &c, &fx, &fy, &fz, &nx, &ny, &nz, &omega, &k, &lerp_from};
  const cudaError_t e = cudaLaunchCooperativeKernel(kernel, dim3(grid), dim3(kFusedThreads), args,
                                                    0, as_stream(stream));
  // A refused launch (e.g. cudaErrorCooperativeLaunchTooLarge) is also the
  // thread's last error: check_cuda clears it, so it is reported once.
  fk::cuda::detail::check_cuda(e, where);
}

template <typename T>
void launch_scale(const T* a, const T* r, T* out, int64_t n, void* stream) {
  scale_kernel<T><<<blocks(n), kThreads, 0, as_stream(stream)>>>(a, r, out, static_cast<int>(n));
  check_launch("nefi::cuda::launch_scale");
}

template <typename T>
void launch_scale_twice(const T* a, const T* r, T* out, T* c, int64_t n, void* stream) {
  scale_twice_kernel<T>
      <<<blocks(n), kThreads, 0, as_stream(stream)>>>(a, r, out, c, static_cast<int>(n));
  check_launch("nefi::cuda::launch_scale_twice");
}

template <typename T>
void launch_add_surface(const T* s, const T* r, T* c, Grid g, void* stream) {
  const int64_t columns = g.nx * g.ny;
  add_surface_kernel<T><<<blocks(columns), kThreads, 0, as_stream(stream)>>>(
      s, r, c, static_cast<int>(columns), static_cast<int>(g.nz));
  check_launch("nefi::cuda::launch_add_surface");
}

template <typename T>
void launch_face_products(T* sums, const T* mu, const T* t, Grid g, bool closed_sides,
                          void* stream) {
  face_products_kernel<T><<<blocks(g.numel()), kThreads, 0, as_stream(stream)>>>(
      sums, mu, t, static_cast<int>(g.nx), static_cast<int>(g.ny), static_cast<int>(g.nz),
      closed_sides);
  check_launch("nefi::cuda::launch_face_products");
}

template <typename T>
void launch_alpha_gradient(const T* sums, const T* alpha, T* out, Grid g, const HeatCoefficients& k,
                           void* stream) {
  alpha_gradient_kernel<T><<<blocks(g.numel()), kThreads, 0, as_stream(stream)>>>(
      sums, alpha, out, system_constants<T>(g, k));
  check_launch("nefi::cuda::launch_alpha_gradient");
}

#define NEFI_CUDA_INSTANTIATE(T)                                                                   \
  template void launch_heat_system<T>(const T*, T*, T*, T*, Grid, const HeatCoefficients&, void*); \
  template void launch_chebyshev_weights<T>(const T*, int64_t, T*, int, void*);                    \
  template void launch_face_sweep<T>(const T*, T*, const T*, const T*, Grid, const T*, int, bool,  \
                                     void*);                                                       \
  template void launch_fused_sweeps<T>(T*, T*, int, const T*, const T*, Grid, const T*, int, int,  \
                                       void*);                                                     \
  template void launch_scale<T>(const T*, const T*, T*, int64_t, void*);                           \
  template void launch_scale_twice<T>(const T*, const T*, T*, T*, int64_t, void*);                 \
  template void launch_add_surface<T>(const T*, const T*, T*, Grid, void*);                        \
  template void launch_face_products<T>(T*, const T*, const T*, Grid, bool, void*);                \
  template void launch_alpha_gradient<T>(const T*, const T*, T*, Grid, const HeatCoefficients&,    \
                                         void*);
NEFI_CUDA_INSTANTIATE(float)
NEFI_CUDA_INSTANTIATE(double)
#undef NEFI_CUDA_INSTANTIATE

}  // namespace nefi::cuda
