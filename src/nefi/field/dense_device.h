#pragma once
// dense_device: one MLP layer y = act(x W^T + b) on a CUDA device, as one
// autograd op (nefi::dense comes here when its operands live on a device).
//   forward  : one cuBLAS GEMM into an f32 accumulator, then one elementwise
//              kernel adds the bias and applies the activation
//   backward : one kernel makes gz = g act'(.) and per-chunk column sums of
//              gz, a second sums the chunks in order (db, deterministic);
//              dx = gz W and dW = gz^T x are two GEMMs
// x (N, in), w (out, in), b (out): f32, contiguous or not, all on one CUDA
// device; y, dx, dW, db are f32.
// Precision F32 multiplies f32 (TF32 tensor cores under fk::amp::allow_tf32);
// Bf16 and F16 round x, W and gz to that type once and multiply on tensor
// cores with f32 accumulation and an f32 result (fk::cuda::gemm_f32_out):
// activations, bias and gradients stay f32, the autocast of the reference's
// MLP trunk. Saves the operands in the precision's type and y (tanh, relu)
// or the pre-activation (sine: its gradient needs the angle).
// Sine is sin(w0 z) (SIREN). Bitwise reproducible run to run on one GPU
// model (no atomics). CUDA builds implement it in nefi/cuda/mlp_dense.cpp;
// CPU-only builds in dense_device_stub.cpp, as an fk::Error naming the device.
#include "fk/tensor.h"

namespace nefi {

enum class DeviceActivation { None, Tanh, Relu, Sine };
enum class DevicePrecision { F32, Bf16, F16 };

fk::Tensor dense_device(const fk::Tensor& x, const fk::Tensor& w, const fk::Tensor& b,
                        DeviceActivation act, DevicePrecision precision = DevicePrecision::F32,
                        double sine_w0 = 30.0);

}  // namespace nefi
