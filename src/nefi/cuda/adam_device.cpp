// FusedOptimizer on a CUDA device (solve/adam_device.h): operand checks and the
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

constexpr const char* kWhere = "nefi::FusedOptimizer (device)";

// t is a contiguous f32/f64 tensor on like's device, of like's dtype and
// (same_size) element count.
void check_operand(const fk::Tensor& t, const fk::Tensor& like, const char* what,
                   bool same_size = true) {
  FK_CHECK(t.device().is_cuda() && t.device() == like.device() && t.dtype() == like.dtype() &&
               t.is_contiguous() && (!same_size || t.numel() == like.numel()) &&
               (t.dtype() == fk::DType::F32 || t.dtype() == fk::DType::F64),
           kWhere,
           std::string(what) + " contiguous " + fk::name(like.dtype()) +
               (same_size ? " " + like.shape().str() : std::string()) + " on " +
               like.device().str(),
           std::string(fk::name(t.dtype())) + " " + t.shape().str() + " on " + t.device().str());
}

template <typename T>
cuda::AdamScalars<T> rounded(const AdamScalars& s) {
  return {static_cast<T>(s.clip),         static_cast<T>(s.l2),  static_cast<T>(s.decay),
          static_cast<T>(s.b1),           static_cast<T>(s.b2),  static_cast<T>(s.step),
          static_cast<T>(s.inv_sqrt_bc2), static_cast<T>(s.eps), static_cast<T>(1.0 - s.b1),
          static_cast<T>(1.0 - s.b2)};
}

}  // namespace

void enqueue_grad_sq_sum(const std::vector<fk::Tensor>& grads, double* out) {
  const fk::Tensor* first = nullptr;
  int64_t blocks = 0;
  for (const fk::Tensor& g : grads) {
    if (!g.defined()) continue;
    if (!first) first = &g;
    check_operand(g, *first, "gradient", false);  // parameters differ in size
    blocks += cuda::sum_sq_blocks(g.numel());
  }
  FK_CHECK(first != nullptr, kWhere, "at least one gradient", "none defined");
  const int device = first->device().index;
  fk::cuda::detail::DeviceGuard guard(device);
  void* stream = fk::cuda::current_stream(device);
  fk::Tensor partials = fk::empty({blocks}, {fk::DType::F64, first->device()});
  int64_t at = 0;
  for (const fk::Tensor& g : grads) {
    if (!g.defined()) continue;
    double* part = partials.data<double>() + at;
    if (g.dtype() == fk::DType::F64)
      cuda::launch_sum_sq_partials(g.data<double>(), g.numel(), part, stream);
    else
      cuda::launch_sum_sq_partials(g.data<float>(), g.numel(), part, stream);
    fk::profile::count_launch();
    at += cuda::sum_sq_blocks(g.numel());
  }
  cuda::launch_sum_partials(partials.data<double>(), blocks, out, stream);
  fk::profile::count_launch();
}

double device_grad_sq_sum(const std::vector<fk::Tensor>& grads) {
  const fk::Tensor* first = nullptr;
  for (const fk::Tensor& g : grads)
    if (g.defined() && !first) first = &g;
  if (!first) return 0;
  fk::Tensor total = fk::empty({1}, {fk::DType::F64, first->device()});
  enqueue_grad_sq_sum(grads, total.data<double>());
  return total.to(fk::kCPU).data<double>()[0];  // the step's host read (synchronizes)
}

void adam_update_device(fk::Tensor& p, const fk::Tensor& g, fk::Tensor& m, fk::Tensor& v, double lr,
                        double clip, const OptimizerOptions& o, int64_t t) {
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

void adam_update_device_gated(fk::Tensor& p, const fk::Tensor& g, fk::Tensor& m, fk::Tensor& v,
                              const double* block) {
  check_operand(p, p, "parameter");
  check_operand(g, p, "gradient");
  check_operand(m, p, "first moment");
  check_operand(v, p, "second moment");
  const int device = p.device().index;
  fk::cuda::detail::DeviceGuard guard(device);
  void* stream = fk::cuda::current_stream(device);
  if (p.dtype() == fk::DType::F64)
    cuda::launch_adam_update_gated(p.data<double>(), g.data<double>(), m.data<double>(),
                                   v.data<double>(), p.numel(), block, stream);
  else
    cuda::launch_adam_update_gated(p.data<float>(), g.data<float>(), m.data<float>(),
                                   v.data<float>(), p.numel(), block, stream);
  fk::profile::count_launch();
  fk::cuda::after_op(device);
}

void enqueue_gather_scalars(const std::vector<fk::Tensor>& scalars, double* out) {
  FK_CHECK(!scalars.empty() && scalars.size() <= static_cast<size_t>(cuda::kMaxGathered),
           "nefi::enqueue_gather_scalars", "1.." + fk::to_text(cuda::kMaxGathered) + " scalars",
           fk::to_text(scalars.size()));
  cuda::GatherSources src{};
  int device = -1;
  for (const fk::Tensor& t : scalars) {
    const int i = src.count++;
    if (!t.defined()) continue;
    FK_CHECK(t.device().is_cuda() && t.numel() == 1 &&
                 (t.dtype() == fk::DType::F32 || t.dtype() == fk::DType::F64) &&
                 (device < 0 || t.device().index == device),
             "nefi::enqueue_gather_scalars", "one-element f32/f64 tensors on one CUDA device",
             std::string(fk::name(t.dtype())) + " " + t.shape().str() + " on " + t.device().str());
    device = t.device().index;
    src.ptr[i] = t.data_ptr();
    src.f64[i] = t.dtype() == fk::DType::F64;
  }
  FK_CHECK(device >= 0, "nefi::enqueue_gather_scalars", "at least one defined scalar", "none");
  fk::cuda::detail::DeviceGuard guard(device);
  cuda::launch_gather_scalars(src, out, fk::cuda::current_stream(device));
  fk::profile::count_launch();
  fk::cuda::after_op(device);
}

}  // namespace nefi
