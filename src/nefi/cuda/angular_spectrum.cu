// The angular-spectrum kernels (angular_spectrum_kernels.h): padding,
// transfer-function multiply and cropping around cuFFT, and the holography
// operator's elementwise steps. One thread per output element; the index
// arithmetic is angular_spectrum_cells.h's.
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "nefi/cuda/angular_spectrum_cells.h"
#include "nefi/cuda/angular_spectrum_kernels.h"

namespace nefi::cuda {
namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;
using Cx = fk::cuda::detail::Cx<double>;

static_assert(sizeof(Cx) == sizeof(Complex), "Cx<double> has std::complex<double>'s layout");

Cx* cx(Complex* p) {
  return reinterpret_cast<Cx*>(p);
}
const Cx* cx(const Complex* p) {
  return reinterpret_cast<const Cx*>(p);
}

__global__ void pad_kernel(const Cx* u, PadGeometry g, bool adjoint, Cx* big) {
  FK_CUDA_LOOP(k, g.batch * g.m0 * g.m1) {
    const int64_t src = padded_source(g, adjoint, k);
    big[k] = src >= 0 ? u[src] : Cx{0, 0};
  }
}

__global__ void transfer_kernel(Cx* big, const Cx* H, PadGeometry g, bool conjugate) {
  const int64_t m = g.m0 * g.m1;
  FK_CUDA_LOOP(k, g.batch * m) {
    Cx h = H[k % m];
    if (conjugate) h.im = -h.im;
    big[k] = big[k] * h;
  }
}

__global__ void crop_kernel(const Cx* big, PadGeometry g, bool adjoint, Cx* out) {
  FK_CUDA_LOOP(k, g.batch * g.n0 * g.n1) {
    const int64_t j = k % g.n1, i = (k / g.n1) % g.n0, b = k / (g.n0 * g.n1);
    int64_t p0, p1, q0, q1;
    gathered_range(i, g.n0, g.m0, g.edge, adjoint, p0, p1);
    gathered_range(j, g.n1, g.m1, g.edge, adjoint, q0, q1);
    Cx s{0, 0};
    for (int64_t p = p0; p <= p1; ++p)
      for (int64_t q = q0; q <= q1; ++q) s = s + big[(b * g.m0 + p) * g.m1 + q];
    out[k] = s;
  }
}

template <typename T>
__global__ void transmission_kernel(const T* phi, int64_t n, double amplitude, Cx* t) {
  FK_CUDA_LOOP(k, n) {
    double s, c;
    sincos(static_cast<double>(phi[k]), &s, &c);
    t[k] = Cx{amplitude * c, amplitude * s};
  }
}

template <typename T>
__global__ void store_plane_kernel(const Cx* ud, int64_t batch, int64_t planes, int64_t d,
                                   int64_t cells, Cx* u_all, T* intensity) {
  FK_CUDA_LOOP(k, batch * cells) {
    const int64_t b = k / cells, at = (b * planes + d) * cells + k % cells;
    const Cx v = ud[k];
    u_all[at] = v;
    intensity[at] = static_cast<T>(v.re * v.re + v.im * v.im);
  }
}

__global__ void plane_source_kernel(const double* g, const Cx* u_all, int64_t batch, int64_t planes,
                                    int64_t d, int64_t cells, Cx* src) {
  FK_CUDA_LOOP(k, batch * cells) {
    const int64_t at = (k / cells * planes + d) * cells + k % cells;
    const double s = 2.0 * g[at];
    src[k] = Cx{s * u_all[at].re, s * u_all[at].im};
  }
}

__global__ void accumulate_kernel(Cx* w, const Cx* back, int64_t n) {
  FK_CUDA_LOOP(k, n) {
    w[k] = w[k] + back[k];
  }
}

template <typename T>
__global__ void phase_gradient_kernel(const Cx* t, const Cx* w, int64_t n, T* dphi) {
  FK_CUDA_LOOP(k, n) {
    // Im(t conj(w)) = t.im w.re - t.re w.im.
    dphi[k] = static_cast<T>(-(t[k].im * w[k].re - t[k].re * w[k].im));
  }
}

}  // namespace

void launch_pad_field(const Complex* u, const PadGeometry& g, bool adjoint, Complex* big,
                      void* stream) {
  pad_kernel<<<blocks_for(g.batch * g.m0 * g.m1), kThreads, 0, as_stream(stream)>>>(
      cx(u), g, adjoint, cx(big));
  check_launch("nefi::cuda::pad_field");
}

void launch_apply_transfer(Complex* big, const Complex* H, const PadGeometry& g, bool conjugate,
                           void* stream) {
  transfer_kernel<<<blocks_for(g.batch * g.m0 * g.m1), kThreads, 0, as_stream(stream)>>>(
      cx(big), cx(H), g, conjugate);
  check_launch("nefi::cuda::apply_transfer");
}

void launch_crop_field(const Complex* big, const PadGeometry& g, bool adjoint, Complex* out,
                       void* stream) {
  crop_kernel<<<blocks_for(g.batch * g.n0 * g.n1), kThreads, 0, as_stream(stream)>>>(
      cx(big), g, adjoint, cx(out));
  check_launch("nefi::cuda::crop_field");
}

template <typename T>
void launch_transmission(const T* phi, int64_t n, double amplitude, Complex* t, void* stream) {
  transmission_kernel<T>
      <<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(phi, n, amplitude, cx(t));
  check_launch("nefi::cuda::transmission");
}

template <typename T>
void launch_store_plane(const Complex* ud, int64_t batch, int64_t planes, int64_t d, int64_t cells,
                        Complex* u_all, T* intensity, void* stream) {
  store_plane_kernel<T><<<blocks_for(batch * cells), kThreads, 0, as_stream(stream)>>>(
      cx(ud), batch, planes, d, cells, cx(u_all), intensity);
  check_launch("nefi::cuda::store_plane");
}

void launch_plane_source(const double* g, const Complex* u_all, int64_t batch, int64_t planes,
                         int64_t d, int64_t cells, Complex* src, void* stream) {
  plane_source_kernel<<<blocks_for(batch * cells), kThreads, 0, as_stream(stream)>>>(
      g, cx(u_all), batch, planes, d, cells, cx(src));
  check_launch("nefi::cuda::plane_source");
}

void launch_accumulate(Complex* w, const Complex* back, int64_t n, void* stream) {
  accumulate_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(cx(w), cx(back), n);
  check_launch("nefi::cuda::accumulate");
}

template <typename T>
void launch_phase_gradient(const Complex* t, const Complex* w, int64_t n, T* dphi, void* stream) {
  phase_gradient_kernel<T>
      <<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(cx(t), cx(w), n, dphi);
  check_launch("nefi::cuda::phase_gradient");
}

template void launch_transmission<float>(const float*, int64_t, double, Complex*, void*);
template void launch_transmission<double>(const double*, int64_t, double, Complex*, void*);
template void launch_store_plane<float>(const Complex*, int64_t, int64_t, int64_t, int64_t,
                                        Complex*, float*, void*);
template void launch_store_plane<double>(const Complex*, int64_t, int64_t, int64_t, int64_t,
                                         Complex*, double*, void*);
template void launch_phase_gradient<float>(const Complex*, const Complex*, int64_t, float*, void*);
template void launch_phase_gradient<double>(const Complex*, const Complex*, int64_t, double*,
                                            void*);

}  // namespace nefi::cuda
