#include "minkowski/nn/norm.h"

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "minkowski/nn/layers.h"

namespace minkowski::nn {

BatchNorm::BatchNorm(int64_t channels, double eps, double momentum, fk::DType dtype)
    : channels_(channels), eps_(eps), momentum_(momentum) {
  FK_CHECK(channels > 0, "nn::BatchNorm", "a positive channel count", std::to_string(channels));
  FK_CHECK(momentum >= 0.0 && momentum <= 1.0 && eps > 0.0, "nn::BatchNorm",
           "momentum in [0, 1] and eps > 0", std::to_string(momentum) + ", " + std::to_string(eps));
  weight_ = register_parameter("weight", fk::ones({channels}, {dtype}));
  bias_ = register_parameter("bias", fk::zeros({channels}, {dtype}));
  running_mean_ = register_buffer("running_mean", fk::zeros({channels}, {dtype}));
  running_var_ = register_buffer("running_var", fk::ones({channels}, {dtype}));
  batches_ = register_buffer("num_batches_tracked", fk::zeros({}, {fk::DType::I64}));
}

void BatchNorm::update_running(const fk::Tensor& mean, const fk::Tensor& var_biased, int64_t rows) {
  fk::autograd::NoGradGuard no_grad;
  // The running variance is the unbiased one (Bessel's n/(n-1)), as BatchNorm1d.
  const double bessel = rows > 1 ? static_cast<double>(rows) / static_cast<double>(rows - 1) : 1.0;
  running_mean_.copy_(
      fk::add(fk::mul(running_mean_, 1.0 - momentum_), fk::mul(mean.detach(), momentum_)));
  running_var_.copy_(fk::add(fk::mul(running_var_, 1.0 - momentum_),
                             fk::mul(var_biased.detach(), momentum_ * bessel)));
  batches_.copy_(fk::add(batches_, 1.0));
}

fk::Tensor BatchNorm::forward_features(const fk::Tensor& f) {
  FK_CHECK(f.dim() == 2 && f.size(1) == channels_, "nn::BatchNorm",
           "N x " + std::to_string(channels_) + " features", f.shape().str());
  fk::Tensor mean, var;
  if (training()) {
    FK_CHECK(f.size(0) > 0, "nn::BatchNorm", "at least one row in train mode", "none");
    mean = fk::mean(f, {0});
    var = fk::var(f, {0}, 0);
    update_running(mean, var, f.size(0));
  } else {
    mean = running_mean_;
    var = running_var_;
  }
  const fk::Tensor inv_std = fk::rsqrt(fk::add(var, eps_));
  return fk::add(fk::mul(fk::mul(fk::sub(f, mean), inv_std), weight_), bias_);
}

SparseTensor BatchNorm::forward(const SparseTensor& x) {
  return with_features(x, forward_features(x.F()));
}

}  // namespace minkowski::nn
