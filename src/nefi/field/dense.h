#pragma once
// dense: one MLP layer y = act(x W^T + b) as a single op each way.
//   forward  : rows of y set to b, one GEMM accumulates x W^T, the activation
//              in place (tanh: the vectorised rational of fast_tanh.h)
//   backward : gz = g (1 - y^2) (tanh), dW = gz^T x and dx = gz W (two GEMMs),
//              db = column sums of gz
// The fk chain (linear, its bias copy, tanh; their backwards and the bias sum)
// is 3 ops forward and 3-4 back per layer; the MLP dominates a step's count.
// x (N, in) f32/f64 (copied when not contiguous), w (out, in), b (out), one
// dtype. Deterministic (fk::gemm at a fixed thread count). Saves x, w and y.
#include "fk/tensor.h"

namespace nefi {

enum class DenseActivation { None, Tanh };

fk::Tensor dense(const fk::Tensor& x, const fk::Tensor& w, const fk::Tensor& b,
                 DenseActivation act);

}  // namespace nefi
