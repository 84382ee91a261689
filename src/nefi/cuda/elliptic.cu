// The elliptic kernels (elliptic_kernels.h): the face system, one cell per
// thread; the multigrid hierarchy, one block of kCgThreads threads per field
// running elliptic_multigrid_cells.h's block_multigrid_setup; the block CG,
// one block per system running elliptic_cells.h's block_pcg over DeviceBlock
// with Jacobi or the V-cycle (MultigridPrecond, inside the same block: see
// elliptic_multigrid_cells.h for why); the conductivity gradient, one cell
// per thread. Built with --fmad=false (CMakeLists.txt) so that the
// cells' products and sums round as the host's do.
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "nefi/cuda/elliptic_cells.h"
#include "nefi/cuda/elliptic_kernels.h"
#include "nefi/cuda/elliptic_multigrid_cells.h"

namespace nefi::cuda {
namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;

// HostBlock's phases on the device: each thread's work, then a barrier; the
// partial sums combined by the same tree in shared memory.
struct DeviceBlock {
  double (*red)[kCgThreads];
  template <typename F>
  __device__ void each(F&& f) {
    f(static_cast<int>(threadIdx.x));
    __syncthreads();
  }
  template <typename F>
  __device__ void sum2(F&& f, double& s0, double& s1) {
    const int t = static_cast<int>(threadIdx.x);
    f(t, red[0][t], red[1][t]);
    __syncthreads();
    for (int s = kCgThreads / 2; s > 0; s >>= 1) {
      if (t < s) {
        red[0][t] += red[0][t + s];
        red[1][t] += red[1][t + s];
      }
      __syncthreads();
    }
    s0 = red[0][0];
    s1 = red[1][0];
    __syncthreads();  // before the next phase overwrites red
  }
};

template <typename T>
__global__ void face_system_kernel(StencilGrid g, int64_t nb, const T* sigma, bool sigma_batched,
                                   const T* kappa, bool kappa_batched, T* faces, T* diag,
                                   T* inv_diag) {
  const int64_t n = g.numel;
  FK_CUDA_LOOP(k, nb * n) {
    const int64_t f = k / n, i = k % n;
    face_system_cell<T>(g, sigma + (sigma_batched ? f * n : 0),
                        kappa ? kappa + (kappa_batched ? f * n : 0) : nullptr, i,
                        faces + f * g.ndim * n, diag + f * n, inv_diag + f * n);
  }
}

template <typename T>
__global__ void __launch_bounds__(kCgThreads)
    multigrid_setup_kernel(StencilGrid g, const T* faces, const T* diag, T* hierarchy,
                           double* cholesky) {
  __shared__ double red[2][kCgThreads];
  const int64_t f = blockIdx.x, n = g.numel;
  DeviceBlock ex{red};
  block_multigrid_setup<T>(ex, g, faces + f * g.ndim * n, diag + f * n,
                           hierarchy + f * multigrid_hierarchy_size(g),
                           cholesky + f * multigrid_cholesky_size(g));
}

template <typename T>
__global__ void __launch_bounds__(kCgThreads)
    block_pcg_kernel(StencilGrid g, int64_t ns, int64_t nb, const T* faces, const T* diag,
                     const T* inv_diag, const T* b, T* x, T* out, T* work, double* stats,
                     CgControl control, MultigridBuffers<T> mg) {
  __shared__ double red[2][kCgThreads];
  const int64_t n = g.numel, s = blockIdx.x, f = nb == 1 ? 0 : s;
  const CgScratch<T> w{work + s * n, work + (ns + s) * n, work + (2 * ns + s) * n,
                       work + (3 * ns + s) * n, work + (4 * ns + s) * n};
  DeviceBlock ex{red};
  const T *fa = faces + f * g.ndim * n, *di = diag + f * n, *inv = inv_diag + f * n;
  T* out_s = out ? out + s * n : nullptr;
  CgOutcome res;
  if (mg.hierarchy) {
    const MultigridPrecond<T> m{g,
                                fa,
                                di,
                                inv,
                                mg.hierarchy + f * multigrid_hierarchy_size(g),
                                mg.cholesky + f * multigrid_cholesky_size(g),
                                mg.work + s * multigrid_work_size(g),
                                w.q};
    res = block_pcg<T>(ex, g, fa, di, inv, b + s * n, x + s * n, out_s, w, control, m);
  } else {
    res = block_pcg<T>(ex, g, fa, di, inv, b + s * n, x + s * n, out_s, w, control);
  }
  if (threadIdx.x == 0) {
    double* st = stats + s * kCgStats;
    st[kCgIterations] = static_cast<double>(res.iterations);
    st[kCgWarmUsed] = res.warm_used ? 1.0 : 0.0;
    st[kCgConverged] = res.converged ? 1.0 : 0.0;
    st[kCgResidual] = res.residual;
  }
}

template <typename T>
__global__ void sigma_gradient_kernel(StencilGrid g, int64_t ns, bool sigma_batched, const T* sigma,
                                      const T* a, const T* b, double scale, T* grad) {
  const int64_t n = g.numel, nf = sigma_batched ? ns : 1;
  FK_CUDA_LOOP(k, nf * n) {
    const int64_t f = k / n, i = k % n;
    const int64_t lo = sigma_batched ? f : 0, hi = sigma_batched ? f + 1 : ns;
    double acc = 0;
    for (int64_t s = lo; s < hi; ++s)
      acc = sigma_gradient_cell<T>(g, sigma + f * n, a + s * n, b + s * n, scale, i, acc);
    grad[k] = static_cast<T>(acc);
  }
}

}  // namespace

template <typename T>
void launch_face_system(const StencilGrid& g, int64_t nb, const T* sigma, bool sigma_batched,
                        const T* kappa, bool kappa_batched, T* faces, T* diag, T* inv_diag,
                        void* stream) {
  face_system_kernel<T><<<blocks_for(nb * g.numel), kThreads, 0, as_stream(stream)>>>(
      g, nb, sigma, sigma_batched, kappa, kappa_batched, faces, diag, inv_diag);
  check_launch("nefi::cuda::face_system");
}

template <typename T>
void launch_multigrid_setup(const StencilGrid& g, int64_t nb, const T* faces, const T* diag,
                            T* hierarchy, double* cholesky, void* stream) {
  if (nb == 0) return;
  multigrid_setup_kernel<T><<<static_cast<unsigned>(nb), kCgThreads, 0, as_stream(stream)>>>(
      g, faces, diag, hierarchy, cholesky);
  check_launch("nefi::cuda::multigrid_setup");
}

template <typename T>
void launch_block_pcg(const StencilGrid& g, int64_t ns, int64_t nb, const T* faces, const T* diag,
                      const T* inv_diag, const T* b, T* x, T* out, T* work, double* stats,
                      const CgControl& control, const MultigridBuffers<T>& mg, void* stream) {
  if (ns == 0) return;  // a grid of 0 blocks is an invalid launch configuration
  block_pcg_kernel<T><<<static_cast<unsigned>(ns), kCgThreads, 0, as_stream(stream)>>>(
      g, ns, nb, faces, diag, inv_diag, b, x, out, work, stats, control, mg);
  check_launch("nefi::cuda::block_pcg");
}

template <typename T>
void launch_sigma_gradient(const StencilGrid& g, int64_t ns, bool sigma_batched, const T* sigma,
                           const T* a, const T* b, double scale, T* grad, void* stream) {
  const int64_t nf = sigma_batched ? ns : 1;
  sigma_gradient_kernel<T><<<blocks_for(nf * g.numel), kThreads, 0, as_stream(stream)>>>(
      g, ns, sigma_batched, sigma, a, b, scale, grad);
  check_launch("nefi::cuda::sigma_gradient");
}

#define NEFI_ELLIPTIC_INSTANTIATE(T)                                                               \
  template void launch_face_system<T>(const StencilGrid&, int64_t, const T*, bool, const T*, bool, \
                                      T*, T*, T*, void*);                                          \
  template void launch_multigrid_setup<T>(const StencilGrid&, int64_t, const T*, const T*, T*,     \
                                          double*, void*);                                         \
  template void launch_block_pcg<T>(const StencilGrid&, int64_t, int64_t, const T*, const T*,      \
                                    const T*, const T*, T*, T*, T*, double*, const CgControl&,     \
                                    const MultigridBuffers<T>&, void*);                            \
  template void launch_sigma_gradient<T>(const StencilGrid&, int64_t, bool, const T*, const T*,    \
                                         const T*, double, T*, void*);
NEFI_ELLIPTIC_INSTANTIATE(float)
NEFI_ELLIPTIC_INSTANTIATE(double)
#undef NEFI_ELLIPTIC_INSTANTIATE

}  // namespace nefi::cuda
