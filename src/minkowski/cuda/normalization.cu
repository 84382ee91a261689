// Segment normalization kernels (normalization.h): the statistics' blocked
// f64 sums and the per-element affine passes, in the CPU's order and without
// contracting products into adds (the CPU build does not contract), so the
// results are the CPU's. A null seg means one segment (every row in segment
// 0: BatchNorm), so nothing per row is uploaded for it. The statistics between
// the passes (means, inverse deviations, coefficients, the parameters'
// gradients, running statistics) are formed here too, so a normalization on
// the device reads nothing back to the host.
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
    // This thread's entries (its block and channel, every segment and term).
    for (int64_t e = 0; e < width; e += cols) p[e] = 0.0;
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

__global__ void norm_moments_kernel(int stage, const double* sums, const int64_t* rows,
                                    int64_t single_rows, double eps, double* moments, int64_t sc,
                                    int64_t cols) {
  double *mean = moments, *var = moments + sc, *invstd = moments + 2 * sc, *n = moments + 3 * sc;
  FK_CUDA_LOOP(k, sc) {
    if (stage == 0) {
      n[k] = static_cast<double>(rows != nullptr ? rows[k / cols] : single_rows);
      mean[k] = sums[k] / n[k];
      continue;
    }
    if (stage == 1) var[k] = sums[k] / n[k];
    invstd[k] = 1.0 / sqrt(var[k] + eps);
  }
}

template <typename T>
__global__ void norm_forward_coefficients_kernel(const double* moments, int64_t sc, int64_t cols,
                                                 const T* w, const T* b, T* coef) {
  FK_CUDA_LOOP(k, sc) {
    const int64_t c = k % cols;
    const double mean = moments[k], invstd = moments[2 * sc + k];
    const T m = static_cast<T>(mean);
    coef[k] = m;
    coef[sc + k] = static_cast<T>(mean - static_cast<double>(m));
    coef[2 * sc + k] = static_cast<T>(mul_rn(invstd, w ? static_cast<double>(w[c]) : 1.0));
    coef[3 * sc + k] = b ? b[c] : T(0);
  }
}

template <typename T>
__global__ void norm_backward_coefficients_kernel(const double* sums, const double* moments,
                                                  int64_t sc, int64_t cols, int64_t segments,
                                                  const T* w, bool batch_stats, T* coef, double* dw,
                                                  double* db) {
  FK_CUDA_LOOP(k, sc) {
    const int64_t c = k % cols;
    const double mean = moments[k], invstd = moments[2 * sc + k];
    const double a = mul_rn(w ? static_cast<double>(w[c]) : 1.0, invstd);
    const T m = static_cast<T>(mean);
    coef[k] = m;
    coef[sc + k] = static_cast<T>(mean - static_cast<double>(m));
    coef[2 * sc + k] = static_cast<T>(a);
    T u = T(0), v = T(0);
    if (batch_stats) {
      const double inv_n = 1.0 / moments[3 * sc + k];
      u = static_cast<T>(mul_rn(mul_rn(mul_rn(a, invstd), sums[sc + k]), inv_n));
      v = static_cast<T>(mul_rn(mul_rn(a, sums[k]), inv_n));
    }
    coef[3 * sc + k] = u;
    coef[4 * sc + k] = v;
    if (k < cols) {  // channel k's parameter gradients, segments in order
      double sw = 0.0, sb = 0.0;
      for (int64_t s = 0; s < segments; ++s) {
        sb += sums[s * cols + k];
        sw += sums[sc + s * cols + k];
      }
      dw[k] = sw;
      db[k] = sb;
    }
  }
}

template <typename S>
__global__ void norm_running_update_kernel(const double* moments, int64_t cols, double m,
                                           double unbias, S* running_mean, S* running_var) {
  FK_CUDA_LOOP(c, cols) {
    const double rm = static_cast<double>(running_mean[c]);
    const double rv = static_cast<double>(running_var[c]);
    running_mean[c] = static_cast<S>(mul_rn(1 - m, rm) + mul_rn(m, moments[c]));
    running_var[c] =
        static_cast<S>(mul_rn(1 - m, rv) + mul_rn(mul_rn(m, moments[cols + c]), unbias));
  }
}

}  // namespace

void launch_norm_moments(int stage, const double* sums, const int64_t* rows, int64_t single_rows,
                         double eps, double* moments, int64_t sc, int64_t cols, void* stream) {
  if (sc == 0) return;
  norm_moments_kernel<<<blocks_for(sc), kThreads, 0, as_stream(stream)>>>(
      stage, sums, rows, single_rows, eps, moments, sc, cols);
  check_launch("minkowski::cuda::launch_norm_moments");
}

template <typename T>
void launch_norm_forward_coefficients(const double* moments, int64_t sc, int64_t cols, const T* w,
                                      const T* b, T* coef, void* stream) {
  if (sc == 0) return;
  norm_forward_coefficients_kernel<T>
      <<<blocks_for(sc), kThreads, 0, as_stream(stream)>>>(moments, sc, cols, w, b, coef);
  check_launch("minkowski::cuda::launch_norm_forward_coefficients");
}

template <typename T>
void launch_norm_backward_coefficients(const double* sums, const double* moments, int64_t sc,
                                       int64_t cols, int64_t segments, const T* w, bool batch_stats,
                                       T* coef, double* dw, double* db, void* stream) {
  if (sc == 0) return;
  norm_backward_coefficients_kernel<T><<<blocks_for(sc), kThreads, 0, as_stream(stream)>>>(
      sums, moments, sc, cols, segments, w, batch_stats, coef, dw, db);
  check_launch("minkowski::cuda::launch_norm_backward_coefficients");
}

template <typename S>
void launch_norm_running_update(const double* moments, int64_t cols, double m, double unbias,
                                S* running_mean, S* running_var, void* stream) {
  if (cols == 0) return;
  norm_running_update_kernel<S><<<blocks_for(cols), kThreads, 0, as_stream(stream)>>>(
      moments, cols, m, unbias, running_mean, running_var);
  check_launch("minkowski::cuda::launch_norm_running_update");
}

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
                                         const T*, int64_t, T*, void*);                           \
  template void launch_norm_forward_coefficients<T>(const double*, int64_t, int64_t, const T*,    \
                                                    const T*, T*, void*);                         \
  template void launch_norm_backward_coefficients<T>(const double*, const double*, int64_t,       \
                                                     int64_t, int64_t, const T*, bool, T*,        \
                                                     double*, double*, void*);                    \
  template void launch_norm_running_update<T>(const double*, int64_t, double, double, T*, T*,     \
                                              void*);
MK_NORMALIZATION_LAUNCHERS(float)
MK_NORMALIZATION_LAUNCHERS(double)
#undef MK_NORMALIZATION_LAUNCHERS

}  // namespace minkowski::cuda
