// The heat operator's CUDA kernels (kernels.h): one thread per cell, 32-bit
// indices, neighbours found by wrapping x and y (no ghost cells: the padded
// layout of the CPU sweep exists for its vector loop, not for the device).
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "fk/cuda/common.cuh"
#include "fk/cuda/device_guard.h"
#include "nefi/cuda/kernels.h"

namespace nefi::cuda {
namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::check_launch;

constexpr int kThreads = 256;
constexpr int kFusedThreads = 512;  // launch_fused_sweeps

unsigned blocks(int64_t n) {
  return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

// The cell i = (x · ny + y) · nz + z and its wrapped lateral neighbours.
struct Cell {
  int i, z, y, x;
  int xm, xp, ym, yp;  // indices of the cells at x ∓ 1 and y ∓ 1
};

__device__ inline Cell cell_at(int i, int nx, int ny, int nz) {
  Cell c;
  c.i = i;
  c.z = i % nz;
  const int r = i / nz;
  c.y = r % ny;
  c.x = r / ny;
  const int sx = ny * nz;
  c.xm = c.x > 0 ? i - sx : i + (nx - 1) * sx;
  c.xp = c.x + 1 < nx ? i + sx : i - (nx - 1) * sx;
  c.ym = c.y > 0 ? i - nz : i + (ny - 1) * nz;
  c.yp = c.y + 1 < ny ? i + nz : i - (ny - 1) * nz;
  return c;
}

// One cell of a sweep (launch_face_sweep's contract), with the FMAs GCC makes
// of the CPU sweep's AVX2+FMA build (c + w·y and s + w·y, out + ω (s − out)):
// written out, since the rest of this file is built without contraction. The
// CPU adds
// Ŵz⁻ y[z−1] at z = 0 and Ŵz⁺ y[z+1] at z = nz − 1 with a zero face weight
// (s + 0 = s): skipping them gives the same sum. `in` and `out` are plain
// pointers: in the fused kernel they swap roles between barriers, so they
// must not go through the read-only cache.
template <typename T>
__device__ inline void sweep_cell(const T* in, T* out, const T* __restrict__ c,
                                  const T* __restrict__ fx, const T* __restrict__ fy,
                                  const T* __restrict__ fz, int i, int nx, int ny, int nz,
                                  bool lerp, T omega) {
  const Cell q = cell_at(i, nx, ny, nz);
  T s = fma(fx[q.xm], in[q.xm], c[i]);
  s = fma(fx[i], in[q.xp], s);
  s = fma(fy[q.ym], in[q.ym], s);
  s = fma(fy[i], in[q.yp], s);
  if (q.z > 0) s = fma(fz[i - 1], in[i - 1], s);
  if (q.z + 1 < nz) s = fma(fz[i], in[i + 1], s);
  if (lerp)
    out[i] = fma(omega, s - out[i], out[i]);
  else
    out[i] = s;
}

template <typename T, bool kLerp>
__global__ void face_sweep_kernel(const T* __restrict__ in, T* __restrict__ out,
                                  const T* __restrict__ c, const T* __restrict__ fx,
                                  const T* __restrict__ fy, const T* __restrict__ fz, int nx,
                                  int ny, int nz, T omega) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < nx * ny * nz) sweep_cell(in, out, c, fx, fy, fz, i, nx, ny, nz, kLerp, omega);
}

// __launch_bounds__: at most 128 registers a thread, so at least one 512-thread
// block fits on every SM and the occupancy-capped cooperative grid is never empty.
template <typename T>
__global__ void __launch_bounds__(kFusedThreads)
    fused_sweeps_kernel(T* b0, T* b1, int cur, const T* __restrict__ c, const T* __restrict__ fx,
                        const T* __restrict__ fy, const T* __restrict__ fz, int nx, int ny, int nz,
                        SweepWeights<T> w, int k, int lerp_from) {
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  const int n = nx * ny * nz, stride = gridDim.x * blockDim.x;
  for (int j = 0; j < k; ++j) {
    const T* in = cur ? b1 : b0;
    T* out = cur ? b0 : b1;
    // 64-bit i: the last i + stride may pass 2^31 − 1 when n is near it.
    for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
      sweep_cell(in, out, c, fx, fy, fz, static_cast<int>(i), nx, ny, nz, j >= lerp_from,
                 w.omega[j]);
    cur ^= 1;
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
  const int n = nx * ny * nz;
  if (i >= n) return;
  const Cell q = cell_at(i, nx, ny, nz);
  T* sx = sums;
  T* sy = sums + n;
  T* sz = sums + 2 * int64_t{n};  // 2n passes 2^31 − 1 from 2^30 cells on
  if (closed_sides && q.x + 1 == nx)
    sx[i] = T(0);
  else
    sx[i] += (m[q.xp] - m[i]) * (v[q.xp] - v[i]);
  if (closed_sides && q.y + 1 == ny)
    sy[i] = T(0);
  else
    sy[i] += (m[q.yp] - m[i]) * (v[q.yp] - v[i]);
  if (q.z + 1 == nz)
    sz[i] = T(0);
  else
    sz[i] += (m[i + 1] - m[i]) * (v[i + 1] - v[i]);
}

// ∂H(a_i, a_j)/∂a_i = 2 a_j² / (a_i + a_j)² (harmonic) or 1/2 (arithmetic).
template <typename T>
__device__ inline T dh(T ai, T aj, bool arithmetic) {
  if (arithmetic) return T(0.5);
  const T s = ai + aj;
  return T(2) * aj * aj / (s * s);
}

template <typename T>
__global__ void alpha_gradient_kernel(const T* __restrict__ sums, const T* __restrict__ a,
                                      T* __restrict__ out, int nx, int ny, int nz, T ix, T iy, T iz,
                                      T step, bool af) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int n = nx * ny * nz;
  if (i >= n) return;
  const Cell q = cell_at(i, nx, ny, nz);
  const T* sx = sums;
  const T* sy = sums + n;
  const T* sz = sums + 2 * int64_t{n};  // 2n passes 2^31 − 1 from 2^30 cells on
  const T ai = a[i];
  T acc = (sx[i] * dh(ai, a[q.xp], af) + sx[q.xm] * dh(ai, a[q.xm], af)) * ix +
          (sy[i] * dh(ai, a[q.yp], af) + sy[q.ym] * dh(ai, a[q.ym], af)) * iy;
  T zf = 0;
  if (q.z + 1 < nz) zf += sz[i] * dh(ai, a[i + 1], af);
  if (q.z > 0) zf += sz[i - 1] * dh(ai, a[i - 1], af);
  out[i] = -step * (acc + zf * iz);
}

}  // namespace

template <typename T>
void launch_face_sweep(const T* in, T* out, const T* c, const T* faces, Grid g, T omega, bool lerp,
                       void* stream) {
  const int64_t n = g.numel();
  const int nx = static_cast<int>(g.nx), ny = static_cast<int>(g.ny), nz = static_cast<int>(g.nz);
  if (lerp)
    face_sweep_kernel<T, true><<<blocks(n), kThreads, 0, as_stream(stream)>>>(
        in, out, c, faces, faces + n, faces + 2 * n, nx, ny, nz, omega);
  else
    face_sweep_kernel<T, false><<<blocks(n), kThreads, 0, as_stream(stream)>>>(
        in, out, c, faces, faces + n, faces + 2 * n, nx, ny, nz, omega);
  check_launch("nefi::cuda::launch_face_sweep");
}

bool cooperative_launch_supported(int device) {
  int v = 0;
  return cudaDeviceGetAttribute(&v, cudaDevAttrCooperativeLaunch, device) == cudaSuccess && v != 0;
}

template <typename T>
void launch_fused_sweeps(T* buf0, T* buf1, int cur, const T* c, const T* faces, Grid g,
                         const SweepWeights<T>& w, int k, int lerp_from, void* stream) {
  const char* where = "nefi::cuda::launch_fused_sweeps";
  // Every block must be resident at once: at most the occupancy limit. Wide
  // blocks keep the grid small (128 for the paper's 65,536 cells, one per SM
  // of an H100/H200): a grid barrier's cost grows with the blocks it waits on.
  int device = 0, sms = 0, per_sm = 0;
  fk::cuda::detail::check_cuda(cudaGetDevice(&device), where);
  fk::cuda::detail::check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                               where);
  fk::cuda::detail::check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                                   &per_sm, fused_sweeps_kernel<T>, kFusedThreads, 0),
                               where);
  const int64_t n = g.numel();
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(
      (n + kFusedThreads - 1) / kFusedThreads, std::max<int64_t>(1, int64_t{per_sm} * sms)));
  int nx = static_cast<int>(g.nx), ny = static_cast<int>(g.ny), nz = static_cast<int>(g.nz);
  const T* fx = faces;
  const T* fy = faces + n;
  const T* fz = faces + 2 * n;
  SweepWeights<T> weights = w;
  void* args[] = {&buf0, &buf1, &cur, &c, &fx, &fy, &fz, &nx, &ny, &nz, &weights, &k, &lerp_from};
  fk::cuda::detail::check_cuda(
      cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(fused_sweeps_kernel<T>), dim3(grid),
                                  dim3(kFusedThreads), args, 0, as_stream(stream)),
      where);
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
void launch_alpha_gradient(const T* sums, const T* alpha, T* out, Grid g,
                           const GradientCoefficients& k, void* stream) {
  // As the CPU: 1 / h² and Δt rounded to T first.
  const T ix = T(1) / T(k.h2[0]), iy = T(1) / T(k.h2[1]), iz = T(1) / T(k.h2[2]);
  alpha_gradient_kernel<T><<<blocks(g.numel()), kThreads, 0, as_stream(stream)>>>(
      sums, alpha, out, static_cast<int>(g.nx), static_cast<int>(g.ny), static_cast<int>(g.nz), ix,
      iy, iz, T(k.dt), k.arithmetic);
  check_launch("nefi::cuda::launch_alpha_gradient");
}

#define NEFI_CUDA_INSTANTIATE(T)                                                              \
  template void launch_face_sweep<T>(const T*, T*, const T*, const T*, Grid, T, bool, void*); \
  template void launch_fused_sweeps<T>(T*, T*, int, const T*, const T*, Grid,                 \
                                       const SweepWeights<T>&, int, int, void*);              \
  template void launch_scale<T>(const T*, const T*, T*, int64_t, void*);                      \
  template void launch_scale_twice<T>(const T*, const T*, T*, T*, int64_t, void*);            \
  template void launch_add_surface<T>(const T*, const T*, T*, Grid, void*);                   \
  template void launch_face_products<T>(T*, const T*, const T*, Grid, bool, void*);           \
  template void launch_alpha_gradient<T>(const T*, const T*, T*, Grid,                        \
                                         const GradientCoefficients&, void*);
NEFI_CUDA_INSTANTIATE(float)
NEFI_CUDA_INSTANTIATE(double)
#undef NEFI_CUDA_INSTANTIATE

}  // namespace nefi::cuda
