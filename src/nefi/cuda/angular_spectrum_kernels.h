#pragma once
// Launchers of the angular-spectrum kernels (angular_spectrum.cu): the pad,
// transfer-function multiply and crop around the FFTs of propagate(), and the
// holography operator's elementwise steps, on c128 device buffers (C order,
// (batch, rows, cols)); raw pointers and a stream (a cudaStream_t as void*),
// no CUDA types. T (the phase's dtype) is float or double; everything else is
// f64. Each output element is written by one thread, sums in a fixed order
// (no atomics): bitwise reproducible run to run. The index arithmetic is the
// CPU loops' of operators/angular_spectrum.cpp.
#include <complex>
#include <cstdint>

namespace nefi::cuda {

using Complex = std::complex<double>;

// A field (batch, n0, n1) inside its padded grid (batch, m0, m1), placed at
// ((m0 - n0) / 2, (m1 - n1) / 2).
struct PadGeometry {
  int64_t batch = 1, n0 = 0, n1 = 0, m0 = 0, m1 = 0;
  bool edge = true;  // edge (replicated) padding, else zeros
};

// big = pad(u) (adjoint = false: edge or zero padding) or crop^T(u)
// (adjoint = true: u in the window, zeros around it).
void launch_pad_field(const Complex* u, const PadGeometry& g, bool adjoint, Complex* big,
                      void* stream);
// big[b, k] *= H[k] (conj(H[k]) when conjugate), k < m0 m1.
void launch_apply_transfer(Complex* big, const Complex* H, const PadGeometry& g, bool conjugate,
                           void* stream);
// out = crop(big) (adjoint = false) or pad^T(big) (adjoint = true: each cell
// sums the padded cells that replicate it, rows then columns ascending, as
// the CPU loop adds them).
void launch_crop_field(const Complex* big, const PadGeometry& g, bool adjoint, Complex* out,
                       void* stream);

// t[k] = amplitude (cos phi[k], sin phi[k]), k < n.
template <typename T>
void launch_transmission(const T* phi, int64_t n, double amplitude, Complex* t, void* stream);
// Plane d of (batch, planes, cells): u_all[b, d] = ud[b] and I[b, d] = |ud[b]|^2.
template <typename T>
void launch_store_plane(const Complex* ud, int64_t batch, int64_t planes, int64_t d, int64_t cells,
                        Complex* u_all, T* intensity, void* stream);
// src[b] = 2 g[b, d] u_all[b, d] (the field-side cotangent of |u_d|^2).
void launch_plane_source(const double* g, const Complex* u_all, int64_t batch, int64_t planes,
                         int64_t d, int64_t cells, Complex* src, void* stream);
// w[k] += back[k], k < n.
void launch_accumulate(Complex* w, const Complex* back, int64_t n, void* stream);
// dphi[k] = -Im(t[k] conj(w[k])), k < n.
template <typename T>
void launch_phase_gradient(const Complex* t, const Complex* w, int64_t n, T* dphi, void* stream);

}  // namespace nefi::cuda
