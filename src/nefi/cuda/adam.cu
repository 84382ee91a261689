// The AdamW kernels (adam_kernels.h): the gradient's squared norm in two
// fixed-order passes, the fused elementwise update (scalars as arguments, or
// read from a device step block), and the gather of a step's loss scalars.
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "nefi/cuda/adam_kernels.h"
#include "nefi/solve/device_step_slots.h"

namespace nefi::cuda {
namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;

// Enough blocks to fill a GPU; each walks a fixed strided share.
constexpr int64_t kMaxSumBlocks = 1024;

// Tree-sums the block's kThreads values in shared memory (fixed shape);
// thread 0 returns the total.
__device__ double block_sum(double* shared, double mine) {
  shared[threadIdx.x] = mine;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride)
      shared[threadIdx.x] = __dadd_rn(shared[threadIdx.x], shared[threadIdx.x + stride]);
    __syncthreads();
  }
  return shared[0];
}

template <typename T>
__global__ void sum_sq_kernel(const T* g, int64_t n, double* partials) {
  __shared__ double shared[kThreads];
  double s = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < n; i += stride) {
    const double gi = static_cast<double>(g[i]);
    s = __dadd_rn(s, __dmul_rn(gi, gi));
  }
  const double total = block_sum(shared, s);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

__global__ void sum_partials_kernel(const double* partials, int64_t count, double* out) {
  __shared__ double shared[kThreads];
  double s = 0;
  for (int64_t i = threadIdx.x; i < count; i += kThreads) s = __dadd_rn(s, partials[i]);
  const double total = block_sum(shared, s);
  if (threadIdx.x == 0) *out = total;
}

// Correctly rounded T arithmetic, so nvcc cannot contract into FMAs.
template <typename T>
struct RoundedOps;
template <>
struct RoundedOps<float> {
  __device__ static float add(float a, float b) { return __fadd_rn(a, b); }
  __device__ static float sub(float a, float b) { return __fsub_rn(a, b); }
  __device__ static float mul(float a, float b) { return __fmul_rn(a, b); }
  __device__ static float quot(float a, float b) { return __fdiv_rn(a, b); }
  __device__ static float root(float a) { return __fsqrt_rn(a); }
};
template <>
struct RoundedOps<double> {
  __device__ static double add(double a, double b) { return __dadd_rn(a, b); }
  __device__ static double sub(double a, double b) { return __dsub_rn(a, b); }
  __device__ static double mul(double a, double b) { return __dmul_rn(a, b); }
  __device__ static double quot(double a, double b) { return __ddiv_rn(a, b); }
  __device__ static double root(double a) { return __dsqrt_rn(a); }
};

template <typename T>
__device__ void adam_update_loop(T* x, const T* g, T* m, T* v, int64_t n, const AdamScalars<T>& s) {
  using R = RoundedOps<T>;
  FK_CUDA_LOOP(i, n) {
    const T xi = x[i];
    // No decay adds nothing (0 * inf would be NaN), as on the host.
    const T gi =
        s.l2 != T(0) ? R::add(R::mul(g[i], s.clip), R::mul(s.l2, xi)) : R::mul(g[i], s.clip);
    const T mi = R::add(R::mul(s.b1, m[i]), R::mul(s.one_b1, gi));
    const T vi = R::add(R::mul(s.b2, v[i]), R::mul(R::mul(s.one_b2, gi), gi));
    m[i] = mi;
    v[i] = vi;
    x[i] = R::sub(R::mul(xi, s.decay),
                  R::quot(R::mul(s.step, mi), R::add(R::mul(R::root(vi), s.inv_sqrt_bc2), s.eps)));
  }
}

template <typename T>
__global__ void adam_update_kernel(T* x, const T* g, T* m, T* v, int64_t n, AdamScalars<T> s) {
  adam_update_loop(x, g, m, v, n, s);
}

template <typename T>
__global__ void adam_update_gated_kernel(T* x, const T* g, T* m, T* v, int64_t n,
                                         const double* block) {
  if (!isfinite(block[kSlotTotal])) return;  // the NaN guard's skipped step
  // FusedOptimizer::step's clip factor, each operation correctly rounded as on the host.
  const double threshold = block[kSlotGradClip];
  double clip = 1.0;
  if (threshold > 0) {
    const double norm = __dsqrt_rn(block[kSlotSqSum]);
    if (norm > threshold) clip = __ddiv_rn(threshold, __dadd_rn(norm, 1e-6));
  }
  const double* a = block + kSlotAdamScalars;
  const AdamScalars<T> s{static_cast<T>(clip),
                         static_cast<T>(a[1]),
                         static_cast<T>(a[2]),
                         static_cast<T>(a[3]),
                         static_cast<T>(a[4]),
                         static_cast<T>(a[5]),
                         static_cast<T>(a[6]),
                         static_cast<T>(a[7]),
                         static_cast<T>(__dsub_rn(1.0, a[3])),
                         static_cast<T>(__dsub_rn(1.0, a[4]))};
  adam_update_loop(x, g, m, v, n, s);
}

__global__ void gather_scalars_kernel(GatherSources src, double* out) {
  for (int i = 0; i < src.count; ++i) {
    const void* p = src.ptr[i];
    out[i] = p == nullptr ? 0.0
             : src.f64[i] ? *static_cast<const double*>(p)
                          : static_cast<double>(*static_cast<const float*>(p));
  }
}

}  // namespace

int64_t sum_sq_blocks(int64_t n) {
  const int64_t b = static_cast<int64_t>(blocks_for(n));
  return b < kMaxSumBlocks ? b : kMaxSumBlocks;
}

template <typename T>
void launch_sum_sq_partials(const T* g, int64_t n, double* partials, void* stream) {
  const auto blocks = static_cast<unsigned>(sum_sq_blocks(n));
  sum_sq_kernel<T><<<blocks, kThreads, 0, as_stream(stream)>>>(g, n, partials);
  check_launch("nefi::cuda::sum_sq_partials");
}

void launch_sum_partials(const double* partials, int64_t count, double* out, void* stream) {
  sum_partials_kernel<<<1, kThreads, 0, as_stream(stream)>>>(partials, count, out);
  check_launch("nefi::cuda::sum_partials");
}

template <typename T>
void launch_adam_update(T* x, const T* g, T* m, T* v, int64_t n, const AdamScalars<T>& s,
                        void* stream) {
  if (n == 0) return;
  adam_update_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(x, g, m, v, n, s);
  check_launch("nefi::cuda::adam_update");
}

template <typename T>
void launch_adam_update_gated(T* x, const T* g, T* m, T* v, int64_t n, const double* block,
                              void* stream) {
  if (n == 0) return;
  adam_update_gated_kernel<T>
      <<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(x, g, m, v, n, block);
  check_launch("nefi::cuda::adam_update_gated");
}

void launch_gather_scalars(const GatherSources& src, double* out, void* stream) {
  gather_scalars_kernel<<<1, 1, 0, as_stream(stream)>>>(src, out);
  check_launch("nefi::cuda::gather_scalars");
}

template void launch_sum_sq_partials<float>(const float*, int64_t, double*, void*);
template void launch_sum_sq_partials<double>(const double*, int64_t, double*, void*);
template void launch_adam_update<float>(float*, const float*, float*, float*, int64_t,
                                        const AdamScalars<float>&, void*);
template void launch_adam_update<double>(double*, const double*, double*, double*, int64_t,
                                         const AdamScalars<double>&, void*);
template void launch_adam_update_gated<float>(float*, const float*, float*, float*, int64_t,
                                              const double*, void*);
template void launch_adam_update_gated<double>(double*, const double*, double*, double*, int64_t,
                                               const double*, void*);

}  // namespace nefi::cuda
