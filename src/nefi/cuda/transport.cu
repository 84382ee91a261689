// The advection-diffusion kernels (transport_kernels.h): one Euler step of a
// factor, the observation gather and its transpose, and the source's
// gradient sum. One thread per output value; the arithmetic is
// transport_cells.h's.
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "nefi/cuda/transport_cells.h"
#include "nefi/cuda/transport_kernels.h"

namespace nefi::cuda {
namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;

__global__ void step_kernel(TransportRows m, int64_t batch, int64_t cells, double tau,
                            const double* c, const double* s, double* out) {
  FK_CUDA_LOOP(k, batch * cells) {
    const int64_t b = k / cells, i = k % cells;
    out[k] = stepped_cell(m, tau, c + b * cells, s != nullptr ? s + b * cells : nullptr, i);
  }
}

__global__ void observe_kernel(int64_t batch, int64_t cells, int64_t observed, int64_t K, int64_t k,
                               const int64_t* sensors, const double* c, double* y) {
  FK_CUDA_LOOP(t, batch * observed) {
    const int64_t b = t / observed, q = t % observed;
    y[(b * K + k) * observed + q] = c[b * cells + (sensors != nullptr ? sensors[q] : q)];
  }
}

__global__ void inject_kernel(int64_t batch, int64_t cells, int64_t observed, int64_t K, int64_t k,
                              const int64_t* sensors, const double* g, double* lam) {
  FK_CUDA_LOOP(t, batch * observed) {
    const int64_t b = t / observed, q = t % observed;
    double& l = lam[b * cells + (sensors != nullptr ? sensors[q] : q)];
    l = rounded_add(l, g[(b * K + k) * observed + q]);
  }
}

__global__ void accumulate_kernel(int64_t n, double tau, const double* v, double* acc) {
  FK_CUDA_LOOP(i, n) {
    acc[i] = rounded_add(acc[i], rounded_mul(tau, v[i]));
  }
}

}  // namespace

void launch_transport_step(const TransportRows& m, int64_t batch, int64_t cells, double tau,
                           const double* c, const double* s, double* out, void* stream) {
  step_kernel<<<blocks_for(batch * cells), kThreads, 0, as_stream(stream)>>>(m, batch, cells, tau,
                                                                             c, s, out);
  check_launch("nefi::cuda::transport_step");
}

void launch_transport_observe(int64_t batch, int64_t cells, int64_t observed, int64_t K, int64_t k,
                              const int64_t* sensors, const double* c, double* y, void* stream) {
  observe_kernel<<<blocks_for(batch * observed), kThreads, 0, as_stream(stream)>>>(
      batch, cells, observed, K, k, sensors, c, y);
  check_launch("nefi::cuda::transport_observe");
}

void launch_transport_inject(int64_t batch, int64_t cells, int64_t observed, int64_t K, int64_t k,
                             const int64_t* sensors, const double* g, double* lam, void* stream) {
  inject_kernel<<<blocks_for(batch * observed), kThreads, 0, as_stream(stream)>>>(
      batch, cells, observed, K, k, sensors, g, lam);
  check_launch("nefi::cuda::transport_inject");
}

void launch_transport_accumulate(int64_t n, double tau, const double* v, double* acc,
                                 void* stream) {
  accumulate_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(n, tau, v, acc);
  check_launch("nefi::cuda::transport_accumulate");
}

}  // namespace nefi::cuda
