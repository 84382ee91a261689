// The optimizers' device updates (nn/optim_device.h): operands checked and
// made contiguous in the parameter's dtype, optim.cu's kernel on the current
// stream, the parameter's version bumped (it is updated in place).
#include <string>

#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/profile.h"
#include "minkowski/cuda/dispatch_util.h"
#include "minkowski/cuda/optim_kernels.h"
#include "minkowski/nn/optim_device.h"

namespace minkowski::nn {

namespace {

using cuda_dispatch::with_type;

// The gradient in the parameter's dtype and layout, on its device.
fk::Tensor checked_grad(const fk::Tensor& param) {
  const char* where = "optimizer";
  FK_CHECK(param.is_contiguous(), where, "contiguous parameters", "a strided one");
  const fk::Tensor& g = param.grad();
  FK_CHECK(g.device() == param.device(), where,
           "a gradient on the parameter's device " + param.device().str(),
           "one on " + g.device().str());
  FK_CHECK(g.shape() == param.shape(), where,
           "a gradient of the parameter's shape " + param.shape().str(), g.shape().str());
  return g.to(param.dtype()).contiguous();
}

void check_buffer(const fk::Tensor& b, const fk::Tensor& param, const char* name) {
  FK_CHECK(b.dtype() == fk::DType::F64 && b.device() == param.device() && b.is_contiguous() &&
               b.numel() == param.numel(),
           "optimizer",
           std::string("an f64 ") + name + " buffer of " + fk::to_text(param.numel()) +
               " elements on " + param.device().str(),
           std::string(fk::name(b.dtype())) + " " + b.shape().str() + " on " + b.device().str());
}

}  // namespace

void device_sgd_update(const fk::Tensor& param, const fk::Tensor& momentum_buffer,
                       const SgdUpdate& u) {
  const fk::Tensor g = checked_grad(param);
  if (momentum_buffer.defined()) check_buffer(momentum_buffer, param, "momentum");
  const int dev = param.device().index;
  fk::cuda::detail::DeviceGuard guard(dev);
  double* v = momentum_buffer.defined() ? momentum_buffer.data<double>() : nullptr;
  with_type(param, [&](auto zero) {
    using T = decltype(zero);
    cuda::launch_sgd_update<T>(param.data<T>(), g.data<T>(), v, param.numel(), u.lr, u.momentum,
                               u.weight_decay, u.nesterov, fk::cuda::current_stream(dev));
  });
  fk::profile::count_launch();
  param.bump_version();
  fk::cuda::after_op(dev);
}

void device_adam_update(const std::vector<AdamOperands>& params, const AdamUpdate& u) {
  const cuda::AdamScalars scalars{u.lr,           u.beta1, u.beta2, u.eps,
                                  u.weight_decay, u.bias1, u.bias2, u.decoupled};
  // The gradients in their parameters' dtype, held until the launches are queued.
  std::vector<fk::Tensor> grads;
  grads.reserve(params.size());
  for (const AdamOperands& o : params) {
    grads.push_back(checked_grad(o.param));
    check_buffer(o.exp_avg, o.param, "exp_avg");
    check_buffer(o.exp_avg_sq, o.param, "exp_avg_sq");
  }
  // One list per (device, dtype) run, cut every kAdamListTensors.
  size_t i = 0;
  while (i < params.size()) {
    const fk::Tensor& first = params[i].param;
    const int dev = first.device().index;
    fk::cuda::detail::DeviceGuard guard(dev);
    with_type(first, [&](auto zero) {
      using T = decltype(zero);
      cuda::AdamList<T> list;
      while (i < params.size() && list.count < cuda::kAdamListTensors &&
             params[i].param.device() == first.device() &&
             params[i].param.dtype() == first.dtype()) {
        const AdamOperands& o = params[i];
        list.p[list.count] = o.param.data<T>();
        list.g[list.count] = grads[i].data<T>();
        list.m[list.count] = o.exp_avg.data<double>();
        list.v[list.count] = o.exp_avg_sq.data<double>();
        list.n[list.count] = o.param.numel();
        ++list.count;
        o.param.bump_version();
        ++i;
      }
      cuda::launch_adam_update<T>(list, scalars, fk::cuda::current_stream(dev));
    });
    fk::profile::count_launch();
    fk::cuda::after_op(dev);
  }
}

}  // namespace minkowski::nn
