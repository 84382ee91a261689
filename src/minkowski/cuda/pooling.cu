// Local and global pooling kernels (f32, f64): one thread per (row, channel),
// each row's terms in the CPU's order, no atomics. The mode is a kernel
// argument (uniform across a launch), not a template parameter: two dtypes x
// five kernels is all this file instantiates.
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "minkowski/cuda/kernels.h"
#include "minkowski/cuda/rounding.cuh"
#include "minkowski/ops/max_order.h"

namespace minkowski::cuda {

namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;

constexpr int kMax = 0, kAverage = 1;

template <typename T>
__global__ void pool_forward_kernel(int mode, const T* src, int64_t cols, const int32_t* begin,
                                    const int32_t* pair, const int32_t* in_rows, int64_t n_out,
                                    T* dst, int32_t* argmax) {
  FK_CUDA_LOOP(t, n_out * cols) {
    const int64_t o = t / cols, c = t - o * cols;
    const int32_t q0 = begin[o], q1 = begin[o + 1];
    if (q0 == q1) {
      dst[t] = T(0);
      if (mode == kMax) argmax[t] = -1;
      continue;
    }
    int32_t arg = in_rows[pair[q0]];
    T acc = src[arg * cols + c];
    for (int32_t q = q0 + 1; q < q1; ++q) {
      const int32_t i = in_rows[pair[q]];
      const T v = src[i * cols + c];
      if (mode != kMax) {
        acc += v;
      } else if (replaces_max(v, acc)) {  // ties keep the first pair
        acc = v;
        arg = i;
      }
    }
    if (mode == kAverage) acc /= static_cast<T>(q1 - q0);
    dst[t] = acc;
    if (mode == kMax) argmax[t] = arg;
  }
}

template <typename T>
__global__ void pool_backward_kernel(int mode, const T* grad, int64_t cols, const int32_t* begin,
                                     const int32_t* pair, const int32_t* out_rows,
                                     const int32_t* out_begin, const int32_t* argmax, int64_t n_in,
                                     T* dst) {
  FK_CUDA_LOOP(t, n_in * cols) {
    const int64_t i = t / cols, c = t - i * cols;
    T acc = T(0);
    for (int32_t q = begin[i]; q < begin[i + 1]; ++q) {
      const int64_t o = out_rows[pair[q]];
      const T g = grad[o * cols + c];
      if (mode == kMax)
        acc += argmax[o * cols + c] == i ? g : T(0);
      else if (mode == kAverage)
        acc += g / static_cast<T>(out_begin[o + 1] - out_begin[o]);
      else
        acc += g;
    }
    dst[t] = acc;
  }
}

template <typename T>
__global__ void group_partials_kernel(int mode, const T* a, const T* b, int64_t cols,
                                      const int32_t* rows, const int64_t* job_begin, int64_t jobs,
                                      T* part, int32_t* part_arg) {
  FK_CUDA_LOOP(t, jobs * cols) {
    const int64_t j = t / cols, c = t - j * cols;
    const int64_t p0 = job_begin[j], p1 = job_begin[j + 1];
    int32_t arg = rows[p0];
    T acc = b ? mul_rn(a[arg * cols + c], b[arg * cols + c]) : a[arg * cols + c];
    for (int64_t p = p0 + 1; p < p1; ++p) {
      const int32_t i = rows[p];
      const T v = b ? mul_rn(a[i * cols + c], b[i * cols + c]) : a[i * cols + c];
      if (mode != kMax) {
        acc += v;
      } else if (replaces_max(v, acc)) {
        acc = v;
        arg = i;
      }
    }
    part[t] = acc;
    if (mode == kMax) part_arg[t] = arg;
  }
}

template <typename T>
__global__ void group_combine_kernel(int mode, const T* part, const int32_t* part_arg,
                                     const int64_t* first, const int64_t* begin, int64_t groups,
                                     int64_t cols, T* out, int32_t* argmax) {
  FK_CUDA_LOOP(t, groups * cols) {
    const int64_t g = t / cols, c = t - g * cols;
    const int64_t j0 = first[g], j1 = first[g + 1];
    if (j0 == j1) {
      out[t] = T(0);
      if (mode == kMax) argmax[t] = -1;
      continue;
    }
    T acc = part[j0 * cols + c];
    int32_t arg = mode == kMax ? part_arg[j0 * cols + c] : 0;
    for (int64_t j = j0 + 1; j < j1; ++j) {
      const T v = part[j * cols + c];
      if (mode != kMax) {
        acc += v;
      } else if (replaces_max(v, acc)) {
        acc = v;
        arg = part_arg[j * cols + c];
      }
    }
    if (mode == kAverage) acc /= static_cast<T>(begin[g + 1] - begin[g]);
    out[t] = acc;
    if (mode == kMax) argmax[t] = arg;
  }
}

template <typename T>
__global__ void group_backward_kernel(int mode, const T* grad, int64_t cols, const int32_t* group,
                                      const int64_t* begin, const int32_t* argmax, int64_t n,
                                      T* dst) {
  FK_CUDA_LOOP(t, n * cols) {
    const int64_t i = t / cols, c = t - i * cols;
    const int64_t g = group[i];
    const T v = grad[g * cols + c];
    if (mode == kMax)
      dst[t] = argmax[g * cols + c] == i ? v : T(0);
    else if (mode == kAverage)
      dst[t] = v / static_cast<T>(begin[g + 1] - begin[g]);
    else
      dst[t] = v;
  }
}

}  // namespace

template <typename T>
void launch_pool_forward(int mode, const T* src, int64_t cols, const int32_t* out_begin,
                         const int32_t* out_pair, const int32_t* in_rows, int64_t n_out, T* dst,
                         int32_t* argmax, void* stream) {
  if (n_out * cols == 0) return;
  pool_forward_kernel<T><<<blocks_for(n_out * cols), kThreads, 0, as_stream(stream)>>>(
      mode, src, cols, out_begin, out_pair, in_rows, n_out, dst, argmax);
  check_launch("minkowski::cuda::launch_pool_forward");
}

template <typename T>
void launch_pool_backward(int mode, const T* grad, int64_t cols, const int32_t* in_begin,
                          const int32_t* in_pair, const int32_t* out_rows, const int32_t* out_begin,
                          const int32_t* argmax, int64_t n_in, T* dst, void* stream) {
  if (n_in * cols == 0) return;
  pool_backward_kernel<T><<<blocks_for(n_in * cols), kThreads, 0, as_stream(stream)>>>(
      mode, grad, cols, in_begin, in_pair, out_rows, out_begin, argmax, n_in, dst);
  check_launch("minkowski::cuda::launch_pool_backward");
}

template <typename T>
void launch_group_partials(int mode, const T* a, const T* b, int64_t cols, const int32_t* rows,
                           const int64_t* job_begin, int64_t jobs, T* part, int32_t* part_arg,
                           void* stream) {
  if (jobs * cols == 0) return;
  group_partials_kernel<T><<<blocks_for(jobs * cols), kThreads, 0, as_stream(stream)>>>(
      mode, a, b, cols, rows, job_begin, jobs, part, part_arg);
  check_launch("minkowski::cuda::launch_group_partials");
}

template <typename T>
void launch_group_combine(int mode, const T* part, const int32_t* part_arg, const int64_t* first,
                          const int64_t* begin, int64_t groups, int64_t cols, T* out,
                          int32_t* argmax, void* stream) {
  if (groups * cols == 0) return;
  group_combine_kernel<T><<<blocks_for(groups * cols), kThreads, 0, as_stream(stream)>>>(
      mode, part, part_arg, first, begin, groups, cols, out, argmax);
  check_launch("minkowski::cuda::launch_group_combine");
}

template <typename T>
void launch_group_backward(int mode, const T* grad, int64_t cols, const int32_t* group,
                           const int64_t* begin, const int32_t* argmax, int64_t n, T* dst,
                           void* stream) {
  if (n * cols == 0) return;
  group_backward_kernel<T><<<blocks_for(n * cols), kThreads, 0, as_stream(stream)>>>(
      mode, grad, cols, group, begin, argmax, n, dst);
  check_launch("minkowski::cuda::launch_group_backward");
}

#define MK_POOLING_LAUNCHERS(T)                                                                  \
  template void launch_pool_forward<T>(int, const T*, int64_t, const int32_t*, const int32_t*,   \
                                       const int32_t*, int64_t, T*, int32_t*, void*);            \
  template void launch_pool_backward<T>(int, const T*, int64_t, const int32_t*, const int32_t*,  \
                                        const int32_t*, const int32_t*, const int32_t*, int64_t, \
                                        T*, void*);                                              \
  template void launch_group_partials<T>(int, const T*, const T*, int64_t, const int32_t*,       \
                                         const int64_t*, int64_t, T*, int32_t*, void*);          \
  template void launch_group_combine<T>(int, const T*, const int32_t*, const int64_t*,           \
                                        const int64_t*, int64_t, int64_t, T*, int32_t*, void*);  \
  template void launch_group_backward<T>(int, const T*, int64_t, const int32_t*, const int64_t*, \
                                         const int32_t*, int64_t, T*, void*);
MK_POOLING_LAUNCHERS(float)
MK_POOLING_LAUNCHERS(double)
#undef MK_POOLING_LAUNCHERS

}  // namespace minkowski::cuda
