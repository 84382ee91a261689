#pragma once
// Launchers of the Born/Rytov kernels (scattering.cu): the per-cell passes
// around the two complex GEMMs of operators/scattering_device.h, on device
// buffers (C order); raw pointers and a stream (a cudaStream_t as void*), no
// CUDA types. T (the field's and data's dtype) is float or double; tables and
// intermediates are complex f64 stored interleaved (re, im), the layout of
// std::complex<double> and cuBLAS's Z type. One thread per output element, no
// atomics: run to run reproducible. Arithmetic: scattering_cells.h.
#include <cstdint>

namespace nefi::cuda {

struct ScatteringDims {
  int64_t batch = 1, views = 0, cells = 0, receivers = 0;
  bool rytov = false;
};

// q (batch, views, cells) complex = phase (views, cells) * x (batch, cells).
template <typename T>
void launch_scattering_modulate(const ScatteringDims& d, const double* phase, const T* x, double* q,
                                void* stream);

// out (batch, 2, views, receivers) = real and imaginary parts of u (batch,
// views, receivers) complex, times rotation (views, receivers) when rytov.
template <typename T>
void launch_scattering_receive(const ScatteringDims& d, const double* u, const double* rotation,
                               T* out, void* stream);

// g (batch, views, receivers) complex = conj(data) (times rotation when
// rytov), data (batch, 2, views, receivers) real then imaginary parts.
template <typename T>
void launch_scattering_conjugate(const ScatteringDims& d, const T* data, const double* rotation,
                                 double* g, void* stream);

// out (batch, cells) = sum over views of Re(phase (views, cells) * p (batch,
// views, cells)), views in ascending order.
template <typename T>
void launch_scattering_demodulate(const ScatteringDims& d, const double* phase, const double* p,
                                  T* out, void* stream);

}  // namespace nefi::cuda
