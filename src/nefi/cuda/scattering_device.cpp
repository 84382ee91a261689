// The Born and Rytov operators on a CUDA device (operators/scattering_device.h):
// the launches of scattering.cu around fk::gemm_on's complex GEMM (cuBLAS
// zgemm) on the device's current stream, and the autograd node. By
// construction three launches per apply (modulate, zgemm, receive) and three
// per backward (conjugate, zgemm, demodulate); nothing is read back to the
// host. Memory per call: the complex intermediates, 16 bytes x batch x views
// x (cells + receivers); the tables (16 bytes x (receivers + views) x cells)
// stay on the device with the operator.
#include <memory>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/blas.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/cuda/scattering_kernels.h"
#include "nefi/operators/scattering_device.h"

namespace nefi {
namespace {

cuda::ScatteringDims dims_of(const BornOperator& op, int64_t numel_in) {
  cuda::ScatteringDims d;
  d.views = op.geometry().n_angles;
  d.receivers = op.geometry().n_receivers;
  d.cells = op.domain().numel();
  d.batch = numel_in / d.cells;
  d.rytov = op.geometry().rytov;
  return d;
}

// The scattered field (batch, 2, V, R) of x (batch, n, n), contiguous, on its device.
fk::Tensor project_on_device(const BornOperator& op, const fk::Tensor& x, const fk::Dims& shape) {
  const fk::Device device = x.device();
  fk::cuda::detail::DeviceGuard guard(device.index);
  void* stream = fk::cuda::current_stream(device.index);
  const cuda::ScatteringDims d = dims_of(op, x.numel());
  const ScatteringTablesOnDevice t = op.tables_on(device);
  fk::Tensor q = fk::empty({2 * d.batch * d.views * d.cells}, {fk::DType::F64, device});
  fk::Tensor u = fk::empty({2 * d.batch * d.views * d.receivers}, {fk::DType::F64, device});
  fk::Tensor out = fk::empty(shape, {x.dtype(), device});
  if (x.dtype() == fk::DType::F64)
    cuda::launch_scattering_modulate<double>(d, t.phase.data<double>(), x.data<double>(),
                                             q.data<double>(), stream);
  else
    cuda::launch_scattering_modulate<float>(d, t.phase.data<double>(), x.data<float>(),
                                            q.data<double>(), stream);
  fk::profile::count_launch();
  fk::cuda::after_op(device.index);
  fk::gemm_on(device, fk::DType::C128, false, true, d.batch * d.views, d.receivers, d.cells, 1.0,
              q.data<double>(), d.cells, t.green.data<double>(), d.cells, 0.0, u.data<double>(),
              d.receivers);
  if (x.dtype() == fk::DType::F64)
    cuda::launch_scattering_receive<double>(d, u.data<double>(), t.rotation.data<double>(),
                                            out.data<double>(), stream);
  else
    cuda::launch_scattering_receive<float>(d, u.data<double>(), t.rotation.data<double>(),
                                           out.data<float>(), stream);
  fk::profile::count_launch();
  fk::cuda::after_op(device.index);
  return out;
}

// The exact adjoint: the field (batch, n, n) of data g (batch, 2, V, R).
fk::Tensor adjoint_on_device(const BornOperator& op, const fk::Tensor& g, const fk::Dims& shape) {
  const fk::Device device = g.device();
  fk::cuda::detail::DeviceGuard guard(device.index);
  void* stream = fk::cuda::current_stream(device.index);
  const int64_t per = 2 * op.geometry().n_angles * op.geometry().n_receivers;
  const cuda::ScatteringDims d = dims_of(op, g.numel() / per * op.domain().numel());
  const ScatteringTablesOnDevice t = op.tables_on(device);
  fk::Tensor c = fk::empty({2 * d.batch * d.views * d.receivers}, {fk::DType::F64, device});
  fk::Tensor p = fk::empty({2 * d.batch * d.views * d.cells}, {fk::DType::F64, device});
  fk::Tensor out = fk::empty(shape, {g.dtype(), device});
  if (g.dtype() == fk::DType::F64)
    cuda::launch_scattering_conjugate<double>(d, g.data<double>(), t.rotation.data<double>(),
                                              c.data<double>(), stream);
  else
    cuda::launch_scattering_conjugate<float>(d, g.data<float>(), t.rotation.data<double>(),
                                             c.data<double>(), stream);
  fk::profile::count_launch();
  fk::cuda::after_op(device.index);
  fk::gemm_on(device, fk::DType::C128, false, false, d.batch * d.views, d.cells, d.receivers, 1.0,
              c.data<double>(), d.receivers, t.green.data<double>(), d.cells, 0.0, p.data<double>(),
              d.cells);
  if (g.dtype() == fk::DType::F64)
    cuda::launch_scattering_demodulate<double>(d, t.phase.data<double>(), p.data<double>(),
                                               out.data<double>(), stream);
  else
    cuda::launch_scattering_demodulate<float>(d, t.phase.data<double>(), p.data<double>(),
                                              out.data<float>(), stream);
  fk::profile::count_launch();
  fk::cuda::after_op(device.index);
  return out;
}

struct BornDeviceBackward : fk::autograd::Node {
  std::shared_ptr<const BornOperator> op;  // shares the tables (host and device)
  fk::Dims in_shape;
  fk::Device device;
  const char* name() const override { return "BornDeviceBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    fk::profile::OpScope scope("born_device_backward");
    fk::Tensor g = grads[0].device() == device ? grads[0] : grads[0].to(device);
    if (g.dtype() != fk::DType::F32 && g.dtype() != fk::DType::F64) g = g.to(fk::DType::F64);
    if (!g.is_contiguous()) g = g.contiguous();
    return {adjoint_on_device(*op, g, in_shape)};
  }
};

}  // namespace

fk::Tensor born_device(const BornOperator& op, const fk::Tensor& x) {
  fk::profile::OpScope scope("born_device");
  FK_CHECK(x.device().is_cuda(), "nefi::BornOperator", "a field on a CUDA device",
           x.device().str());
  fk::Tensor xc;
  {
    fk::autograd::NoGradGuard ng;
    xc = x.detach();
    if (!xc.is_contiguous()) xc = xc.contiguous();
  }
  fk::Tensor y = project_on_device(op, xc, op.output_shape(x.shape()));
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<BornDeviceBackward>();
    node->op = std::make_shared<const BornOperator>(op);
    node->in_shape = x.shape();
    node->device = x.device();
    fk::autograd::record(node, {x}, y);
  }
  return y;
}

}  // namespace nefi
