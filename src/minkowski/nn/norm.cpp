#include "minkowski/nn/norm.h"

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "minkowski/nn/autocast.h"
#include "minkowski/nn/layers.h"

namespace minkowski::nn {

BatchNorm::BatchNorm(int64_t channels, double eps, double momentum, fk::DType dtype)
    : op_(channels, eps, momentum, true, true, dtype) {
  register_parameter("weight", op_.weight);
  register_parameter("bias", op_.bias);
  register_buffer("running_mean", op_.running_mean);
  register_buffer("running_var", op_.running_var);
  batches_ = register_buffer("num_batches_tracked", fk::zeros({}, {fk::DType::I64}));
}

fk::Tensor BatchNorm::forward_features(const fk::Tensor& f) {
  // The count lives in a buffer so that checkpoints carry it; it is read only
  // when something else (a checkpoint, Module::to) wrote the buffer since
  // this layer did.
  const bool known =
      written_.storage == batches_.data_ptr() && written_.version == batches_.version();
  op_.num_batches_tracked = known ? written_.count : static_cast<int64_t>(batches_.item());
  op_.train(training());
  fk::Tensor y = autocast(op_.forward(to_norm_input(f, op_.weight.dtype())));
  if (known && op_.num_batches_tracked == written_.count) return y;
  fk::autograd::NoGradGuard no_grad;
  fill_(batches_, static_cast<double>(op_.num_batches_tracked));
  written_ = {batches_.data_ptr(), batches_.version(), op_.num_batches_tracked};
  return y;
}

SparseTensor BatchNorm::forward(const SparseTensor& x) {
  return with_features(x, forward_features(x.F()));
}

InstanceNorm::InstanceNorm(int64_t channels, double eps, fk::DType dtype)
    : op_(channels, eps, true, dtype) {
  register_parameter("weight", op_.weight);
  register_parameter("bias", op_.bias);
}

SparseTensor InstanceNorm::forward(const SparseTensor& x) {
  const SparseTensor in = with_features(x, to_norm_input(x.F(), op_.weight.dtype()));
  return with_features(x, autocast(op_.forward(in).F()));
}

}  // namespace minkowski::nn
