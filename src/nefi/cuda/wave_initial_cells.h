#pragma once
// The per-cell arithmetic of the photoacoustic (initial-value) wave kernels
// (wave.cu), host and device alike, beside wave_cells.h's leapfrog: the
// embedding of p0 in the stored grid, the time-symmetric start
// u^{−1} = p0 + ½ dt² κ Δ_h p0 and its transpose (add_scaled_laplacian), and
// the sensor's low-pass and sampling of the traces and their transpose
// (WaveInitialConditionOperator's sensor_samples, sensor_samples_adjoint,
// gaussian_lowpass). Checked against those CPU loops bit for bit by
// tests/nefi/operators/wave_cells_test.cpp.
#include <cstdint>

#include "nefi/cuda/host_device.h"
#include "nefi/cuda/wave_cells.h"
#include "nefi/cuda/wave_kernels.h"

namespace nefi::cuda {

// The stored index of domain cell q (C order), inside the layer.
template <typename T>
NEFI_HOST_DEVICE inline int64_t domain_cell(const WaveCells<T>& g, int64_t q) {
  int64_t i[3];
  for (int d = 2; d >= 0; --d) {
    i[d] = q % g.interior[d];
    q /= g.interior[d];
  }
  int64_t p = 0;
  for (int d = 0; d < 3; ++d) p += (i[d] + g.pad[d] + g.off[d]) * g.stride[d];
  return p;
}

// Padded kernel: out[p] = u[p] + k[p] Δ_h u (add_scaled_laplacian, forward).
template <typename T>
NEFI_HOST_DEVICE inline void scaled_laplacian_cell(const WaveCells<T>& g, const T* k, const T* u,
                                                   T* out, int64_t t) {
  const int64_t p = padded_cell(g, t).p;
  out[p] = u[p] + k[p] * laplacian_at(g, u, p);
}

// Stored kernel: ku = k ⊙ u (the transpose's product, formed once).
template <typename T>
NEFI_HOST_DEVICE inline void scaled_product_cell(const T* k, const T* u, T* ku, int64_t p) {
  ku[p] = k[p] * u[p];
}

// Domain kernel, the adjoint's end: the transpose of the start plus ū^0,
// restricted to the domain: (u[p] + Δ_h(k u)[p]) + lam0[p] with ku = k ⊙ u.
template <typename T>
NEFI_HOST_DEVICE inline T initial_adjoint_cell(const WaveCells<T>& g, const T* u, const T* ku,
                                               const T* lam0, int64_t q) {
  const int64_t p = domain_cell(g, q);
  T v = u[p] + laplacian_at(g, ku, p);
  v += lam0[p];
  return v;
}

// Thread (r, j) of the sensor kernel: receiver r's value at fine step
// j · every after the Gaussian low-pass w (half-width `half`; none when w is
// null), from its traces at every step (n_fine of them).
template <typename T>
NEFI_HOST_DEVICE inline double sensor_sample_cell(const T* fine, int64_t n_fine, int64_t every,
                                                  const double* w, int64_t half, int64_t r,
                                                  int64_t j) {
  const T* row = fine + r * n_fine;
  const int64_t c = j * every;
  if (!w) return static_cast<double>(row[c]);
  double s = 0;
  const int64_t lo = c - half < 0 ? 0 : c - half;
  const int64_t hi = c + half > n_fine - 1 ? n_fine - 1 : c + half;
  for (int64_t i = lo; i <= hi; ++i) s += w[i - c + half] * static_cast<double>(row[i]);
  return s;
}

// Thread (r, i) of the sensor's transpose: the samples g (n_rec, n_t) placed
// at every `every`-th fine step (zero between), then low-passed at step i.
NEFI_HOST_DEVICE inline double sensor_adjoint_cell(const double* g, int64_t n_t, int64_t n_fine,
                                                   int64_t every, const double* w, int64_t half,
                                                   int64_t r, int64_t i) {
  auto placed = [&](int64_t k) { return k % every == 0 ? g[r * n_t + k / every] : 0.0; };
  if (!w) return placed(i);
  double s = 0;
  const int64_t lo = i - half < 0 ? 0 : i - half;
  const int64_t hi = i + half > n_fine - 1 ? n_fine - 1 : i + half;
  for (int64_t k = lo; k <= hi; ++k) s += w[k - i + half] * placed(k);
  return s;
}

}  // namespace nefi::cuda
