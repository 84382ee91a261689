// The advection-diffusion kernels (transport_kernels.h): one Euler step of a
// factor, the observation gather and its transpose, the source's gradient
// sum, and for a coefficient unknown each factor's stencil built for the
// field and its transpose, the gradient's face sums and their chain to the
// cells (the diffusivity's or the velocity's).
// One thread per output value; the arithmetic is transport_cells.h's.
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

__global__ void face_terms_kernel(TransportGrid g, int axis, double w, const double* c,
                                  const double* lam, double* dface) {
  FK_CUDA_LOOP(i, g.cells) {
    const int64_t k = (i / g.stride[axis]) % g.size[axis];
    const int64_t j = transport_upper_cell(i, k, g.size[axis], g.stride[axis], g.periodic[axis]);
    if (j >= 0) {
      double& f = dface[axis * g.cells + i];
      f = face_term(f, w, c[i], c[j], lam[i], lam[j]);
    }
  }
}

__global__ void stencil_kernel(TransportStencil s, int64_t width, int32_t* col, double* weight,
                               double* per_tau, double* rate, double* bad) {
  FK_CUDA_LOOP(i, s.grid.cells) {
    write_stencil_row(s, width, i, col, weight, per_tau, rate, bad);
  }
}

__global__ void stencil_transpose_kernel(TransportStencil s, int64_t width, const int32_t* col,
                                         const double* weight, const double* per_tau,
                                         int32_t* t_col, double* t_weight, double* t_per_tau) {
  FK_CUDA_LOOP(c, s.grid.cells) {
    write_transposed_row(s, width, c, col, weight, per_tau, t_col, t_weight, t_per_tau);
  }
}

__global__ void velocity_terms_kernel(TransportStencil s, int axis, double tau, const double* c,
                                      const double* lam, double* G, double* Gout) {
  FK_CUDA_LOOP(i, s.grid.cells) {
    velocity_terms_at(s, axis, i, (i / s.grid.stride[axis]) % s.grid.size[axis], tau, c, lam, G,
                      Gout);
  }
}

__global__ void velocity_gradient_kernel(TransportStencil s, const double* G, const double* Gout,
                                         double* dv) {
  FK_CUDA_LOOP(t, s.grid.axes * s.grid.cells) {
    const int a = static_cast<int>(t / s.grid.cells);
    dv[t] = velocity_gradient_cell(s, a, G, Gout, t % s.grid.cells);
  }
}

__global__ void diffusivity_gradient_kernel(TransportGrid g, const double* dface, const double* D,
                                            double* dD) {
  FK_CUDA_LOOP(x, g.cells) {
    dD[x] = diffusivity_gradient_cell(g, dface, D, x);
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

void launch_transport_face_terms(const TransportGrid& grid, int axis, double w, const double* c,
                                 const double* lam, double* dface, void* stream) {
  face_terms_kernel<<<blocks_for(grid.cells), kThreads, 0, as_stream(stream)>>>(grid, axis, w, c,
                                                                                lam, dface);
  check_launch("nefi::cuda::transport_face_terms");
}

void launch_transport_diffusivity_gradient(const TransportGrid& grid, const double* dface,
                                           const double* D, double* dD, void* stream) {
  diffusivity_gradient_kernel<<<blocks_for(grid.cells), kThreads, 0, as_stream(stream)>>>(
      grid, dface, D, dD);
  check_launch("nefi::cuda::transport_diffusivity_gradient");
}

void launch_transport_stencil(const TransportStencil& s, int64_t width, int32_t* col,
                              double* weight, double* per_tau, double* rate, double* bad,
                              void* stream) {
  stencil_kernel<<<blocks_for(s.grid.cells), kThreads, 0, as_stream(stream)>>>(
      s, width, col, weight, per_tau, rate, bad);
  check_launch("nefi::cuda::transport_stencil");
}

void launch_transport_stencil_transpose(const TransportStencil& s, int64_t width,
                                        const int32_t* col, const double* weight,
                                        const double* per_tau, int32_t* t_col, double* t_weight,
                                        double* t_per_tau, void* stream) {
  stencil_transpose_kernel<<<blocks_for(s.grid.cells), kThreads, 0, as_stream(stream)>>>(
      s, width, col, weight, per_tau, t_col, t_weight, t_per_tau);
  check_launch("nefi::cuda::transport_stencil_transpose");
}

void launch_transport_velocity_terms(const TransportStencil& s, int axis, double tau,
                                     const double* c, const double* lam, double* G, double* Gout,
                                     void* stream) {
  velocity_terms_kernel<<<blocks_for(s.grid.cells), kThreads, 0, as_stream(stream)>>>(
      s, axis, tau, c, lam, G, Gout);
  check_launch("nefi::cuda::transport_velocity_terms");
}

void launch_transport_velocity_gradient(const TransportStencil& s, const double* G,
                                        const double* Gout, double* dv, void* stream) {
  velocity_gradient_kernel<<<blocks_for(s.grid.axes * s.grid.cells), kThreads, 0,
                             as_stream(stream)>>>(s, G, Gout, dv);
  check_launch("nefi::cuda::transport_velocity_gradient");
}

}  // namespace nefi::cuda
