#pragma once
// Feature-wise layers (they keep the coordinates and act on F), pooling
// layers, and the two ways networks join tensors on one map (sum and channel
// concatenation).
#include <functional>
#include <memory>

#include "fk/dtype.h"
#include "minkowski/nn/module.h"
#include "minkowski/ops/broadcast.h"
#include "minkowski/ops/pooling.h"

namespace minkowski::nn {

// x with features f (same map and manager).
SparseTensor with_features(const SparseTensor& x, const fk::Tensor& f);
// Features of a and b summed / concatenated along channels; both on one map of
// one manager (e.g. a decoder output and the encoder skip it was mapped onto).
SparseTensor add(const SparseTensor& a, const SparseTensor& b);
SparseTensor cat(const SparseTensor& a, const SparseTensor& b);

// y = F W^T + b on the features; W (out, in), b (out), uniform ±1/sqrt(in).
class Linear : public SparseModule {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true,
         fk::DType dtype = fk::DType::F32);
  SparseTensor forward(const SparseTensor& x) override;
  // On a plain feature matrix (a classifier head after global pooling).
  fk::Tensor forward_features(const fk::Tensor& f) const;

 private:
  fk::Tensor weight_, bias_;
};

// An elementwise function of the features (ReLU, LeakyReLU, ELU, GELU, SiLU,
// Sigmoid, Tanh, ...): any differentiable fk::Tensor -> fk::Tensor.
class Activation : public SparseModule {
 public:
  explicit Activation(std::function<fk::Tensor(const fk::Tensor&)> fn) : fn_(std::move(fn)) {}
  SparseTensor forward(const SparseTensor& x) override { return with_features(x, fn_(x.F())); }

 private:
  std::function<fk::Tensor(const fk::Tensor&)> fn_;
};
std::shared_ptr<Activation> make_relu();
std::shared_ptr<Activation> make_leaky_relu(double slope = 0.01);

// Zeroes each feature with probability p in [0, 1] in train mode and scales
// the rest by 1/(1-p) (p = 1: all zeros, as torch); the identity in eval mode.
// The mask comes from fk's default generator.
class Dropout : public SparseModule {
 public:
  explicit Dropout(double p = 0.5);
  SparseTensor forward(const SparseTensor& x) override;

 private:
  double p_;
};

// Local pooling with kernel k and stride s (cube kernel); Transpose unpools
// (pooling_transpose, reusing an existing finer map).
class Pooling : public SparseModule {
 public:
  Pooling(PoolingMode mode, int32_t kernel_size, int32_t stride, bool transpose = false);
  SparseTensor forward(const SparseTensor& x) override;

 private:
  PoolingMode mode_;
  int32_t kernel_size_, stride_;
  bool transpose_;
};

// One feature row per batch item.
class GlobalPooling : public SparseModule {
 public:
  explicit GlobalPooling(PoolingMode mode) : mode_(mode) {}
  SparseTensor forward(const SparseTensor& x) override;

 private:
  PoolingMode mode_;
};

// The reference's BroadcastAddition / Multiplication / Concatenation: every
// row of x combined with its batch item's row of `glob`, a global tensor of
// x's manager (e.g. GlobalPooling's output): x + g, x * g or [x, g] on x's
// map (minkowski/ops/broadcast.h). Two inputs, so not a SparseModule.
class Broadcast : public Module {
 public:
  explicit Broadcast(BroadcastMode mode) : mode_(mode) {}
  SparseTensor forward(const SparseTensor& x, const SparseTensor& glob) const;
  SparseTensor operator()(const SparseTensor& x, const SparseTensor& glob) const {
    return forward(x, glob);
  }

 private:
  BroadcastMode mode_;
};

}  // namespace minkowski::nn
