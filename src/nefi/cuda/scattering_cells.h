#pragma once
// The per-element arithmetic of the Born/Rytov kernels (scattering.cu): the
// passes before and after each complex GEMM, as the CPU loops of
// operators/scattering.cpp write them (std::complex products with separately
// rounded terms, sums over views from 0 in ascending order). Host and device
// functions alike, so the device formulation (these passes around fk::gemm
// on interleaved complex buffers) is checked against the CPU operator on
// machines without a GPU (tests/nefi/operators/scattering_cells_test.cpp).
// Complex values are interleaved doubles (re, im).
#include <cstdint>

#include "nefi/cuda/host_device.h"
#include "nefi/cuda/scattering_kernels.h"

namespace nefi::cuda {

// Element k of q (batch, views, cells): phase[l, j] x[b, j].
template <typename T>
NEFI_HOST_DEVICE inline void modulated_cell(const ScatteringDims& d, const double* phase,
                                            const T* x, int64_t k, double* q) {
  const int64_t j = k % d.cells, l = (k / d.cells) % d.views, b = k / (d.cells * d.views);
  const double v = static_cast<double>(x[b * d.cells + j]);
  q[2 * k] = phase[2 * (l * d.cells + j)] * v;
  q[2 * k + 1] = phase[2 * (l * d.cells + j) + 1] * v;
}

// Element k of out (batch, 2, views, receivers): a part of u (times the
// Rytov rotation).
NEFI_HOST_DEVICE inline double received_value(const ScatteringDims& d, const double* u,
                                              const double* rotation, int64_t k) {
  const int64_t vr = d.views * d.receivers, p = k % vr, part = (k / vr) % 2, b = k / (2 * vr);
  double re = u[2 * (b * vr + p)], im = u[2 * (b * vr + p) + 1];
  if (d.rytov) {
    const double c = rotation[2 * p], s = rotation[2 * p + 1];
    const double r = re * c - im * s, i = re * s + im * c;
    re = r, im = i;
  }
  return part == 0 ? re : im;
}

// Element k of g (batch, views, receivers): conj of the datum (times the
// Rytov rotation).
template <typename T>
NEFI_HOST_DEVICE inline void conjugated_datum(const ScatteringDims& d, const T* data,
                                              const double* rotation, int64_t k, double* g) {
  const int64_t vr = d.views * d.receivers, p = k % vr, b = k / vr;
  double re = static_cast<double>(data[b * 2 * vr + p]);
  double im = -static_cast<double>(data[b * 2 * vr + vr + p]);
  if (d.rytov) {
    const double c = rotation[2 * p], s = rotation[2 * p + 1];
    const double r = re * c - im * s, i = re * s + im * c;
    re = r, im = i;
  }
  g[2 * k] = re;
  g[2 * k + 1] = im;
}

// Element k of out (batch, cells): sum_l Re(phase[l, j] p[b, l, j]).
NEFI_HOST_DEVICE inline double demodulated_cell(const ScatteringDims& d, const double* phase,
                                                const double* p, int64_t k) {
  const int64_t j = k % d.cells, b = k / d.cells;
  double acc = 0.0;
  for (int64_t l = 0; l < d.views; ++l) {
    const double* a = phase + 2 * (l * d.cells + j);
    const double* pl = p + 2 * ((b * d.views + l) * d.cells + j);
    acc += a[0] * pl[0] - a[1] * pl[1];
  }
  return acc;
}

}  // namespace nefi::cuda
