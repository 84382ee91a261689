// The MLP layer's elementwise kernels (mlp_kernels.h): the bias + activation
// epilogue of the forward GEMM, and the activation gradient with the bias
// gradient's column sums in two fixed-order passes.
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "fk/ops/unary_formulas.h"
#include "nefi/cuda/mlp_kernels.h"

namespace nefi::cuda {
namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;
using fk::cuda::detail::Num;

constexpr int64_t kMaxGridY = 65535;

// The angle w0 z rounded once, as the CPU's mul-then-sin chain rounds it.
__device__ inline float angle(float w0, float z) {
  return __fmul_rn(w0, z);
}

__device__ inline float activate(int act, float v, float w0) {
  switch (act) {
    case kMlpTanh:
      return tanhf(v);
    case kMlpRelu:
      return fk::unary_formulas::relu(v);
    case kMlpSine:
      return sinf(angle(w0, v));
    default:
      return v;
  }
}

// g act'(.) with each product rounded (no contraction), as the CPU loops.
__device__ inline float activation_grad(int act, float g, float ref, float w0) {
  switch (act) {
    case kMlpTanh:
      return __fmul_rn(g, __fsub_rn(1.f, __fmul_rn(ref, ref)));
    case kMlpRelu:
      return ref > 0.f ? g : 0.f;
    case kMlpSine:
      return __fmul_rn(__fmul_rn(g, cosf(angle(w0, ref))), w0);
    default:
      return g;
  }
}

__global__ void bias_activation_kernel(const float* acc, const float* bias, int64_t n, int64_t out,
                                       int act, float w0, float* y, float* z) {
  FK_CUDA_LOOP(i, n * out) {
    const float v = __fadd_rn(acc[i], bias[i % out]);
    if (z) z[i] = v;
    y[i] = activate(act, v, w0);
  }
}

// Block (x: a chunk of kGradChunkRows rows, y: a run of columns, and every
// gridDim.y-th run after it: gridDim.y stops at 65535); a thread walks one
// column of its chunk at a time (neighbouring threads read neighbouring
// columns of a row: coalesced), each column's sum in row order.
template <typename T>
__global__ void activation_grad_kernel(const float* g, const float* ref, int64_t n, int64_t out,
                                       int act, float w0, T* gz, float* partials) {
  const int64_t r0 = blockIdx.x * kGradChunkRows;
  const int64_t r1 = r0 + kGradChunkRows < n ? r0 + kGradChunkRows : n;
  const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.x;
  for (int64_t c = blockIdx.y * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < out;
       c += stride) {
    float sum = 0.f;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t i = r * out + c;
      const float v = activation_grad(act, g[i], ref ? ref[i] : 0.f, w0);
      gz[i] = Num<T>::store(v);
      sum = __fadd_rn(sum, v);
    }
    partials[blockIdx.x * out + c] = sum;
  }
}

__global__ void column_sums_kernel(const float* partials, int64_t chunks, int64_t out, float* db) {
  FK_CUDA_LOOP(c, out) {
    float sum = 0.f;
    for (int64_t k = 0; k < chunks; ++k) sum = __fadd_rn(sum, partials[k * out + c]);
    db[c] = sum;
  }
}

}  // namespace

void launch_bias_activation(const float* acc, const float* bias, int64_t n, int64_t out, int act,
                            float w0, float* y, float* z, void* stream) {
  if (n * out == 0) return;
  bias_activation_kernel<<<blocks_for(n * out), kThreads, 0, as_stream(stream)>>>(acc, bias, n, out,
                                                                                  act, w0, y, z);
  check_launch("nefi::cuda::launch_bias_activation");
}

void launch_activation_grad(const float* g, const float* ref, int64_t n, int64_t out, int act,
                            float w0, void* gz, int gz_dtype, float* partials, void* stream) {
  if (n * out == 0) return;
  const int64_t warps = (out + 31) / 32;
  const int threads = static_cast<int>(warps < 4 ? warps * 32 : 128);
  // gridDim.y <= 65535: wider layers (out past 65535 x 128 = 8,388,480
  // columns) loop over their column runs in the kernel.
  const int64_t runs = (out + threads - 1) / threads;
  const dim3 grid(static_cast<unsigned>(grad_chunks(n)),
                  static_cast<unsigned>(runs < kMaxGridY ? runs : kMaxGridY));
  auto run = [&](auto* typed) {
    activation_grad_kernel<<<grid, threads, 0, as_stream(stream)>>>(g, ref, n, out, act, w0, typed,
                                                                    partials);
  };
  switch (gz_dtype) {
    case fk::cuda::kF32:
      run(static_cast<float*>(gz));
      break;
    case fk::cuda::kF16:
      run(static_cast<__half*>(gz));
      break;
    case fk::cuda::kBF16:
      run(static_cast<__nv_bfloat16*>(gz));
      break;
    default:
      fk::cuda::detail::unsupported("nefi::cuda::launch_activation_grad", "gz in f32, f16 or bf16",
                                    gz_dtype);
  }
  check_launch("nefi::cuda::launch_activation_grad");
}

void launch_column_sums(const float* partials, int64_t chunks, int64_t out, float* db,
                        void* stream) {
  if (out == 0) return;
  column_sums_kernel<<<blocks_for(out), kThreads, 0, as_stream(stream)>>>(partials, chunks, out,
                                                                          db);
  check_launch("nefi::cuda::launch_column_sums");
}

}  // namespace nefi::cuda
