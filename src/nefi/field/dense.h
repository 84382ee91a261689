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
#include "fk/tensor.h"

namespace nefi {

enum class DenseActivation { None, Tanh, Relu };

fk::Tensor dense(const fk::Tensor& x, const fk::Tensor& w, const fk::Tensor& b,
                 DenseActivation act);

}  // namespace nefi
