// The advection-diffusion operator on a CUDA device
// (operators/advection_diffusion_device.h): the launches of transport.cu on
// the device's current stream, and the autograd nodes. The schedule is the
// CPU's, every row of the batch stepped by each launch: one launch per factor
// and substep and one per observation each way (device_launches).
// A release unknown (AdvectionDiffusionOperator::forward_rows /
// adjoint_rows) reads nothing back to the host: its tables are uploaded by
// prepare_tables at a stage start, before any capture, or on an operator's
// first device apply; back, a source adds one launch per substep. Memory per
// row: the f64 release and two f64 states forward; two states, the source's
// gradient and the f64 cotangent back.
// A coefficient unknown (transport_coefficients.cpp: the diffusivity map or
// the velocity) builds each factor's stencil for the field on the device and
// reads back a few values per apply (the largest rates and D, and the
// field's check: the substeps follow them); the steps, the checkpointed
// backward and its face sums run on the device too.
// Memory: the stencils, a state per observation interval, and back about
// 3 sqrt(S) states for an interval of S substeps.
#include <algorithm>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/reduce.h"
#include "fk/profile.h"
#include "nefi/cuda/transport_kernels.h"
#include "nefi/operators/advection_diffusion_device.h"
#include "nefi/operators/transport_steps.h"

namespace nefi {
namespace {

using transport::factor_at;
using transport::Plan;
using Rows = TransportTablesOnDevice::Rows;

cuda::TransportRows rows_of(const Rows& r) {
  return {r.row_start.defined() ? r.row_start.data<int64_t>() : nullptr, r.col.data<int32_t>(),
          r.weight.data<double>(), r.per_tau.defined() ? r.per_tau.data<double>() : nullptr,
          r.width};
}

// What both directions read: a plan, its factors' rows on the device, the
// observed cells, the device's stream and the sizes (n cells, m observed, K
// times, nf factors).
struct Steps {
  Steps(const Plan& plan, const std::vector<Rows>& fwd, const std::vector<Rows>& back,
        const fk::Tensor& sensor_cells, fk::Device device)
      : p(plan),
        forward(fwd),
        transposed(back),
        sensors(sensor_cells.defined() ? sensor_cells.data<int64_t>() : nullptr),
        stream(fk::cuda::current_stream(device.index)),
        n(p.cells),
        m(p.observed()),
        K(std::ssize(p.tau)),
        nf(p.factors.size()),
        f64{fk::DType::F64, device} {}
  Steps(const AdvectionDiffusionOperator& op, fk::Device device)
      : Steps(op.plan(), op.tables_on(device), device) {}
  Steps(const Plan& plan, const TransportTablesOnDevice& t, fk::Device device)
      : Steps(plan, t.forward, t.transposed, t.sensors, device) {}
  // out = c + tau (M_f c [+ s]) on `batch` rows: factor f's rows, or their
  // transposes.
  void step(bool back, size_t f, int64_t batch, double tau, const fk::Tensor& c, const double* s,
            fk::Tensor& out) const {
    cuda::launch_transport_step(rows_of(back ? transposed[f] : forward[f]), batch, n, tau,
                                c.data<double>(), s, out.data<double>(), stream);
    fk::profile::count_launch();
  }
  // Steps c (its buffer swapped with next) through substeps [s0, s1) of
  // interval k (step0: the global index of its first substep); before each
  // factor, visit(s, j, c) with the factor's input.
  template <typename Visit>
  void steps(int64_t batch, int64_t k, int64_t step0, int64_t s0, int64_t s1, const double* source,
             fk::Tensor& c, fk::Tensor& next, Visit&& visit) const {
    for (int64_t s = s0; s < s1; ++s)
      for (size_t j = 0; j < nf; ++j) {  // the source enters with the last: c' = P c + tau s
        visit(s, j, c);
        step(false, factor_at(step0 + s, j, nf), batch, p.tau[k], c,
             p.source && j + 1 == nf ? source : nullptr, next);
        std::swap(c, next);
      }
  }
  const Plan& p;
  const std::vector<Rows>& forward;
  const std::vector<Rows>& transposed;
  const int64_t* sensors;
  void* stream;
  int64_t n, m, K;
  size_t nf;
  fk::TensorOptions f64;
};

// The observations (batch, K observed) of states c (batch, cells, f64,
// consumed) stepped through the whole schedule, `source` (null, or batch
// rows) entering with each substep's last factor; starts (not null): the
// state at each interval's start.
fk::Tensor run_forward(const Steps& st, int64_t batch, fk::Tensor c, const double* source,
                       std::vector<fk::Tensor>* starts) {
  fk::Tensor y = fk::empty({batch, st.K * st.m}, st.f64);
  if (batch == 0) return y;
  fk::Tensor next = fk::empty({batch, st.n}, st.f64);
  for (int64_t k = 0, step = 0; k < st.K; step += st.p.substeps[k], ++k) {
    if (starts != nullptr) starts->push_back(c.clone());
    st.steps(batch, k, step, 0, st.p.substeps[k], source, c, next,
             [](int64_t, size_t, const fk::Tensor&) {});
    cuda::launch_transport_observe(batch, st.n, st.m, st.K, k, st.sensors, c.data<double>(),
                                   y.data<double>(), st.stream);
    fk::profile::count_launch();
  }
  return y;
}

// lam (batch, cells) += observation k's cotangent from g (batch, K observed).
void inject(const Steps& st, int64_t batch, int64_t k, const fk::Tensor& g, fk::Tensor& lam) {
  cuda::launch_transport_inject(batch, st.n, st.m, st.K, k, st.sensors, g.data<double>(),
                                lam.data<double>(), st.stream);
  fk::profile::count_launch();
}

// y (batch, K observed) from releases x (batch, cells), both f64 and contiguous.
fk::Tensor release_forward(const AdvectionDiffusionOperator& op, const fk::Tensor& x,
                           int64_t batch) {
  const Steps st(op, x.device());
  const bool source = st.p.source;
  fk::Tensor c = source ? fk::zeros({batch, st.n}, st.f64) : x.clone();
  fk::Tensor y = run_forward(st, batch, c, source ? x.data<double>() : nullptr, nullptr);
  fk::cuda::after_op(x.device().index);
  return y;
}

// The releases' gradient (batch, cells) from g (batch, K observed), f64 and
// contiguous: the steps' transposes backward.
fk::Tensor release_adjoint(const AdvectionDiffusionOperator& op, const fk::Tensor& g,
                           int64_t batch) {
  const Steps st(op, g.device());
  const Plan& p = st.p;
  fk::Tensor lam = fk::zeros({batch, st.n}, st.f64);
  if (batch == 0) return lam;
  fk::Tensor next = fk::empty({batch, st.n}, st.f64);
  fk::Tensor ds = p.source ? fk::zeros({batch, st.n}, st.f64) : fk::Tensor();
  int64_t total = 0;  // substeps over all intervals
  for (int64_t n_k : p.substeps) total += n_k;
  for (int64_t k = st.K - 1, step = total - 1; k >= 0; --k) {
    inject(st, batch, k, g, lam);
    for (int64_t s = 0; s < p.substeps[k]; ++s, --step)
      for (size_t j = st.nf; j-- > 0;) {
        // c' = c + tau (M_f c [+ s in the last]): ds += tau lam', lam = (I + tau M_f)^T lam'.
        if (p.source && j + 1 == st.nf) {
          cuda::launch_transport_accumulate(batch * st.n, p.tau[k], lam.data<double>(),
                                            ds.data<double>(), st.stream);
          fk::profile::count_launch();
        }
        st.step(true, factor_at(step, j, st.nf), batch, p.tau[k], lam, nullptr, next);
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
    const fk::Tensor dx = release_adjoint(*op, g, g.numel() / per);
    return {dx.view(in_shape).to(dtype)};
  }
};

// A coefficient apply's plan (its schedule, and each factor's axis: the
// stencils themselves are on the device), its factors' rows and their
// transposes on the device, the field (f64, contiguous), each factor's
// stencil description pointed at it, and the states its gradient starts
// from.
struct CoefficientOnDevice {
  Plan plan;
  std::vector<Rows> forward, transposed;
  fk::Tensor field;  // D (cells) or v (axes, cells)
  std::vector<cuda::TransportStencil> stencils;
  std::vector<fk::Tensor> start;  // (1, cells) per observation interval
};

// The plan for the field (f64, contiguous, on the device: D, or v one
// component per axis): each factor's stencil and its transpose built there
// (transport_stencil_row, the CPU's arithmetic), and the schedule from the
// factors' largest rates and D's largest value, read back with the field's
// check in one transfer. A bad field is refused by the CPU's check, naming
// the cell.
CoefficientOnDevice plan_on_device(const AdvectionDiffusionOperator& op, const fk::Tensor& field) {
  const fk::Device device = field.device();
  const TransportTablesOnDevice& tables = op.tables_on(device);
  const AdvectionDiffusionOptions& o = op.options();
  const bool by_velocity = o.unknown == TransportUnknown::kVelocity;
  const std::vector<int> axes = transport::factor_axes(op.domain(), o);
  const int nd = op.domain().shape().size();
  const int64_t n = op.plan().cells, F = std::ssize(axes);
  void* stream = fk::cuda::current_stream(device.index);
  const fk::TensorOptions f64{fk::DType::F64, device}, i32{fk::DType::I32, device};
  // Per factor its rows' rates; then the field's check flags and D.
  fk::Tensor summary = fk::empty({F + 2, n}, f64);
  CoefficientOnDevice run;
  run.field = field;
  run.plan.cells = n;
  run.plan.sensors = op.plan().sensors;
  run.plan.source = op.plan().source;
  for (int64_t f = 0; f < F; ++f) {
    cuda::TransportStencil s =
        transport::transport_stencil(op.domain(), o.boundary, o.scheme, axes[f]);
    for (int a = 0; a < nd; ++a) {
      if (by_velocity) {
        s.v[a] = field.data<double>() + a * n;
      } else if (a < std::ssize(tables.velocity)) {
        s.v[a] = tables.velocity[a].data<double>();
        s.v_uniform[a] = tables.velocity[a].numel() == 1;
      }
    }
    s.D = by_velocity ? tables.diffusivity.data<double>() : field.data<double>();
    s.D_uniform = by_velocity;
    const int64_t width = cuda::transport_stencil_width(s);
    auto rows = [&] {
      return Rows{fk::Tensor(), fk::empty({n * width}, i32), fk::empty({n * width}, f64),
                  s.lax_wendroff ? fk::empty({n * width}, f64) : fk::Tensor(), width};
    };
    auto per_tau = [](Rows& r) { return r.per_tau.defined() ? r.per_tau.data<double>() : nullptr; };
    Rows fwd = rows(), back = rows();
    cuda::launch_transport_stencil(s, width, fwd.col.data<int32_t>(), fwd.weight.data<double>(),
                                   per_tau(fwd), summary.data<double>() + f * n,
                                   f == 0 ? summary.data<double>() + F * n : nullptr, stream);
    cuda::launch_transport_stencil_transpose(
        s, width, fwd.col.data<int32_t>(), fwd.weight.data<double>(), per_tau(fwd),
        back.col.data<int32_t>(), back.weight.data<double>(), per_tau(back), stream);
    fk::profile::count_launch();
    fk::profile::count_launch();
    run.forward.push_back(std::move(fwd));
    run.transposed.push_back(std::move(back));
    transport::Factor factor;
    factor.axis = axes[f];
    run.plan.factors.push_back(std::move(factor));
    run.stencils.push_back(s);
  }
  summary.select(0, F + 1).copy_(by_velocity ? fk::full({n}, o.diffusivity, f64) : field.view({n}));
  // The one host read of an apply.
  const std::vector<double> top = fk::amax(summary, {1}).to_vector<double>();
  if (top[F] > 0) {  // the CPU's check names the first bad cell and its value
    const std::vector<double> host = field.to_vector<double>();
    if (by_velocity)
      transport::velocity_plan(op.plan(), op.domain(), o, host);
    else
      transport::diffusivity_plan(op.plan(), op.domain(), o, host);
    FK_CHECK(false, "nefi::AdvectionDiffusionOperator", "a finite field (D >= 0)",
             "a negative or non-finite value");
  }
  double stable = std::numeric_limits<double>::infinity();
  for (int64_t f = 0; f < F; ++f)
    stable = std::min(stable, transport::stable_substep(run.stencils[f], top[f], top[F + 1]));
  transport::schedule_steps(run.plan, stable, o);
  return run;
}

// The gradient in the field (D: cells; v: axes x cells) of <g, observations>
// (g: 1 x K observed, f64 on the device), transport_coefficients.cpp's
// schedule: per interval, last first, a state every checkpoint_run(S)
// substeps, then each run's factor inputs recomputed, last run first, and
// walked back through the transposes, each factor application adding its
// face terms (the diffusive fluxes' in D, or the advective fluxes' and the
// outflow's in v), chained to the cells at the end.
fk::Tensor coefficient_adjoint(const AdvectionDiffusionOperator& op, const CoefficientOnDevice& run,
                               const fk::Tensor& g) {
  const fk::Device device = g.device();
  const TransportTablesOnDevice& tables = op.tables_on(device);
  const Steps st(run.plan, run.forward, run.transposed, tables.sensors, device);
  const Plan& p = st.p;
  const bool by_velocity = op.options().unknown == TransportUnknown::kVelocity;
  const double* source = p.source ? tables.release.data<double>() : nullptr;
  const cuda::TransportGrid grid = transport::transport_grid(op.domain(), op.options().boundary);
  const std::vector<double> h = op.domain().spacing();
  // The face sums per axis at each face's lower cell (and the velocity's
  // outflow sums), and for the velocity its stencil over every axis.
  fk::Tensor G = fk::zeros({grid.axes, st.n}, st.f64);
  fk::Tensor G_out = by_velocity ? fk::zeros({grid.axes, st.n}, st.f64) : fk::Tensor();
  cuda::TransportStencil all = run.stencils.front();
  all.axis = -1;
  fk::Tensor lam = fk::zeros({1, st.n}, st.f64), next = fk::empty({1, st.n}, st.f64), c;
  int64_t step_end = 0;
  for (int64_t s : p.substeps) step_end += s;
  for (int64_t k = st.K - 1; k >= 0; --k) {
    inject(st, 1, k, g, lam);
    const int64_t S = p.substeps[k], step0 = step_end - S, run_len = transport::checkpoint_run(S);
    std::vector<fk::Tensor> marks;
    c = run.start[k].clone();
    for (int64_t s0 = 0; s0 < S; s0 += run_len) {
      marks.push_back(c.clone());
      st.steps(1, k, step0, s0, std::min(S, s0 + run_len), source, c, next,
               [](int64_t, size_t, const fk::Tensor&) {});
    }
    for (int64_t r = std::ssize(marks) - 1; r >= 0; --r) {
      const int64_t s0 = r * run_len, s1 = std::min(S, s0 + run_len);
      std::vector<fk::Tensor> inputs(static_cast<size_t>(s1 - s0) * st.nf);
      c = marks[r];  // consumed: the steps below reuse its buffer
      st.steps(1, k, step0, s0, s1, source, c, next,
               [&](int64_t s, size_t j, const fk::Tensor& in) {
                 inputs[(s - s0) * st.nf + j] = in.clone();
               });
      for (int64_t s = s1 - 1; s >= s0; --s)
        for (size_t j = st.nf; j-- > 0;) {
          const size_t f = factor_at(step0 + s, j, st.nf);
          const int axis = p.factors[f].axis;
          const double* in = inputs[(s - s0) * st.nf + j].data<double>();
          for (int a = 0; a < grid.axes; ++a) {
            if (axis >= 0 && a != axis) continue;
            if (by_velocity)
              cuda::launch_transport_velocity_terms(all, a, p.tau[k], in, lam.data<double>(),
                                                    G.data<double>(), G_out.data<double>(),
                                                    st.stream);
            else
              cuda::launch_transport_face_terms(grid, a, p.tau[k] / (h[a] * h[a]), in,
                                                lam.data<double>(), G.data<double>(), st.stream);
            fk::profile::count_launch();
          }
          st.step(true, f, 1, p.tau[k], lam, nullptr, next);
          std::swap(lam, next);
        }
    }
    step_end = step0;
  }
  fk::Tensor grad = fk::empty(run.field.shape(), st.f64);
  if (by_velocity)
    cuda::launch_transport_velocity_gradient(all, G.data<double>(), G_out.data<double>(),
                                             grad.data<double>(), st.stream);
  else
    cuda::launch_transport_diffusivity_gradient(grid, G.data<double>(), run.field.data<double>(),
                                                grad.data<double>(), st.stream);
  fk::profile::count_launch();
  fk::cuda::after_op(device.index);
  return grad;
}

struct CoefficientDeviceBackward : fk::autograd::Node {
  std::shared_ptr<const AdvectionDiffusionOperator> op;  // shares the constant tables
  std::shared_ptr<const CoefficientOnDevice> run;
  fk::Dims in_shape;
  const char* name() const override { return "AdvectionDiffusionCoefficientDeviceBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    fk::profile::OpScope scope("advection_diffusion_coefficient_device_backward");
    const fk::Device device = run->field.device();
    fk::cuda::detail::DeviceGuard guard(device.index);
    const fk::DType dtype = grads[0].dtype();
    fk::Tensor g = grads[0].device() == device ? grads[0] : grads[0].to(device);
    g = g.to(fk::DType::F64).contiguous();
    return {coefficient_adjoint(*op, *run, g).view(in_shape).to(dtype)};
  }
};

// op.apply(x) for a diffusivity map or a velocity on a device (shape and
// dtype checked).
fk::Tensor coefficient_device(const AdvectionDiffusionOperator& op, const fk::Tensor& x) {
  const fk::Device device = x.device();
  fk::Tensor field;
  {
    fk::autograd::NoGradGuard ng;
    field = x.detach().to(fk::DType::F64).contiguous();
  }
  auto run = std::make_shared<CoefficientOnDevice>(plan_on_device(op, field));
  const TransportTablesOnDevice& tables = op.tables_on(device);
  const Steps st(run->plan, run->forward, run->transposed, tables.sensors, device);
  const bool grad = fk::autograd::needs_grad(x);
  const fk::Tensor& release = tables.release;
  fk::Tensor c = st.p.source ? fk::zeros({1, st.n}, st.f64) : release.view({1, st.n}).clone();
  const fk::Tensor y = run_forward(st, 1, c, st.p.source ? release.data<double>() : nullptr,
                                   grad ? &run->start : nullptr);
  fk::cuda::after_op(device.index);
  fk::Tensor out;
  {
    fk::autograd::NoGradGuard ng;
    out = y.view(op.output_shape(op.domain().shape())).to(x.dtype());
  }
  if (grad) {
    auto node = std::make_shared<CoefficientDeviceBackward>();
    node->op = std::make_shared<const AdvectionDiffusionOperator>(op);
    node->run = std::move(run);
    node->in_shape = x.shape();
    fk::autograd::record(node, {x}, out);
  }
  return out;
}

}  // namespace

fk::Tensor advection_diffusion_device(const AdvectionDiffusionOperator& op, const fk::Tensor& x) {
  fk::profile::OpScope scope("advection_diffusion_device");
  FK_CHECK(x.device().is_cuda(), "nefi::AdvectionDiffusionOperator", "a field on a CUDA device",
           x.device().str());
  fk::cuda::detail::DeviceGuard guard(x.device().index);
  if (op.coefficient_unknown()) return coefficient_device(op, x);
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
  const fk::Tensor y = release_forward(op, x64, x.numel() / op.plan().cells);
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
