#pragma once
// The per-element arithmetic of the fused MLP kernels (fused_mlp.cu): the
// activations and their gradients, and where a value is rounded to the
// autocast type. Host and device functions alike, so the kernels' rounding
// points are checked against f64 and the CPU autocast field on machines
// without a GPU (tests/nefi/field/fused_mlp_cells_test.cpp).
//
// Rounding points under autocast (bf16 or f16), those of the per-layer
// cuBLAS path (dense_device.h) for the same network:
//   hidden layer l  z = round(a) round(W)^T + b   products exact in f32,
//                                                 summed in f32; z, b f32
//                   a = act(z)                    f32, rounded only as the
//                                                 next hidden layer's operand
//   head            y = a W^T + b                 all f32 (the output
//                                                 projection stays f32)
//   backward        gz = g act'(z)                f32
//                   dL/da = round(gz) round(W)    f32 sums
//                   dW = round(gz)^T round(a)     f32 sums
//                   db = the sums of gz           f32 (unrounded gz)
// Rounding is to nearest even (cuda_fp16/cuda_bf16's _rn conversions on the
// device, fk/half.h's scalar conversions on the host: the same function).
#include <cmath>

#include "fk/half.h"
#include "fk/ops/unary_formulas.h"
#include "nefi/cuda/fused_mlp_kernels.h"
#include "nefi/cuda/host_device.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace nefi::cuda {

// v rounded to the operand type P (f32: v itself).
template <int P>
NEFI_HOST_DEVICE inline float fused_operand(float v) {
  if constexpr (P == kFusedF16) {
#if defined(__CUDA_ARCH__)
    return __half2float(__float2half_rn(v));
#else
    return fk::half_to_float(fk::float_to_half(v));
#endif
  } else if constexpr (P == kFusedBf16) {
#if defined(__CUDA_ARCH__)
    return __bfloat162float(__float2bfloat16_rn(v));
#else
    return fk::bf16_to_float(fk::float_to_bf16(v));
#endif
  } else {
    return v;
  }
}

NEFI_HOST_DEVICE inline float fused_activate(int act, float z, float w0) {
  namespace uf = fk::unary_formulas;
  switch (act) {
    case kFusedTanh:
      return tanhf(z);
    case kFusedRelu:
      return uf::relu(z);
    case kFusedGelu:
      return uf::gelu(z);
    case kFusedSilu:
      return uf::silu(z);
    case kFusedSoftplus:
      return uf::softplus(z, 1.f, 20.f);  // fk::softplus's defaults, as the CPU field
    default:
      return sinf(w0 * z);
  }
}

// g act'(z).
NEFI_HOST_DEVICE inline float fused_activation_grad(int act, float g, float z, float w0) {
  namespace uf = fk::unary_formulas;
  switch (act) {
    case kFusedTanh: {
      const float y = tanhf(z);
      return g * (1.f - y * y);
    }
    case kFusedRelu:
      return z > 0.f ? g : 0.f;
    case kFusedGelu:
      return uf::gelu_backward(g, z);
    case kFusedSilu:
      return uf::silu_backward(g, z);
    case kFusedSoftplus:
      return uf::softplus_backward(g, z, 1.f, 20.f);
    default:
      return g * cosf(w0 * z) * w0;
  }
}

// v as layer l's product operand: rounded for the hidden layers, the head
// (l == depth) f32.
template <int P>
NEFI_HOST_DEVICE inline float fused_layer_operand(const FusedMlpShape& s, int l, float v) {
  return l < s.depth ? fused_operand<P>(v) : v;
}

}  // namespace nefi::cuda
