#pragma once
// Pointwise nonlinearities on the features of a SparseTensor or a
// TensorField. The result keeps the input's coordinate map (a SparseTensor) or
// its points and quantization record (a TensorField): only the features
// change, row for row.
//
// No kernel lives here: each op is fk's differentiable unary op
// (fk/ops/unary.h: a pure forward/backward pair plus its node; f16/bf16
// computed in f32) or fk::softmax over the channel axis (fk/ops/reduce.h).
// Shapes: N x C -> N x C, any N (an empty tensor stays empty). Devices: CPU
// and CUDA (fk's device unary ops and softmax).
// Determinism: elementwise (softmax: one row at a time), so the results do
// not depend on the thread count.
#include <concepts>

#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "minkowski/sparse_tensor.h"
#include "minkowski/tensor_field.h"

namespace minkowski {

// The two kinds of tensor whose features these ops replace.
template <typename X>
concept FeatureCarrier = std::same_as<X, SparseTensor> || std::same_as<X, TensorField>;

template <FeatureCarrier X>
X relu(const X& x) {
  return x.with_features(fk::relu(x.F()));
}
template <FeatureCarrier X>
X leaky_relu(const X& x, double negative_slope = 0.01) {
  return x.with_features(fk::leaky_relu(x.F(), negative_slope));
}
template <FeatureCarrier X>
X elu(const X& x, double alpha = 1.0) {
  return x.with_features(fk::elu(x.F(), alpha));
}
// Exact (erf) GELU, or its tanh approximation.
template <FeatureCarrier X>
X gelu(const X& x, bool tanh_approx = false) {
  return x.with_features(fk::gelu(x.F(), tanh_approx));
}
template <FeatureCarrier X>
X silu(const X& x) {
  return x.with_features(fk::silu(x.F()));
}
template <FeatureCarrier X>
X sigmoid(const X& x) {
  return x.with_features(fk::sigmoid(x.F()));
}
template <FeatureCarrier X>
X tanh(const X& x) {
  return x.with_features(fk::tanh(x.F()));
}
// Softmax over the channels of each row (each point on its own).
template <FeatureCarrier X>
X softmax(const X& x) {
  return x.with_features(fk::softmax(x.F(), 1));
}

}  // namespace minkowski
