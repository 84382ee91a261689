// Coordinate-list products (spmm.h) on the device, f32 and f64: one thread per
// output element walks its terms in the CPU's order, no atomics, products
// rounded before the adds, so the sums are the CPU's.
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "minkowski/cuda/kernels.h"
#include "minkowski/cuda/rounding.cuh"

namespace minkowski::cuda {

namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;

template <typename T>
__global__ void csr_rows_kernel(const int64_t* begin, const int64_t* entry, const int64_t* src,
                                const T* v, const T* in, int64_t cols, int64_t rows, T* out) {
  FK_CUDA_LOOP(t, rows * cols) {
    const int64_t r = t / cols, c = t - r * cols;
    T acc = T(0);
    for (int64_t e = begin[r]; e < begin[r + 1]; ++e)
      acc += mul_rn(v[entry[e]], in[src[e] * cols + c]);
    out[t] = acc;
  }
}

template <typename T>
__global__ void row_dots_kernel(const int64_t* a_row, const int64_t* b_row, const T* a, const T* b,
                                int64_t cols, int64_t n, T* out) {
  FK_CUDA_LOOP(p, n) {
    const T* x = a + a_row[p] * cols;
    const T* y = b + b_row[p] * cols;
    T acc = T(0);
    for (int64_t c = 0; c < cols; ++c) acc += mul_rn(x[c], y[c]);
    out[p] = acc;
  }
}

}  // namespace

template <typename T>
void launch_csr_rows(const int64_t* begin, const int64_t* entry, const int64_t* src, const T* v,
                     const T* in, int64_t cols, int64_t rows, T* out, void* stream) {
  if (rows * cols == 0) return;
  csr_rows_kernel<T><<<blocks_for(rows * cols), kThreads, 0, as_stream(stream)>>>(
      begin, entry, src, v, in, cols, rows, out);
  check_launch("minkowski::cuda::launch_csr_rows");
}

template <typename T>
void launch_row_dots(const int64_t* a_row, const int64_t* b_row, const T* a, const T* b,
                     int64_t cols, int64_t n, T* out, void* stream) {
  if (n == 0) return;
  row_dots_kernel<T>
      <<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(a_row, b_row, a, b, cols, n, out);
  check_launch("minkowski::cuda::launch_row_dots");
}

#define MK_SPMM_LAUNCHERS(T)                                                                    \
  template void launch_csr_rows<T>(const int64_t*, const int64_t*, const int64_t*, const T*,    \
                                   const T*, int64_t, int64_t, T*, void*);                      \
  template void launch_row_dots<T>(const int64_t*, const int64_t*, const T*, const T*, int64_t, \
                                   int64_t, T*, void*);
MK_SPMM_LAUNCHERS(float)
MK_SPMM_LAUNCHERS(double)
#undef MK_SPMM_LAUNCHERS

}  // namespace minkowski::cuda
