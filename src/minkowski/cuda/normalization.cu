// Segment normalization kernels (normalization.h): the statistics' blocked
// f64 sums and the per-element affine passes, in the CPU's order and without
// contracting products into adds (the CPU build does not contract), so the
// results are the CPU's. A null seg means one segment (every row in segment
// 0: BatchNorm), so nothing per row is uploaded for it.
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
__global__ void segment_sums_kernel(int kind, const T* x, const T* g, int64_t n, int64_t cols,
                                    const int32_t* seg, int64_t segments, int64_t block_rows,
                                    const double* mean, const double* invstd, double* part) {
  const int64_t blocks = (n + block_rows - 1) / block_rows, plane = segments * cols;
  const int64_t width = (kind == 2 ? 2 : 1) * plane;
  FK_CUDA_LOOP(t, blocks * cols) {
    const int64_t b = t / cols, c = t - b * cols;
    double* p = part + b * width + c;
    const int64_t end = b * block_rows + block_rows < n ? b * block_rows + block_rows : n;
    for (int64_t i = b * block_rows; i < end; ++i) {
      const int64_t s = seg != nullptr ? seg[i] * cols : 0;
      const double v = static_cast<double>(x[i * cols + c]);
      if (kind == 0) {
        p[s] += v;
      } else if (kind == 1) {
        const double d = v - mean[s + c];
        p[s] += mul_rn(d, d);
      } else {
        const double gv = static_cast<double>(g[i * cols + c]);
        p[s] += gv;
        p[plane + s] += mul_rn(gv, mul_rn(v - mean[s + c], invstd[s + c]));
      }
    }
  }
}

__global__ void sum_blocks_kernel(const double* part, int64_t blocks, int64_t width, double* out) {
  FK_CUDA_LOOP(j, width) {
    double acc = 0.0;
    for (int64_t b = 0; b < blocks; ++b) acc += part[b * width + j];
    out[j] = acc;
  }
}

template <typename T>
__global__ void segment_affine_kernel(const T* x, const T* g, int64_t n, int64_t cols,
                                      const int32_t* seg, const T* coef, int64_t stride, T* y) {
  FK_CUDA_LOOP(t, n * cols) {
    const int64_t i = t / cols, c = t - i * cols;
    const int64_t k = (seg != nullptr ? seg[i] * cols : 0) + c;
    const T centred = x[t] - coef[k] - coef[stride + k];
    const T s = coef[2 * stride + k], u = coef[3 * stride + k];
    if (g == nullptr)
      y[t] = mul_rn(centred, s) + u;
    else
      y[t] = mul_rn(g[t], s) - mul_rn(centred, u) - coef[4 * stride + k];
  }
}

}  // namespace

template <typename T>
void launch_segment_sums(int kind, const T* x, const T* g, int64_t n, int64_t cols,
                         const int32_t* seg, int64_t segments, int64_t block_rows,
                         const double* mean, const double* invstd, double* part, void* stream) {
  const int64_t blocks = (n + block_rows - 1) / block_rows;
  if (blocks * cols == 0) return;
  segment_sums_kernel<T><<<blocks_for(blocks * cols), kThreads, 0, as_stream(stream)>>>(
      kind, x, g, n, cols, seg, segments, block_rows, mean, invstd, part);
  check_launch("minkowski::cuda::launch_segment_sums");
}

void launch_sum_blocks(const double* part, int64_t blocks, int64_t width, double* out,
                       void* stream) {
  if (width == 0) return;
  sum_blocks_kernel<<<blocks_for(width), kThreads, 0, as_stream(stream)>>>(part, blocks, width,
                                                                           out);
  check_launch("minkowski::cuda::launch_sum_blocks");
}

template <typename T>
void launch_segment_affine(const T* x, const T* g, int64_t n, int64_t cols, const int32_t* seg,
                           const T* coef, int64_t coef_stride, T* y, void* stream) {
  if (n * cols == 0) return;
  segment_affine_kernel<T><<<blocks_for(n * cols), kThreads, 0, as_stream(stream)>>>(
      x, g, n, cols, seg, coef, coef_stride, y);
  check_launch("minkowski::cuda::launch_segment_affine");
}

#define MK_NORMALIZATION_LAUNCHERS(T)                                                             \
  template void launch_segment_sums<T>(int, const T*, const T*, int64_t, int64_t, const int32_t*, \
                                       int64_t, int64_t, const double*, const double*, double*,   \
                                       void*);                                                    \
  template void launch_segment_affine<T>(const T*, const T*, int64_t, int64_t, const int32_t*,    \
                                         const T*, int64_t, T*, void*);
MK_NORMALIZATION_LAUNCHERS(float)
MK_NORMALIZATION_LAUNCHERS(double)
#undef MK_NORMALIZATION_LAUNCHERS

}  // namespace minkowski::cuda
