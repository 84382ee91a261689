#pragma once
// Matrix products on top of fk::gemm (OpenBLAS), all differentiable.
//
//   matmul(a, b)  NumPy semantics: 1-D·1-D is a dot product (0-dim result); a
//                 1-D operand is promoted to a matrix ([K] -> [1, K] on the
//                 left, [K, 1] on the right) and the added dimension removed
//                 from the result; leading (batch) dimensions broadcast.
//   bmm(a, b)     [B, M, K] x [B, K, N] -> [B, M, N], no broadcasting.
//   linear(x, w, bias)
//                 x [..., in], w [out, in] (PyTorch layout), bias [out] or
//                 undefined: y = x w^T + bias, shape [..., out].
//
// Dtypes: f32, f64, c64, c128, and f16/bf16 stored only: half operands are
// converted in bulk to f32, multiplied in f32 (f32 accumulation) and the result
// rounded back. Operands of different dtypes are promoted (NumPy rules); integer
// and bool operands are refused. Under an amp::AutocastGuard, f32/f16/bf16
// operands are first cast to the autocast dtype (a differentiable to()).
// Devices: CPU (OpenBLAS) and CUDA (cuBLAS; half operands on tensor cores with
// f32 sums); operands on different devices are refused with a clear error.
//
// Layout and memory: an operand whose last two dimensions are a row-major
// matrix or a transposed view of one (unit stride in either of them) is handed
// to GEMM as is, with the trans flag; any other layout (broadcast stride 0,
// sliced both ways) is copied to a contiguous buffer first. The half path holds
// f32 copies of both operands and of the result. Batches whose right operand is
// shared (a 2-D weight) and whose left operand folds into rows are one GEMM call;
// other batches are one GEMM per output matrix, each counted as a launch.
//
// Determinism: repeatable run to run for a given thread count. Across thread
// counts the last bits may differ: OpenBLAS never splits K, but its edge-tile
// kernels depend on where a call's row and column ranges start, and both its
// own threading and fk::gemm's row split move those starts (measured: 1024^3
// sgemm at 1 vs 2 OpenBLAS threads differs in ~6 % of the elements, by ulps).
//
// Gradients: dA = dC · B^H, dB = A^H · dC (conjugate transposes for complex
// operands, matching fk's convention grad = dL/dRe + i dL/dIm), reduced over
// broadcast batch dimensions with autograd::sum_to; linear's bias gradient is
// the sum of dC over the leading dimensions.
#include "fk/tensor.h"

namespace fk {

Tensor matmul(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// --- pure forward and backward functions (no autograd, no autocast) --------
// Operands must share one dtype (f16, bf16, f32, f64, c64 or c128) and have
// valid shapes; the public functions above check and promote.
Tensor matmul_forward(const Tensor& a, const Tensor& b);
struct MatmulGrads {
  Tensor a, b;  // undefined where not requested
};
// `a` is needed (and may be undefined otherwise) only when need_b, `b` only
// when need_a; the shapes are those of the forward's operands.
MatmulGrads matmul_backward(const Tensor& grad, const Tensor& a, const Tensor& b,
                            const Dims& a_shape, const Dims& b_shape, bool need_a, bool need_b);

Tensor linear_forward(const Tensor& x, const Tensor& weight, const Tensor& bias);
struct LinearGrads {
  Tensor x, weight, bias;  // undefined where not requested
};
// `x` is needed only when need_weight, `weight` only when need_x.
LinearGrads linear_backward(const Tensor& grad, const Tensor& x, const Tensor& weight,
                            const Dims& x_shape, bool need_x, bool need_weight, bool need_bias);

}  // namespace fk
