#pragma once
// dense: one MLP layer y = act(x W^T + b) as a single op each way.
//   forward  : one GEMM with bias and activation applied to each output tile
//              while it is hot (AVX-512, dense_gemm.h); elsewhere rows of y set
//              to b, OpenBLAS accumulates x W^T, the activation in place
//              (tanh: the vectorised rational of fast_tanh.h)
//   backward : one pass makes gz = g act'(y) (tanh: 1 - y^2, relu: y > 0) and
//              db = column sums of gz; dW = gz^T x and dx = gz W (two GEMMs)
// The fk chain (linear, its bias copy, tanh; their backwards and the bias sum)
// is 3 ops forward and 3-4 back per layer; the MLP dominates a step's count.
// x (N, in) f32/f64 (copied when not contiguous), w (out, in), b (out), one
// dtype. Deterministic (fk::gemm at a fixed thread count). Saves x, w and y.
// Precision Bf16 (f32 operands only; f64 ignores it): every product of the
// layer, forward and both backward ones, multiplies operands rounded to bf16
// and accumulates in f32; y, the gradients, the bias and the activation stay
// f32 (the autocast of the reference's MLP trunk, with f32 outputs). Native
// on AVX512_BF16 (dense_gemm_bf16.h); elsewhere the operands are rounded
// into f32 copies and multiplied by the f32 path: the same numbers up to
// summation order, at f32 speed plus the copies.
// Chained bf16 layers (native only): a layer can also hand back its output
// rounded to bf16 (y16), which the next layer takes as x16 and multiplies
// without rounding x again, forward and in its weight gradient; the backward
// keeps gz in bf16 only. Same numbers as without the copies, fewer passes
// over each activation and half the bytes read.
// Operands on a CUDA device go to dense_device (dense_device.h; x16 and y16
// are CPU buffers and ignored there).
#include <cstdint>
#include <memory>

#include "fk/tensor.h"

namespace nefi {

enum class DenseActivation { None, Tanh, Relu };
enum class DensePrecision { F32, Bf16 };

struct DenseBf16Sides;  // dense_gemm_bf16.h

// C (m, n) = op(A) op(B) [+ C when accumulate]: the product every dense
// layer uses (the sequential one here and the batched MLP), so both sum in
// the same order. f32: our AVX-512 kernel with bias + activation fused
// (returns true), else dense_narrow for a dimension of 1, else fk::gemm
// (f64 always); then the caller applies bias and activation (returns false).
// bf16 (f32 operands only): the native AVX512_BF16 kernel (fused; `sides`
// may hand it operands already rounded), else both operands rounded to bf16
// into f32 copies and multiplied as f32.
bool dense_product(fk::DType dt, bool bf16, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                   const void* a, int64_t lda, const void* b, int64_t ldb, void* c, int64_t ldc,
                   bool accumulate, const void* bias, DenseActivation act,
                   const DenseBf16Sides& sides);

// An (rows, cols) activation rounded to bf16, row-major, rows of ld bf16 (ld
// even; a zero after the last column when ld > cols). Empty: none.
struct Bf16Activation {
  std::shared_ptr<uint16_t[]> data;
  int64_t rows = 0, cols = 0, ld = 0;
};

// x (N, C) f32 rounded to bf16 as the native layer rounds it; empty where
// that path does not run (no AVX512_BF16, or x not f32).
Bf16Activation to_bf16(const fk::Tensor& x);
// The rows of a then b side by side: the copy of fk::cat({A, B}, 1); empty
// unless both are set.
Bf16Activation cat_columns(const Bf16Activation& a, const Bf16Activation& b);

// x16, when set, must be x rounded to bf16 (the y16 of the layer that made
// x); y16, when not null, receives y's copy where the native bf16 path runs
// (left empty elsewhere).
fk::Tensor dense(const fk::Tensor& x, const fk::Tensor& w, const fk::Tensor& b, DenseActivation act,
                 DensePrecision precision = DensePrecision::F32, const Bf16Activation& x16 = {},
                 Bf16Activation* y16 = nullptr);

}  // namespace nefi
