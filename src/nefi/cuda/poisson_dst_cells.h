#pragma once
// The index arithmetic of the Poisson DST solve's kernels (poisson_dst.cu):
// which field cell (and sign) each cell of the odd extension takes, where a
// field cell sits in the extension, and which DST mode each extended
// frequency carries. Host and device functions alike, so the device solve
// is rebuilt from them on the host with the CPU FFT and checked against
// operators/poisson_dst.cpp without a GPU
// (tests/nefi/operators/poisson_dst_cells_test.cpp).
//
// Why it works: along an axis of n cells, the DFT (length 2n) of the odd
// extension y = (x_0, ..., x_{n-1}, -x_{n-1}, ..., -x_0) is
//   Y_m = -2i e^{+i pi m / 2n} X_{m-1}        (1 <= m <= n)
//   Y_m = +2i e^{-i pi m' / 2n} X_{m'-1}      (m' = 2n - m, n < m < 2n)
//   Y_0 = 0
// with X the unnormalised DST-II, X_k = sum_i x_i sin(pi (k+1)(i+1/2)/n).
// Every frequency is a fixed multiple of one DST coefficient, so dividing
// each by its mode's eigenvalue and transforming back gives the odd
// extension of U^-1 diag(1/lambda) U x -- which is the operator's
// S^T diag(1/lambda) S x, the orthonormal scaling of S = C U being diagonal
// and commuting with diag(1/lambda). Separable, so the same holds in 2-D and
// 3-D with one multi-dimensional FFT each way.
#include <cstdint>

#include "nefi/cuda/host_device.h"
#include "nefi/cuda/poisson_dst_kernels.h"

namespace nefi::cuda {

// The index into f (batch, n...) that extended cell k of (batch, 2n...)
// mirrors, with the sign of the mirror image in `sign` (+1 or -1).
NEFI_HOST_DEVICE inline int64_t odd_extension_source(const OddExtension& g, int64_t k,
                                                     double& sign) {
  int64_t rem = k, src = 0, stride = 1;
  sign = 1.0;
  for (int a = kOddExtensionAxes - 1; a >= 0; --a) {
    if (a >= g.ndim) continue;
    const int64_t n = g.n[a], p = rem % (2 * n);
    rem /= 2 * n;
    if (p >= n) sign = -sign;
    src += (p < n ? p : 2 * n - 1 - p) * stride;
    stride *= n;
  }
  return rem * stride + src;  // rem is the batch row, stride the field's cells
}

// The index into the extension (batch, 2n...) of field cell k of (batch, n...).
NEFI_HOST_DEVICE inline int64_t box_position(const OddExtension& g, int64_t k) {
  int64_t rem = k, at = 0, stride = 1;
  for (int a = kOddExtensionAxes - 1; a >= 0; --a) {
    if (a >= g.ndim) continue;
    at += (rem % g.n[a]) * stride;
    rem /= g.n[a];
    stride *= 2 * g.n[a];
  }
  return rem * stride + at;
}

// The DST mode (C order over (k_0, ...), as PoissonOperator::eigenvalues())
// that extended frequency p < extended_cells carries, or -1 where some axis
// is at frequency 0 (always zero in an odd extension's spectrum).
NEFI_HOST_DEVICE inline int64_t extended_mode(const OddExtension& g, int64_t p) {
  int64_t rem = p, mode = 0, stride = 1;
  for (int a = kOddExtensionAxes - 1; a >= 0; --a) {
    if (a >= g.ndim) continue;
    const int64_t n = g.n[a], m = rem % (2 * n);
    rem /= 2 * n;
    if (m == 0) return -1;
    mode += (m <= n ? m - 1 : 2 * n - m - 1) * stride;
    stride *= n;
  }
  return mode;
}

}  // namespace nefi::cuda
