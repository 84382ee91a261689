#pragma once
// Launchers of the Poisson DST solve's kernels (poisson_dst.cu): the odd
// extension of a field around cuFFT, the spectral division, and the
// restriction back to the box, on device buffers (C order); raw pointers and
// a stream (a cudaStream_t as void*), no CUDA types. T (the field's dtype) is
// float or double; the extension and its spectrum are c128. One thread per
// output element, no atomics: run to run reproducible. Index arithmetic:
// poisson_dst_cells.h.
#include <complex>
#include <cstdint>

namespace nefi::cuda {

using Complex = std::complex<double>;

// Axes an OddExtension holds. poisson_dst_cells.h's loops over axes run
// from it down, skipping axes past ndim, so that nvcc unrolls them and n[a]
// has a constant index (a run-time index copies the by-value struct into a
// local-memory stack frame: ptxas resource audit, docs/performance.md,
// session 18).
inline constexpr int kOddExtensionAxes = 3;

// A field (batch, n[0], ..., n[ndim-1]) and its odd extension (batch, 2 n[0],
// ..., 2 n[ndim-1]): along every axis the field, then its mirror image
// negated, so the DST-II of the field is (up to a phase per mode) the
// extension's DFT.
struct OddExtension {
  int ndim = 1;
  int64_t batch = 1;
  int64_t n[kOddExtensionAxes] = {1, 1, 1};
  int64_t cells() const {
    int64_t c = 1;
    for (int a = 0; a < ndim; ++a) c *= n[a];
    return c;
  }
  int64_t extended_cells() const { return cells() << ndim; }
};

// ext = the odd extension of f (imaginary parts 0).
template <typename T>
void launch_odd_extension(const T* f, const OddExtension& g, Complex* ext, void* stream);
// spectrum[b, p] *= scale[p], p < extended_cells.
void launch_scale_spectrum(Complex* spectrum, const double* scale, const OddExtension& g,
                           void* stream);
// out = the real part of ext's box [0, n) (the field's own cells).
template <typename T>
void launch_restrict_to_box(const Complex* ext, const OddExtension& g, T* out, void* stream);

}  // namespace nefi::cuda
