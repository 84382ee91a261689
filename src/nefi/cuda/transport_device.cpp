// A release unknown's advection-diffusion steps on a CUDA device
// (operators/advection_diffusion_device.h): the launches of transport.cu on
// the device's current stream, and the autograd node. The schedule is the
// CPU's (AdvectionDiffusionOperator::forward_rows / adjoint_rows), every row
// of the batch stepped by each launch: one launch per factor and substep
// and one per observation each way, and back one per substep for a source's
// gradient (device_launches); nothing is read back to the host (the tables
// are uploaded by prepare_tables at a stage start, before any capture, or on
// an operator's first device apply). Memory per row: the f64 release and two
// f64 states forward; two states, the source's gradient and the f64
// cotangent back.
#include <memory>
#include <utility>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/cuda/transport_kernels.h"
#include "nefi/operators/advection_diffusion_device.h"
#include "nefi/operators/transport_steps.h"

namespace nefi {
namespace {

using transport::factor_at;
using transport::Plan;

cuda::TransportRows rows_of(const TransportTablesOnDevice::Rows& r) {
  return {r.row_start.data<int64_t>(), r.col.data<int32_t>(), r.weight.data<double>(),
          r.per_tau.defined() ? r.per_tau.data<double>() : nullptr};
}

// What both directions read: the plan, its tables on the device, the
// device's stream and the sizes (n cells, m observed, K times, nf factors).
struct Steps {
  Steps(const AdvectionDiffusionOperator& op, fk::Device device)
      : p(op.plan()),
        t(op.tables_on(device)),
        stream(fk::cuda::current_stream(device.index)),
        n(p.cells),
        m(p.observed()),
        K(std::ssize(p.tau)),
        nf(p.factors.size()),
        f64{fk::DType::F64, device} {}
  const int64_t* sensors() const {
    return t.sensors.defined() ? t.sensors.data<int64_t>() : nullptr;
  }
  const Plan& p;
  const TransportTablesOnDevice& t;
  void* stream;
  int64_t n, m, K;
  size_t nf;
  fk::TensorOptions f64;
};

// y (batch, K observed) from releases x (batch, cells), both f64 and contiguous.
fk::Tensor forward(const AdvectionDiffusionOperator& op, const fk::Tensor& x, int64_t batch) {
  const Steps st(op, x.device());
  const Plan& p = st.p;
  fk::Tensor y = fk::empty({batch, st.K * st.m}, st.f64);
  if (batch == 0) return y;
  fk::Tensor c = p.source ? fk::zeros({batch, st.n}, st.f64) : x.clone();
  fk::Tensor next = fk::empty({batch, st.n}, st.f64);
  for (int64_t k = 0, step = 0; k < st.K; ++k) {
    for (int64_t s = 0; s < p.substeps[k]; ++s, ++step)
      for (size_t j = 0; j < st.nf; ++j) {  // the source enters with the last: c' = P c + tau s
        const size_t f = factor_at(step, j, st.nf);
        cuda::launch_transport_step(rows_of(st.t.forward[f]), batch, st.n, p.tau[k],
                                    c.data<double>(),
                                    p.source && j + 1 == st.nf ? x.data<double>() : nullptr,
                                    next.data<double>(), st.stream);
        fk::profile::count_launch();
        std::swap(c, next);
      }
    cuda::launch_transport_observe(batch, st.n, st.m, st.K, k, st.sensors(), c.data<double>(),
                                   y.data<double>(), st.stream);
    fk::profile::count_launch();
  }
  fk::cuda::after_op(x.device().index);
  return y;
}

// The releases' gradient (batch, cells) from g (batch, K observed), f64 and
// contiguous: the steps' transposes backward.
fk::Tensor adjoint(const AdvectionDiffusionOperator& op, const fk::Tensor& g, int64_t batch) {
  const Steps st(op, g.device());
  const Plan& p = st.p;
  fk::Tensor lam = fk::zeros({batch, st.n}, st.f64);
  if (batch == 0) return lam;
  fk::Tensor next = fk::empty({batch, st.n}, st.f64);
  fk::Tensor ds = p.source ? fk::zeros({batch, st.n}, st.f64) : fk::Tensor();
  int64_t total = 0;  // substeps over all intervals
  for (int64_t n_k : p.substeps) total += n_k;
  for (int64_t k = st.K - 1, step = total - 1; k >= 0; --k) {
    cuda::launch_transport_inject(batch, st.n, st.m, st.K, k, st.sensors(), g.data<double>(),
                                  lam.data<double>(), st.stream);
    fk::profile::count_launch();
    for (int64_t s = 0; s < p.substeps[k]; ++s, --step)
      for (size_t j = st.nf; j-- > 0;) {
        // c' = c + tau (M_f c [+ s in the last]): ds += tau lam', lam = (I + tau M_f)^T lam'.
        const size_t f = factor_at(step, j, st.nf);
        if (p.source && j + 1 == st.nf) {
          cuda::launch_transport_accumulate(batch * st.n, p.tau[k], lam.data<double>(),
                                            ds.data<double>(), st.stream);
          fk::profile::count_launch();
        }
        cuda::launch_transport_step(rows_of(st.t.transposed[f]), batch, st.n, p.tau[k],
                                    lam.data<double>(), nullptr, next.data<double>(), st.stream);
        fk::profile::count_launch();
        std::swap(lam, next);
      }
  }
  fk::cuda::after_op(g.device().index);
  return p.source ? ds : lam;
}

struct AdvectionDiffusionDeviceBackward : fk::autograd::Node {
  std::shared_ptr<const AdvectionDiffusionOperator> op;  // shares the plan and the tables
  fk::Dims in_shape;
  fk::Device device;
  const char* name() const override { return "AdvectionDiffusionDeviceBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    fk::profile::OpScope scope("advection_diffusion_device_backward");
    fk::cuda::detail::DeviceGuard guard(device.index);
    const fk::DType dtype = grads[0].dtype();
    fk::Tensor g = grads[0].device() == device ? grads[0] : grads[0].to(device);
    g = g.to(fk::DType::F64).contiguous();
    const int64_t per = static_cast<int64_t>(op->plan().tau.size()) * op->observed();
    const fk::Tensor dx = adjoint(*op, g, g.numel() / per);
    return {dx.view(in_shape).to(dtype)};
  }
};

}  // namespace

fk::Tensor advection_diffusion_device(const AdvectionDiffusionOperator& op, const fk::Tensor& x) {
  fk::profile::OpScope scope("advection_diffusion_device");
  FK_CHECK(x.device().is_cuda(), "nefi::AdvectionDiffusionOperator", "a release on a CUDA device",
           x.device().str());
  fk::cuda::detail::DeviceGuard guard(x.device().index);
  fk::Tensor x64;
  {
    fk::autograd::NoGradGuard ng;
    x64 = x.detach().to(fk::DType::F64).contiguous();
  }
  // (..., *grid) -> (..., K, *grid) or (..., K, m), as the CPU's apply.
  const fk::Dims& grid = op.domain().shape();
  fk::Dims out_shape;
  for (int a = 0; a < x.dim() - grid.size(); ++a) out_shape.push_back(x.shape()[a]);
  for (int64_t d : op.output_shape(grid)) out_shape.push_back(d);
  const fk::Tensor y = forward(op, x64, x.numel() / op.plan().cells);
  fk::Tensor out;
  {
    fk::autograd::NoGradGuard ng;
    out = y.view(out_shape).to(x.dtype());
  }
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<AdvectionDiffusionDeviceBackward>();
    node->op = std::make_shared<const AdvectionDiffusionOperator>(op);
    node->in_shape = x.shape();
    node->device = x.device();
    fk::autograd::record(node, {x}, out);
  }
  return out;
}

}  // namespace nefi
