#pragma once
// The per-output arithmetic of the Radon kernels (radon.cu): which entries
// an output element sums and in what order. Host and device functions alike,
// so the kernels' indexing is checked against operators/radon.cpp's loops on
// machines without a GPU (tests/nefi/operators/radon_cells_test.cpp).
#include <cstdint>

#include "nefi/cuda/host_device.h"
#include "nefi/cuda/radon_kernels.h"

namespace nefi::cuda {

// acc + w v with the product rounded before the sum: what the CPU loop
// (baseline x86-64, no FMA) computes; nvcc would otherwise contract it.
NEFI_HOST_DEVICE inline double add_product(double acc, double w, double v) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(acc, __dmul_rn(w, v));
#else
  return acc + w * v;
#endif
}

// Output element k of (batch, rows, inner): its row's entries applied to the
// matching slice of src, summed from 0 in entry order.
template <typename T>
NEFI_HOST_DEVICE inline double gathered_value(const GatherGeometry& g, const int64_t* row_start,
                                              const int32_t* col, const double* weight,
                                              const T* src, int64_t k) {
  const int64_t z = k % g.inner, r = (k / g.inner) % g.rows, b = k / (g.inner * g.rows);
  const T* slice = src + b * g.src_rows * g.inner + z;
  double acc = 0.0;
  for (int64_t e = row_start[r]; e < row_start[r + 1]; ++e)
    acc = add_product(acc, weight[e], static_cast<double>(slice[col[e] * g.inner]));
  return acc;
}

}  // namespace nefi::cuda
