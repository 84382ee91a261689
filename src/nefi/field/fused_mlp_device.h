#pragma once
// fused_mlp_device: NeuralField's whole coordinate MLP on a CUDA device as
// ONE autograd op — features -> every hidden layer (with the skip) -> the
// linear output projection — for hidden widths (and heads) up to 128.
//   forward  : one kernel; a block carries a tile of rows through every
//              layer with the activations in shared memory and each layer's
//              weights loaded into shared memory (tiny-cuda-nn's fully fused
//              MLP, in f32 FMA rather than f16 tensor cores); it stores each
//              hidden layer's pre-activation z (f32) for the backward
//   backward : one kernel takes dL/dy back through the layers the same way
//              (dL/dz of every layer, and dL/dx when x needs it); a second
//              sums [dW | db] = gz^T [x_in | 1] per chunk of 2048 rows into
//              per-chunk partials, a third sums the chunks in order into the
//              flat gradient. No atomics: bitwise reproducible run to run on
//              one GPU model (the chunking depends on N only).
// Inputs: features (N, in) f32 (the gated Fourier features), params the
// field's flat f32 buffer (layer weights (hidden, fan_in) then biases, the
// head last; NeuralField's layout), both on one CUDA device. Output (N, out)
// f32. Gradients: dL/dfeatures (N, in) and dL/dparams (numel) in f32.
// Memory saved for the backward: z, depth x N x hidden f32 (what the
// per-layer path saves too); the backward adds dL/dz (as much again) and the
// partials (at most 128 x numel).
// Activations: NeuralField's six (tanh, relu, gelu (erf), silu, softplus
// (beta 1, threshold 20), sine sin(w0 z)), each with fk's formula.
// Autocast (spec.autocast bf16 or f16): the hidden layers' products take
// operands rounded to that type (features, weights, activations, dL/dz) with
// f32 sums; z, activations, bias, the head and every gradient stay f32 (the
// device autocast of dense_device.h, its rounding points exactly:
// nefi/cuda/fused_mlp_cells.h). Sums run in another order than cuBLAS's, so
// the two paths agree to f32 round-off plus the rare operand that rounds to
// the neighbouring half value (the tests' tolerances). Products of two
// rounded values are exact in f32, so the autocast variants do the f32
// kernel's FMA work plus one rounding per operand stored (no tensor cores).
// CUDA builds implement it in nefi/cuda/fused_mlp.cpp; CPU-only builds in
// fused_mlp_device_stub.cpp, as an fk::Error naming the device.
#include <optional>
#include <string>

#include "fk/tensor.h"

namespace nefi {

enum class FusedMlpActivation { Tanh, Relu, Gelu, Silu, Softplus, Sine };

// NeuralField's activation called `name`; an fk::Error for any other.
FusedMlpActivation fused_mlp_activation(const std::string& name);

struct FusedMlpSpec {
  int hidden = 0, depth = 0, out = 0;
  int skip_at = -1;  // as NeuralFieldConfig::skip_at: <= 0 or >= depth is no skip
  FusedMlpActivation activation = FusedMlpActivation::Tanh;
  double sine_w0 = 30.0;
  std::optional<fk::DType> autocast;  // BF16 or F16, as NeuralFieldConfig::autocast
};

// The widest hidden layer and head the fused kernel takes.
inline constexpr int kFusedMlpMaxWidth = 128;
// The most hidden layers it takes: its parameter-gradient launch has one
// grid row per layer and the head, and a grid has at most 65535 rows.
inline constexpr int kFusedMlpMaxDepth = 65534;

// Why the fused kernel cannot run `spec` on features of width `in` on CUDA
// device `device` (a width above 128, a depth above 65534, or shared memory
// the device lacks for 32 rows), or "" when it can. CPU-only builds: always a reason.
std::string fused_mlp_unsupported(const FusedMlpSpec& spec, int64_t in, int device);
// Its device half: no such device, or not enough shared memory on it.
std::string fused_mlp_unsupported_on(const FusedMlpSpec& spec, int64_t in, int device);

// The widest hidden layer NEFI_FUSED_MLP=auto gives the fused kernel: in f32
// at any row count; under bf16/f16 autocast at any row count, and a wider
// one on at most kFusedMlpAutoFewRows rows. Measured on two loans of an H200
// (nefi_cuda_bench's BM_DeviceMlp at 65536 rows and BM_DeviceMlpRows at 4096
// to 262144, forward+backward, docs/performance.md session 28), fused time
// over per-layer cuBLAS time, first run / second: f32 width 32 0.59-0.87,
// width 64 0.76-0.95 up to 65536 rows (1.00-1.01 at 262144), width 128
// 0.91 / 1.16 at 4096 rows and above 1.2 beyond; autocast width 32
// 0.67-0.99, width 64 0.72 / 0.97 at 4096 rows, 0.73 / 0.90 at 16384 and
// 1.01 / 1.17 at 65536, width 128 0.89 / 1.22 at 4096. Only the cells that
// won in both runs fuse: the per-layer path is launch-bound on few rows (46
// to 54 launches against 7), so its time moves with the host.
inline constexpr int kFusedMlpAutoWidth = 64;
inline constexpr int kFusedMlpAutoWidthAutocast = 32;
inline constexpr int kFusedMlpAutoWidthAutocastFewRows = 64;
inline constexpr int64_t kFusedMlpAutoFewRows = 16384;
int fused_mlp_auto_width(const FusedMlpSpec& spec, int64_t rows);

// NEFI_FUSED_MLP (per call): whether a device NeuralField runs its MLP on
// `rows` points of `in` features as fused_mlp_device. auto: where the fused
// kernel can (widths <= 128, shared memory fits) and is the faster (hidden
// width <= fused_mlp_auto_width); 1: wherever it can, an fk::Error naming
// the reason where it cannot; 0: never (the per-layer cuBLAS path,
// dense_device.h).
bool use_fused_mlp(const FusedMlpSpec& spec, int64_t rows, int64_t in, int device);

fk::Tensor fused_mlp_device(const fk::Tensor& features, const fk::Tensor& params,
                            const FusedMlpSpec& spec);

}  // namespace nefi
