#pragma once
// Losses on feature matrices (a network's output F), each a differentiable
// scalar built from fk ops.
//
//   cross_entropy   logits N x C, labels N (i32/i64). Rows labelled
//                   ignore_index are left out; with class weights w (C) the
//                   loss is sum w[y_i] * -log softmax(x_i)[y_i] / sum w[y_i]
//                   (PyTorch's weighted mean); with every row ignored it is 0.
//                   A label outside [0, C) that is not ignore_index is an error.
//   binary_cross_entropy_with_logits   mean of max(x,0) - x t + log(1 + e^-|x|)
//                   (stable for any x), logits and targets of one shape.
//   mse             mean of (a - b)^2.
// 16-bit inputs (an autocast network's output) are computed in f32.
// Devices: the logits' (fk's device ops, deterministic reductions); labels may
// live on either side (cross_entropy reads them on the host once, to check
// them and drop ignored rows); class weights and binary targets are taken to
// the logits' device; mse needs both operands on one device (fk's binary ops
// refuse two).
#include <cstdint>

#include "fk/tensor.h"

namespace minkowski::nn {

inline constexpr int64_t kIgnoreIndex = -100;

fk::Tensor cross_entropy(const fk::Tensor& logits, const fk::Tensor& labels,
                         int64_t ignore_index = kIgnoreIndex,
                         const fk::Tensor& class_weights = fk::Tensor());
fk::Tensor binary_cross_entropy_with_logits(const fk::Tensor& logits, const fk::Tensor& targets);
fk::Tensor mse(const fk::Tensor& a, const fk::Tensor& b);

}  // namespace minkowski::nn
