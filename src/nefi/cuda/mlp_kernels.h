#pragma once
// Launchers of the MLP layer's elementwise kernels (mlp_kernels.cu): raw
// device pointers, row-major (n, out) f32 matrices, a stream (a cudaStream_t
// as void*). No CUDA types, so mlp_dense.cpp is plain C++. Launches are
// asynchronous; a failed launch throws fk::Error. No atomics: bitwise
// reproducible run to run.
#include <cstdint>

namespace nefi::cuda {

// == nefi::DeviceActivation
enum MlpActivation : int { kMlpNone = 0, kMlpTanh = 1, kMlpRelu = 2, kMlpSine = 3 };

// y[r, c] = act(acc[r, c] + bias[c]); z, when not null, receives acc + bias
// (the angle sine's gradient needs). y and z may be acc itself.
void launch_bias_activation(const float* acc, const float* bias, int64_t n, int64_t out, int act,
                            float w0, float* y, float* z, void* stream);

// Rows per chunk of the column sums below.
inline constexpr int64_t kGradChunkRows = 64;
inline int64_t grad_chunks(int64_t n) {
  return (n + kGradChunkRows - 1) / kGradChunkRows;
}

// gz = g act'(.) with ref = y (tanh: 1 - y^2, relu: y > 0), the angle z
// (sine: w0 cos(w0 z)) or unused (None: gz = g), stored in gz_dtype (an
// fk::cuda DTypeCode: f32, f16 or bf16, rounded to nearest even);
// partials[chunk, c] = the sum of the f32 gz over the chunk's
// kGradChunkRows rows, in row order.
void launch_activation_grad(const float* g, const float* ref, int64_t n, int64_t out, int act,
                            float w0, void* gz, int gz_dtype, float* partials, void* stream);

// db[c] = the sum of partials[chunk, c] over chunks, in chunk order.
void launch_column_sums(const float* partials, int64_t chunks, int64_t out, float* db,
                        void* stream);

}  // namespace nefi::cuda
