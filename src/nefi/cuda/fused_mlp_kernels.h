#pragma once
// Launchers of the fully fused coordinate MLP (fused_mlp.cu): raw device
// pointers, a stream (a cudaStream_t as void*), no CUDA types, so the host
// side (fused_mlp.cpp) is plain C++. Operands f32, or rounded to bf16 or f16
// for the hidden layers' products (autocast; fused_mlp_cells.h lists the
// rounding points); storage and sums f32. Launches are asynchronous; a
// failed launch throws fk::Error. No atomics: bitwise reproducible run to run
// on one GPU model.
//
// The network (NeuralField's trunk and output projection): features x (N, in)
// -> `depth` hidden layers of width `hidden` (layer `skip` also sees x again,
// concatenated after the hidden activations) -> a linear head of width `out`.
// The parameters are NeuralField's flat buffer: per layer the weight
// (rows, fan_in) row-major, then its bias; the head last (fused_mlp_layer).
#include <cstdint>

#include "nefi/cuda/host_device.h"

namespace nefi::cuda {

// == nefi::FusedMlpActivation
enum FusedActivation : int {
  kFusedTanh = 0,
  kFusedRelu = 1,
  kFusedGelu = 2,
  kFusedSilu = 3,
  kFusedSoftplus = 4,
  kFusedSine = 5
};

// The hidden layers' product operands: f32, or rounded to f16 / bf16.
enum FusedOperands : int { kFusedF32 = 0, kFusedF16 = 1, kFusedBf16 = 2 };

struct FusedMlpShape {
  int in = 0, hidden = 0, depth = 0, out = 0;
  int skip = -1;  // 0 < skip < depth, or -1
  int act = kFusedTanh;
  float w0 = 30.f;  // sine: sin(w0 z)
  int operands = kFusedF32;
};

// Widest hidden layer and head the kernels take.
inline constexpr int kFusedMaxWidth = 128;
// Threads per block of every fused kernel.
inline constexpr int kFusedThreads = 256;

struct FusedLayer {
  int rows = 0, fan_in = 0;
  int64_t weight = 0;  // offset of the weight in the flat buffer; the bias follows it
};

// Layer l of s (l == s.depth: the head).
NEFI_HOST_DEVICE inline FusedLayer fused_mlp_layer(const FusedMlpShape& s, int l) {
  int64_t at = 0;
  FusedLayer f;
  for (int i = 0;; ++i) {
    f.rows = i == s.depth ? s.out : s.hidden;
    f.fan_in = i == 0 ? s.in : i == s.skip ? s.hidden + s.in : s.hidden;
    f.weight = at;
    if (i == l) return f;
    at += static_cast<int64_t>(f.rows) * (f.fan_in + 1);
  }
}

// Parameters in the flat buffer.
inline int64_t fused_mlp_numel(const FusedMlpShape& s) {
  const FusedLayer head = fused_mlp_layer(s, s.depth);
  return head.weight + static_cast<int64_t>(head.rows) * (head.fan_in + 1);
}

// Rows of x one block carries through the network (64 or 32, the most whose
// shared memory fits on `device`), or 0 when even 32 do not fit.
int fused_mlp_block_rows(const FusedMlpShape& s, int device);

// y (N, out) = the network on x; zs (depth, N, hidden), when not null,
// receives every hidden layer's pre-activation (the backward's input).
void launch_fused_mlp_forward(const FusedMlpShape& s, const float* x, const float* params,
                              int64_t n, int block_rows, float* zs, float* y, void* stream);

// From g = dL/dy (N, out): gzs (depth, N, hidden) = dL/dz of every hidden
// layer and, when dx is not null, dx (N, in) = dL/dx.
void launch_fused_mlp_backward(const FusedMlpShape& s, const float* params, const float* zs,
                               const float* g, int64_t n, int block_rows, float* gzs, float* dx,
                               void* stream);

// Chunks of rows the parameter gradient is summed over (a function of n
// only, so the summation order is fixed): 2048 rows a chunk, at most 128
// chunks (enough blocks for a GPU at 64k rows, a partial buffer of at most
// 128 copies of the parameters); chunk k holds rows [k c, (k + 1) c) of
// c = fused_mlp_chunk_rows(n).
inline int64_t fused_mlp_grad_chunks(int64_t n) {
  const int64_t chunks = (n + 2047) / 2048;
  return chunks < 1 ? 1 : chunks > 128 ? 128 : chunks;
}
inline int64_t fused_mlp_chunk_rows(int64_t n) {
  const int64_t chunks = fused_mlp_grad_chunks(n);
  return (n + chunks - 1) / chunks;
}

// partials (chunks, numel): chunk k's contribution to the parameter gradient
// (dW = gz^T x_in and db = the column sums of gz over its rows, in row
// order), in the flat buffer's layout; x the features, zs and gzs as above.
// The gradient is the sum over chunks in chunk order (launch_column_sums).
void launch_fused_mlp_param_partials(const FusedMlpShape& s, const float* x, const float* zs,
                                     const float* gzs, const float* g, int64_t n, float* partials,
                                     void* stream);

}  // namespace nefi::cuda
