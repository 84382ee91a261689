#include "minkowski/nn/layers.h"

#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/ops/linalg.h"
#include "fk/ops/unary.h"
#include "fk/random.h"
#include "minkowski/nn/autocast.h"
#include "minkowski/ops/global_pooling.h"
#include "minkowski/ops/pooling_transpose.h"

namespace minkowski::nn {
namespace {

void check_same_map(const SparseTensor& a, const SparseTensor& b, const char* where) {
  check_same_manager(a, b, where);
  FK_CHECK(a.key() == b.key(), where, "both tensors on one map", "two maps");
}

}  // namespace

SparseTensor with_features(const SparseTensor& x, const fk::Tensor& f) {
  return SparseTensor(f, x.key(), x.manager());
}

SparseTensor add(const SparseTensor& a, const SparseTensor& b) {
  check_same_map(a, b, "nn::add");
  return with_features(a, fk::add(a.F(), b.F()));
}

SparseTensor cat(const SparseTensor& a, const SparseTensor& b) {
  check_same_map(a, b, "nn::cat");
  return with_features(a, fk::cat({a.F(), b.F()}, 1));
}

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, fk::DType dtype) {
  FK_CHECK(in_features > 0 && out_features > 0, "nn::Linear", "positive feature counts",
           fk::to_text(in_features) + " -> " + fk::to_text(out_features));
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  weight_ = register_parameter(
      "weight",
      fk::uniform({out_features, in_features}, -bound, bound, {fk::DType::F32}).to(dtype));
  if (bias) {
    bias_ = register_parameter(
        "bias", fk::uniform({out_features}, -bound, bound, {fk::DType::F32}).to(dtype));
  }
}

fk::Tensor Linear::forward_features(const fk::Tensor& f) const {
  FK_CHECK(f.dim() == 2 && f.size(1) == weight_.size(1), "nn::Linear",
           "N x " + fk::to_text(weight_.size(1)) + " features", f.shape().str());
  return fk::linear(f, weight_, bias_);
}

SparseTensor Linear::forward(const SparseTensor& x) {
  return with_features(x, forward_features(x.F()));
}

std::shared_ptr<Activation> make_relu() {
  return std::make_shared<Activation>([](const fk::Tensor& f) { return fk::relu(f); });
}

std::shared_ptr<Activation> make_leaky_relu(double slope) {
  return std::make_shared<Activation>(
      [slope](const fk::Tensor& f) { return fk::leaky_relu(f, slope); });
}

Dropout::Dropout(double p) : p_(p) {
  // p = 1 drops everything (torch's); no 1 / (1 - p) is formed then.
  FK_CHECK(p >= 0.0 && p <= 1.0, "nn::Dropout", "p in [0, 1]", fk::to_text(p));
}

SparseTensor Dropout::forward(const SparseTensor& x) {
  if (!training() || p_ == 0.0) return x;
  const auto draws = fk::rand(x.F().shape(), {fk::DType::F64}).to_vector<double>();
  std::vector<double> mask(draws.size());
  for (size_t i = 0; i < draws.size(); ++i) mask[i] = draws[i] < p_ ? 0.0 : 1.0 / (1.0 - p_);
  // drawn on the host (the same mask on any device), applied where F lives
  const fk::Tensor m = fk::from_vector(mask, x.F().shape()).to(x.F().dtype()).to(x.F().device());
  return with_features(x, fk::mul(x.F(), m));
}

Pooling::Pooling(PoolingMode mode, int32_t kernel_size, int32_t stride, bool transpose)
    : mode_(mode), kernel_size_(kernel_size), stride_(stride), transpose_(transpose) {
  FK_CHECK(kernel_size > 0 && stride > 0, "nn::Pooling", "positive kernel size and stride",
           fk::to_text(kernel_size) + ", " + fk::to_text(stride));
}

SparseTensor Pooling::forward(const SparseTensor& x) {
  const KernelRegion kernel = KernelRegion::cube({kernel_size_});
  const SparseTensor in = with_features(x, autocast(x.F()));
  if (transpose_) return pooling_transpose(in, mode_, kernel, {stride_});
  return local_pooling(in, mode_, kernel, {stride_});
}

SparseTensor GlobalPooling::forward(const SparseTensor& x) {
  return global_pooling(with_features(x, autocast(x.F())), mode_);
}

SparseTensor Broadcast::forward(const SparseTensor& x, const SparseTensor& glob) const {
  const SparseTensor a = with_features(x, autocast(x.F()));
  const SparseTensor g = with_features(glob, autocast(glob.F()));
  switch (mode_) {
    case BroadcastMode::Add:
      return broadcast_add(a, g);
    case BroadcastMode::Multiply:
      return broadcast_multiply(a, g);
    case BroadcastMode::Concatenate:
      return broadcast_concatenation(a, g);
  }
  throw fk::Error("nn::Broadcast: unknown mode");
}

}  // namespace minkowski::nn
