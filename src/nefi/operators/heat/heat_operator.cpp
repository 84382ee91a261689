#include "nefi/operators/heat/heat_operator.h"

#include <limits>

#include "fk/autograd.h"
#include "fk/cuda/graph.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "nefi/operators/heat/heat_modes.h"
#include "nefi/operators/heat/step_solver.h"

namespace nefi {
namespace {

// 1 where every cell of α is finite and > 0, else NaN: a 0-dim tensor in
// α's dtype on its device, made there (amin and amax propagate a NaN cell,
// and NaN fails both comparisons).
fk::Tensor device_validity(const fk::Tensor& alpha) {
  fk::autograd::NoGradGuard ng;
  const fk::Tensor a = alpha.detach();
  const fk::Tensor lo = fk::amin(a), hi = fk::amax(a);
  const fk::Tensor nan = fk::scalar_like(lo, std::numeric_limits<double>::quiet_NaN());
  const fk::Tensor positive =
      fk::where(fk::gt(lo, fk::scalar_like(lo, 0.0)), fk::scalar_like(lo, 1.0), nan);
  return fk::where(fk::lt(hi, fk::scalar_like(hi, std::numeric_limits<double>::infinity())),
                   positive, nan);
}

}  // namespace

HeatOperator::HeatOperator(HeatConfig cfg, fk::Dims shape)
    : cfg_(std::move(cfg)), shape_(std::move(shape)) {
  cfg_.validate();
  FK_CHECK(shape_.size() == 3 && shape_[0] >= 3 && shape_[1] >= 3 && shape_[2] >= 3,
           "nefi::HeatOperator",
           "a grid (nx, ny, nz) with every axis >= 3 (the stencil's smallest)", shape_.str());
  t0_ = flash_cell_averages(cfg_.flash, shape_, cfg_.extent);
  auto plan = std::make_shared<heat::HeatPlan>();
  const auto h = spacing();
  plan->g = {shape_[0],
             shape_[1],
             shape_[2],
             h[0],
             h[1],
             h[2],
             cfg_.dt / static_cast<double>(cfg_.implicit_substeps),
             cfg_.back_bc == "robin" ? cfg_.robin_h / h[2] : 0.0,
             cfg_.face_mode == "arithmetic"};
  plan->g.lateral_neumann = cfg_.lateral_bc == "neumann";
  plan->substeps = cfg_.implicit_substeps;
  plan->flat = cfg_.stencil != "roll";
  plan->solver = {cfg_.solver, cfg_.jacobi_iters, cfg_.cg_tol, cfg_.cg_max_iter, cfg_.check_every};
  plan->frames = observed_frames();
  plan->t0 = t0_;
  plan_ = std::move(plan);
}

std::vector<double> HeatOperator::spacing() const {
  std::vector<double> h(3);
  for (int a = 0; a < 3; ++a) h[a] = cfg_.extent[a] / static_cast<double>(shape_[a]);
  return h;
}

std::vector<int64_t> HeatOperator::observed_frames() const {
  std::vector<int64_t> f;
  for (int64_t i = cfg_.first_frame; i <= cfg_.n_frames; i += cfg_.frame_stride) f.push_back(i);
  return f;
}

void HeatOperator::check_alpha(const fk::Tensor& alpha, const char* where, bool scan_device) const {
  FK_CHECK(alpha.defined() && alpha.shape() == shape_, where, "alpha of shape " + shape_.str(),
           alpha.defined() ? alpha.shape().str() : "an undefined tensor");
  FK_CHECK(alpha.dtype() == fk::DType::F32 || alpha.dtype() == fk::DType::F64, where,
           "f32 or f64 alpha", fk::name(alpha.dtype()));
  if (alpha.device().is_cuda())
    FK_CHECK(plan_->flat && (cfg_.solver == "jacobi" || cfg_.solver == "chebyshev"), where,
             "stencil flat (or auto) and solver jacobi or chebyshev for a CUDA alpha",
             "stencil " + cfg_.stencil + ", solver " + cfg_.solver);
  // A zero or negative diffusivity would turn the harmonic means into NaN
  // trajectories; one pass over α (a host copy of a device α) names the first
  // bad cell instead. A device step does not read α back (apply scales its
  // result by device_validity instead), and a captured one cannot: its values
  // do not exist until the graph runs.
  if (alpha.device().is_cuda() && (!scan_device || fk::cuda::capturing(alpha.device().index)))
    return;
  fk::autograd::NoGradGuard ng;
  const fk::Tensor host = alpha.detach().to(fk::kCPU);
  const fk::Tensor a = host.is_contiguous() ? host : host.contiguous();
  auto scan = [&](auto tag) {
    using T = decltype(tag);
    const T* p = a.data<T>();
    for (int64_t i = 0, n = a.numel(); i < n; ++i)
      FK_CHECK(p[i] > T(0) && p[i] < std::numeric_limits<T>::infinity(), where,
               "a finite alpha > 0 in every cell",
               fk::to_text(p[i]) + " at flat index " + fk::to_text(i));
  };
  if (a.dtype() == fk::DType::F64)
    scan(double{});
  else
    scan(float{});
}

fk::Tensor HeatOperator::apply(const fk::Tensor& alpha) const {
  check_alpha(alpha, "nefi::HeatOperator::apply", false);
  if (!fk::autograd::needs_grad(alpha) || cfg_.grad_mode == "adjoint") {
    const fk::Tensor out = heat::apply_adjoint(alpha, plan_);
    if (alpha.device().is_cpu()) return out;
    // x * 1 is x bit for bit (and its gradient g * 1 is g); a bad α turns
    // the frames, so the step's loss, NaN: the solver's one read-back of the
    // loss sees it and counts the step bad, with no host read here.
    return fk::mul(out, device_validity(alpha));
  }
  FK_CHECK(alpha.device().is_cpu(), "nefi::HeatOperator::apply",
           "grad_mode adjoint for a CUDA alpha that requires grad",
           "grad_mode " + cfg_.grad_mode + " with alpha on " + alpha.device().str());
  if (cfg_.grad_mode == "checkpoint") return heat::apply_checkpoint(alpha, plan_);
  return heat::apply_unrolled(alpha, *plan_);
}

// T⁰ on the device in alpha's dtype (every rollout starts from it).
void HeatOperator::prepare_tables(fk::Device device, fk::DType dtype) const {
  if (device.is_cuda() && (dtype == fk::DType::F32 || dtype == fk::DType::F64))
    plan_->initial_state(dtype, device);
}

bool HeatOperator::graph_capturable() const {
  return host_only_reason().empty();
}

std::string HeatOperator::not_capturable_reason() const {
  if (!plan_->flat)
    return "stencil roll builds every sweep from fk::roll on host vectors (a captured step needs "
           "stencil flat or auto)";
  if (cfg_.solver == "cg")
    return "solver cg reads its residual norm back to the host every check_every = " +
           std::to_string(cfg_.check_every) +
           " iteration(s) to test convergence (a captured step needs solver jacobi or chebyshev)";
  if (cfg_.solver != "jacobi" && cfg_.solver != "chebyshev")
    return "solver " + cfg_.solver +
           " runs on host vectors (a captured step needs solver jacobi or chebyshev)";
  if (cfg_.grad_mode == "checkpoint")
    return "grad_mode checkpoint recomputes each frame's rollout on host vectors in the backward "
           "(a captured step needs grad_mode adjoint)";
  if (cfg_.grad_mode != "adjoint")
    return "grad_mode " + cfg_.grad_mode +
           " records every inner iteration on the host autograd tape (a captured step needs "
           "grad_mode adjoint)";
  return "";
}

std::string HeatOperator::host_only_reason() const {
  if (!plan_->flat) return "stencil roll runs on host vectors (the device needs stencil flat)";
  if (cfg_.solver != "jacobi" && cfg_.solver != "chebyshev")
    return "solver " + cfg_.solver +
           " runs on host vectors (the device needs solver jacobi or chebyshev)";
  if (cfg_.grad_mode != "adjoint")
    return "grad_mode " + cfg_.grad_mode +
           " differentiates on host vectors (the device needs grad_mode adjoint)";
  return "";
}

std::shared_ptr<Operator> HeatOperator::at_resolution(const fk::Dims& shape) const {
  auto op = std::make_shared<HeatOperator>(cfg_, shape);
  op->primary = primary;
  return op;
}

fk::Dims HeatOperator::output_shape(const fk::Dims& shape) const {
  FK_CHECK(shape.size() == 3, "nefi::HeatOperator::output_shape", "a grid (nx, ny, nz)",
           shape.str());
  return {static_cast<int64_t>(observed_frames().size()), shape[0], shape[1]};
}

std::string HeatOperator::fidelity_tag() const {
  return "implicit-euler-" + cfg_.solver;
}

fk::Tensor HeatOperator::simulate(const fk::Tensor& alpha_in) const {
  check_alpha(alpha_in, "nefi::HeatOperator::simulate");
  fk::autograd::NoGradGuard ng;
  const fk::Tensor alpha = alpha_in.detach();
  const fk::DType dt = alpha.dtype();
  fk::Tensor states =
      fk::empty({cfg_.n_frames + 1, shape_[0], shape_[1], shape_[2]}, {dt, alpha.device()});
  states.select(0, 0).copy_(t0_.to(dt));
  auto solver = heat::make_step_solver(alpha, plan_->g, plan_->flat, plan_->solver);
  solver->start(states.select(0, 0));
  // result() after every substep: it also hands the solution to the next advance().
  fk::Tensor scratch = fk::empty(shape_, {dt, alpha.device()});
  for (int64_t f = 1; f <= cfg_.n_frames; ++f) {
    for (int64_t s = 0; s < cfg_.implicit_substeps; ++s) {
      solver->advance();
      fk::Tensor next = s + 1 == cfg_.implicit_substeps ? states.select(0, f) : scratch;
      solver->result(next);
    }
  }
  return states;
}

fk::Tensor HeatOperator::jacobi_bound(const fk::Tensor& alpha) const {
  check_alpha(alpha, "nefi::HeatOperator::jacobi_bound");
  fk::autograd::NoGradGuard ng;
  return heat::gershgorin_bound(heat::build_system(alpha.detach().to(fk::kCPU), plan_->g));
}

const heat::StepGeometry& HeatOperator::step_geometry() const {
  return plan_->g;
}

}  // namespace nefi
