#pragma once
// The index arithmetic of the angular-spectrum kernels (angular_spectrum.cu):
// which field cell each padded cell takes (pad, or crop^T for the adjoint),
// and which padded cells each field cell gathers (crop, or pad^T for the
// adjoint). Host and device functions alike, so the kernels' indexing is
// checked against operators/angular_spectrum.cpp's loops on machines without
// a GPU (tests/nefi/operators/angular_spectrum_cells_test.cpp).
#include <cstdint>

#include "nefi/cuda/angular_spectrum_kernels.h"
#include "nefi/cuda/host_device.h"

namespace nefi::cuda {

// The field cell a padded position p replicates (edge padding clamps), or
// -1 (zero padding outside the window), for a field of n cells at offset off.
NEFI_HOST_DEVICE inline int64_t pad_source(int64_t p, int64_t n, int64_t off, bool edge) {
  const int64_t i = p - off;
  if (i >= 0 && i < n) return i;
  if (!edge) return -1;
  return i < 0 ? 0 : n - 1;
}
// The window cell at padded position p, or -1.
NEFI_HOST_DEVICE inline int64_t window_cell(int64_t p, int64_t n, int64_t off) {
  const int64_t i = p - off;
  return i >= 0 && i < n ? i : -1;
}

// The index in u (batch, n0, n1) that padded cell k of (batch, m0, m1) takes:
// pad (adjoint = false) or crop^T (adjoint = true); -1 for a zero.
NEFI_HOST_DEVICE inline int64_t padded_source(const PadGeometry& g, bool adjoint, int64_t k) {
  const int64_t off0 = (g.m0 - g.n0) / 2, off1 = (g.m1 - g.n1) / 2;
  const int64_t q = k % g.m1, p = (k / g.m1) % g.m0, b = k / (g.m0 * g.m1);
  const int64_t i = adjoint ? window_cell(p, g.n0, off0) : pad_source(p, g.n0, off0, g.edge);
  const int64_t j = adjoint ? window_cell(q, g.n1, off1) : pad_source(q, g.n1, off1, g.edge);
  return i >= 0 && j >= 0 ? (b * g.n0 + i) * g.n1 + j : -1;
}

// The padded positions [lo, hi] along an axis that field cell i gathers:
// its window position (crop), widened at the edges to every position that
// replicates it (pad^T of edge padding).
NEFI_HOST_DEVICE inline void gathered_range(int64_t i, int64_t n, int64_t m, bool edge,
                                            bool adjoint, int64_t& lo, int64_t& hi) {
  lo = hi = i + (m - n) / 2;
  if (adjoint && edge) {
    if (i == 0) lo = 0;
    if (i == n - 1) hi = m - 1;
  }
}

}  // namespace nefi::cuda
