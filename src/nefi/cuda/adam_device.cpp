// FusedAdam on a CUDA device (solve/adam_device.h): operand checks and the
// launches of adam.cu's kernels on the device's current stream.
#include <string>
#include <vector>

#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/cuda/adam_kernels.h"
#include "nefi/solve/adam_device.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "nefi::FusedAdam (device)";

void check_operand(const fk::Tensor& t, const fk::Tensor& like, const char* what) {
  FK_CHECK(t.device().is_cuda() && t.device() == like.device() && t.dtype() == like.dtype() &&
               t.is_contiguous() && t.numel() == like.numel() &&
               (t.dtype() == fk::DType::F32 || t.dtype() == fk::DType::F64),
           kWhere,
           std::string(what) + " contiguous " + fk::name(like.dtype()) + " " + like.shape().str() +
               " on " + like.device().str(),
           std::string(fk::name(t.dtype())) + " " + t.shape().str() + " on " + t.device().str());
}

template <typename T>
cuda::AdamScalars<T> rounded(const AdamScalars& s) {
  return {static_cast<T>(s.clip),         static_cast<T>(s.l2), static_cast<T>(s.decay),
          static_cast<T>(s.b1),           static_cast<T>(s.b2), static_cast<T>(s.step),
          static_cast<T>(s.inv_sqrt_bc2), static_cast<T>(s.eps)};
}

}  // namespace

double device_grad_sq_sum(const std::vector<fk::Tensor>& grads) {
  const fk::Tensor* first = nullptr;
  int64_t blocks = 0;
  for (const fk::Tensor& g : grads) {
    if (!g.defined()) continue;
    if (!first) first = &g;
    check_operand(g, *first, "gradient");
    blocks += cuda::sum_sq_blocks(g.numel());
  }
  if (!first) return 0;
  const int device = first->device().index;
  fk::cuda::detail::DeviceGuard guard(device);
  void* stream = fk::cuda::current_stream(device);
  const fk::TensorOptions f64{fk::DType::F64, first->device()};
  fk::Tensor partials = fk::empty({blocks}, f64), total = fk::empty({1}, f64);
  int64_t at = 0;
  for (const fk::Tensor& g : grads) {
    if (!g.defined()) continue;
    double* out = partials.data<double>() + at;
    if (g.dtype() == fk::DType::F64)
      cuda::launch_sum_sq_partials(g.data<double>(), g.numel(), out, stream);
    else
      cuda::launch_sum_sq_partials(g.data<float>(), g.numel(), out, stream);
    fk::profile::count_launch();
    at += cuda::sum_sq_blocks(g.numel());
  }
  cuda::launch_sum_partials(partials.data<double>(), blocks, total.data<double>(), stream);
  fk::profile::count_launch();
  return total.to(fk::kCPU).data<double>()[0];  // the step's host read (synchronizes)
}

void adam_update_device(fk::Tensor& p, const fk::Tensor& g, fk::Tensor& m, fk::Tensor& v, double lr,
                        double clip, const AdamOptions& o, int64_t t) {
  check_operand(p, p, "parameter");
  check_operand(g, p, "gradient");
  check_operand(m, p, "first moment");
  check_operand(v, p, "second moment");
  const int device = p.device().index;
  fk::cuda::detail::DeviceGuard guard(device);
  void* stream = fk::cuda::current_stream(device);
  const AdamScalars s = adam_scalars(lr, clip, o, t);
  if (p.dtype() == fk::DType::F64)
    cuda::launch_adam_update(p.data<double>(), g.data<double>(), m.data<double>(), v.data<double>(),
                             p.numel(), rounded<double>(s), stream);
  else
    cuda::launch_adam_update(p.data<float>(), g.data<float>(), m.data<float>(), v.data<float>(),
                             p.numel(), rounded<float>(s), stream);
  fk::profile::count_launch();
  fk::cuda::after_op(device);
}

}  // namespace nefi
