// Channelwise convolution kernels (conv_channelwise.cpp's sums on the
// device), f32 and f64: one thread per (row, channel) or (job, channel) walks
// its pairs in the CPU's order, no atomics, products rounded before the adds.
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

// The offset of pair p: the largest k with offset_begin[k] <= p (empty
// offsets repeat a bound; the CPU's upper_bound - 1 picks the same k).
__device__ inline int64_t offset_of(const int64_t* offset_begin, int64_t volume, int64_t p) {
  int64_t lo = 0, hi = volume;  // offset_begin[lo] <= p < offset_begin[hi]
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    if (offset_begin[mid] <= p)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

template <typename T>
__global__ void channelwise_rows_kernel(const T* src, const T* w, int64_t cols,
                                        const int32_t* begin, const int32_t* pair,
                                        const int32_t* other, const int64_t* offset_begin,
                                        int64_t volume, int64_t rows, T* dst) {
  FK_CUDA_LOOP(t, rows * cols) {
    const int64_t r = t / cols, c = t - r * cols;
    T acc = T(0);
    for (int32_t e = begin[r]; e < begin[r + 1]; ++e) {
      const int32_t q = pair[e];
      const int64_t k = offset_of(offset_begin, volume, q);
      acc += mul_rn(src[static_cast<int64_t>(other[q]) * cols + c], w[k * cols + c]);
    }
    dst[t] = acc;
  }
}

template <typename T>
__global__ void pair_product_partials_kernel(const T* f, const T* g, int64_t cols,
                                             const int32_t* in_rows, const int32_t* out_rows,
                                             const int64_t* job_begin, int64_t jobs, T* part) {
  FK_CUDA_LOOP(t, jobs * cols) {
    const int64_t j = t / cols, c = t - j * cols;
    T acc = T(0);
    for (int64_t p = job_begin[j]; p < job_begin[j + 1]; ++p)
      acc += mul_rn(f[static_cast<int64_t>(in_rows[p]) * cols + c],
                    g[static_cast<int64_t>(out_rows[p]) * cols + c]);
    part[t] = acc;
  }
}

}  // namespace

template <typename T>
void launch_channelwise_rows(const T* src, const T* w, int64_t cols, const int32_t* begin,
                             const int32_t* pair, const int32_t* other, const int64_t* offset_begin,
                             int64_t volume, int64_t rows, T* dst, void* stream) {
  if (rows * cols == 0) return;
  channelwise_rows_kernel<T><<<blocks_for(rows * cols), kThreads, 0, as_stream(stream)>>>(
      src, w, cols, begin, pair, other, offset_begin, volume, rows, dst);
  check_launch("minkowski::cuda::launch_channelwise_rows");
}

template <typename T>
void launch_pair_product_partials(const T* f, const T* g, int64_t cols, const int32_t* in_rows,
                                  const int32_t* out_rows, const int64_t* job_begin, int64_t jobs,
                                  T* part, void* stream) {
  if (jobs * cols == 0) return;
  pair_product_partials_kernel<T><<<blocks_for(jobs * cols), kThreads, 0, as_stream(stream)>>>(
      f, g, cols, in_rows, out_rows, job_begin, jobs, part);
  check_launch("minkowski::cuda::launch_pair_product_partials");
}

#define MK_CHANNELWISE_LAUNCHERS(T)                                                          \
  template void launch_channelwise_rows<T>(const T*, const T*, int64_t, const int32_t*,      \
                                           const int32_t*, const int32_t*, const int64_t*,   \
                                           int64_t, int64_t, T*, void*);                     \
  template void launch_pair_product_partials<T>(const T*, const T*, int64_t, const int32_t*, \
                                                const int32_t*, const int64_t*, int64_t, T*, \
                                                void*);
MK_CHANNELWISE_LAUNCHERS(float)
MK_CHANNELWISE_LAUNCHERS(double)
#undef MK_CHANNELWISE_LAUNCHERS

}  // namespace minkowski::cuda
