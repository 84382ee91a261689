#include "nefi/operators/advection_diffusion.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/operators/advection_diffusion_device.h"
#include "nefi/operators/transport_steps.h"

namespace nefi {
namespace {

using transport::euler_step;
using transport::factor_at;
using transport::interleave;
using transport::kBlock;
using transport::Plan;
using transport::StepWeights;

constexpr const char* kWhere = "nefi::AdvectionDiffusionOperator";

// A coefficient unknown's backward (the diffusivity map or the velocity):
// the gradient at the saved field, from the forward's plan and interval
// starts.
struct CoefficientBackward : fk::autograd::Node {
  transport::CoefficientRun run;
  Domain domain;
  AdvectionDiffusionOptions options;
  std::vector<double> D;  // the diffusivity unknown's map
  fk::Dims in_shape;
  const char* name() const override { return "AdvectionDiffusionCoefficientBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    fk::profile::OpScope scope("advection_diffusion_coefficient_backward");
    const fk::Tensor& g = grads[0];
    const std::vector<double> gy = g.to(fk::DType::F64).contiguous().to_vector<double>();
    const auto d = options.unknown == TransportUnknown::kVelocity
                       ? transport::velocity_gradient(run, domain, options, gy)
                       : transport::diffusivity_gradient(run, domain, options, D, gy);
    return {fk::from_vector(d, in_shape).to(g.dtype())};
  }
};

struct AdvectionDiffusionBackward : fk::autograd::Node {
  std::shared_ptr<const AdvectionDiffusionOperator> op;
  fk::Dims in_shape;
  const char* name() const override { return "AdvectionDiffusionBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    const fk::Tensor& g = grads[0];
    const int64_t per = static_cast<int64_t>(op->options().times.size()) * op->observed();
    const auto x =
        op->adjoint_rows(g.to(fk::DType::F64).contiguous().to_vector<double>(), g.numel() / per);
    return {fk::from_vector(x, in_shape).to(g.dtype())};
  }
};

}  // namespace

TransportBoundary parse_transport_boundary(const std::string& name) {
  if (name == "closed") return TransportBoundary::kClosed;
  if (name == "open") return TransportBoundary::kOpen;
  FK_CHECK(name == "periodic", kWhere, "a boundary closed, open or periodic", "'" + name + "'");
  return TransportBoundary::kPeriodic;
}

TransportScheme parse_transport_scheme(const std::string& name) {
  if (name == "upwind") return TransportScheme::kUpwind;
  FK_CHECK(name == "lax_wendroff", kWhere, "a scheme upwind or lax_wendroff", "'" + name + "'");
  return TransportScheme::kLaxWendroff;
}

TransportUnknown parse_transport_unknown(const std::string& name) {
  if (name == "initial") return TransportUnknown::kInitial;
  if (name == "diffusivity") return TransportUnknown::kDiffusivity;
  if (name == "velocity") return TransportUnknown::kVelocity;
  FK_CHECK(name == "source", kWhere, "an unknown initial, source, diffusivity or velocity",
           "'" + name + "'");
  return TransportUnknown::kSource;
}

AdvectionDiffusionOperator::AdvectionDiffusionOperator(Domain domain,
                                                       AdvectionDiffusionOptions options)
    : domain_(std::move(domain)), options_(std::move(options)) {
  const fk::Dims& shape = domain_.shape();
  const int nd = shape.size();
  const AdvectionDiffusionOptions& o = options_;
  FK_CHECK(nd >= 1 && nd <= 3, kWhere, "a 1-, 2- or 3-D domain", shape.str());
  FK_CHECK(o.velocity.empty() || static_cast<int>(o.velocity.size()) == nd, kWhere,
           "no velocity or one component per axis (" + fk::to_text(nd) + ")",
           fk::to_text(o.velocity.size()) + " components");
  auto plan = std::make_shared<Plan>();
  transport::Flow& flow = plan->flow;
  for (int a = 0; a < static_cast<int>(o.velocity.size()); ++a) {
    const fk::Tensor& v = o.velocity[a];
    const std::string which = "velocity component " + std::to_string(a);
    FK_CHECK(v.defined() && (v.shape() == shape || v.numel() == 1), kWhere,
             which + " of the grid's shape " + shape.str() + " or a single value",
             v.defined() ? v.shape().str() : "none");
    FK_CHECK(!fk::is_complex(v.dtype()), kWhere, "a real " + which, fk::name(v.dtype()));
    flow.v.push_back(v.to(fk::kCPU).to(fk::DType::F64).contiguous().to_vector<double>());
    for (double x : flow.v.back())
      FK_CHECK(std::isfinite(x), kWhere, "a finite " + which, "a non-finite value");
  }
  FK_CHECK(std::isfinite(o.diffusivity) && o.diffusivity >= 0, kWhere, "a diffusivity >= 0",
           fmt::format("{:g}", o.diffusivity));
  FK_CHECK(!o.times.empty(), kWhere, "at least one observation time", "none");
  for (size_t k = 0; k < o.times.size(); ++k)
    FK_CHECK(std::isfinite(o.times[k]) && o.times[k] > (k ? o.times[k - 1] : 0.0), kWhere,
             "increasing observation times > 0",
             fmt::format("{:g}", o.times[k]) + " after " +
                 (k ? fmt::format("{:g}", o.times[k - 1]) : std::string("t = 0")));
  FK_CHECK(o.boundary.size() == 1 || static_cast<int>(o.boundary.size()) == nd, kWhere,
           "one boundary for every axis or one per axis (" + fk::to_text(nd) + ")",
           fk::to_text(o.boundary.size()));
  FK_CHECK(o.courant > 0 && o.courant <= 1, kWhere, "courant in (0, 1]",
           fmt::format("{:g}", o.courant));
  const bool by_diffusivity = o.unknown == TransportUnknown::kDiffusivity;
  const bool by_coefficient = by_diffusivity || o.unknown == TransportUnknown::kVelocity;
  FK_CHECK(by_coefficient || (!o.release.defined() && !o.release_is_source), kWhere,
           "no release (the unknown is the release; give one with the unknown diffusivity or "
           "velocity)",
           o.release.defined() ? "one" : "release_is_source");
  FK_CHECK(o.unknown != TransportUnknown::kVelocity || o.velocity.empty(), kWhere,
           "no velocity option with the unknown velocity (the field is v)",
           fk::to_text(o.velocity.size()) + " components");
  if (by_coefficient) {
    const std::string field = by_diffusivity ? "D" : "v";
    FK_CHECK(!by_diffusivity || o.diffusivity == 0, kWhere,
             "no diffusivity option with the unknown diffusivity (the field is D)",
             fmt::format("{:g}", o.diffusivity));
    FK_CHECK(
        o.release.defined() && o.release.shape() == shape && !fk::is_complex(o.release.dtype()),
        kWhere,
        "a real release of the grid's shape " + shape.str() + " (the unknown is " + field + ")",
        o.release.defined() ? o.release.shape().str() + " " + fk::name(o.release.dtype()) : "none");
    plan->release = o.release.to(fk::kCPU).to(fk::DType::F64).contiguous().to_vector<double>();
    for (size_t i = 0; i < plan->release.size(); ++i)
      FK_CHECK(std::isfinite(plan->release[i]), kWhere, "a finite release",
               "a non-finite value at cell " + fk::to_text(i));
  }

  plan->cells = shape.numel();
  plan->source = by_coefficient ? o.release_is_source : o.unknown == TransportUnknown::kSource;
  if (o.sensors.defined()) {
    FK_CHECK(o.sensors.shape() == shape && !fk::is_complex(o.sensors.dtype()), kWhere,
             "a real sensor mask of the grid's shape " + shape.str(),
             o.sensors.shape().str() + " " + fk::name(o.sensors.dtype()));
    const auto m = o.sensors.to(fk::kCPU).to(fk::DType::F64).contiguous().to_vector<double>();
    for (size_t i = 0; i < m.size(); ++i) {
      FK_CHECK(std::isfinite(m[i]), kWhere, "a finite sensor mask",
               "a non-finite value at cell " + fk::to_text(i));
      if (m[i] > 0) plan->sensors.push_back(static_cast<int64_t>(i));
    }
    FK_CHECK(!plan->sensors.empty(), kWhere, "a sensor mask with at least one cell > 0",
             "none of its " + fk::to_text(m.size()) + " cells");
  }
  FK_CHECK(plan->cells <= std::numeric_limits<int32_t>::max(), kWhere,
           "at most 2^31 - 1 cells (the stencil stores int32 columns)", shape.str());
  transport::build_steps(*plan, domain_, {o.diffusivity}, o);
  plan_ = std::move(plan);
}

int AdvectionDiffusionOperator::factor_count() const {
  return static_cast<int>(plan_->factors.size());
}
const SparseRows& AdvectionDiffusionOperator::stencil(int factor) const {
  FK_CHECK(factor >= 0 && factor < factor_count(), std::string(kWhere) + "::stencil",
           "a factor in [0, " + fk::to_text(factor_count()) + ")", fk::to_text(factor));
  return plan_->factors[factor].L;
}
std::string AdvectionDiffusionOperator::fidelity_tag() const {
  return options_.scheme == TransportScheme::kUpwind ? "upwind-euler" : "lax-wendroff-split-euler";
}
const std::vector<int64_t>& AdvectionDiffusionOperator::substeps() const {
  return plan_->substeps;
}
const std::vector<double>& AdvectionDiffusionOperator::substep_length() const {
  return plan_->tau;
}
double AdvectionDiffusionOperator::stable_substep() const {
  return plan_->stable_tau;
}
int64_t AdvectionDiffusionOperator::observed() const {
  return plan_->observed();
}

double AdvectionDiffusionOperator::input_lower_bound() const {
  return options_.unknown == TransportUnknown::kDiffusivity ? 0.0 : Operator::input_lower_bound();
}

std::string AdvectionDiffusionOperator::input_name() const {
  return options_.unknown == TransportUnknown::kDiffusivity ? "diffusivity" : "field";
}

bool AdvectionDiffusionOperator::coefficient_unknown() const {
  return options_.unknown == TransportUnknown::kDiffusivity ||
         options_.unknown == TransportUnknown::kVelocity;
}

fk::Dims AdvectionDiffusionOperator::field_shape() const {
  fk::Dims s;
  if (options_.unknown == TransportUnknown::kVelocity) s.push_back(domain_.shape().size());
  for (int64_t d : domain_.shape()) s.push_back(d);
  return s;
}

std::vector<int> AdvectionDiffusionOperator::component_axes() const {
  if (options_.unknown == TransportUnknown::kVelocity) return {0};
  return {};
}

std::optional<double> AdvectionDiffusionOperator::homogeneity() const {
  if (coefficient_unknown()) return std::nullopt;
  return 1.0;
}

bool AdvectionDiffusionOperator::batchable() const {
  return !coefficient_unknown();
}

std::vector<double> AdvectionDiffusionOperator::forward_rows(const std::vector<double>& x,
                                                             int64_t rows) const {
  FK_CHECK(!coefficient_unknown(), std::string(kWhere) + "::forward_rows", "a release unknown",
           "the diffusivity or the velocity");
  const Plan& p = *plan_;
  const int64_t n = p.cells, m = p.observed(), K = std::ssize(p.tau);
  FK_CHECK(rows >= 0 && std::ssize(x) == rows * n, std::string(kWhere) + "::forward_rows",
           fk::to_text(rows) + " rows of " + fk::to_text(n) + " cells",
           fk::to_text(x.size()) + " values");
  const int64_t block = std::min(rows, kBlock);
  StepWeights M(p.factors, false);
  const size_t nf = p.factors.size();
  std::vector<double> out(static_cast<size_t>(rows * K * m)), c(n * block), next(n * block),
      src(p.source ? n * block : 0);
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
    const int64_t B = std::min(kBlock, rows - r0);
    if (p.source) {
      interleave(x.data() + r0 * n, n, B, src.data());
      std::fill(c.begin(), c.end(), 0.0);
    } else {
      interleave(x.data() + r0 * n, n, B, c.data());
    }
    for (int64_t k = 0, step = 0; k < K; ++k) {
      M.set(p.tau[k]);
      for (int64_t s = 0; s < p.substeps[k]; ++s, ++step)
        for (size_t j = 0; j < nf; ++j) {  // the source enters with the last: c' = P c + tau s
          const size_t f = factor_at(step, j, nf);
          euler_step(M.matrix(f), M.at(f), p.tau[k], B, c.data(),
                     p.source && j + 1 == nf ? src.data() : nullptr, next.data());
          c.swap(next);
        }
      for (int64_t b = 0; b < B; ++b) {
        double* o = out.data() + ((r0 + b) * K + k) * m;
        for (int64_t q = 0; q < m; ++q) o[q] = c[(p.sensors.empty() ? q : p.sensors[q]) * B + b];
      }
    }
  }
  return out;
}

std::vector<double> AdvectionDiffusionOperator::adjoint_rows(const std::vector<double>& g,
                                                             int64_t rows) const {
  FK_CHECK(!coefficient_unknown(), std::string(kWhere) + "::adjoint_rows", "a release unknown",
           "the diffusivity or the velocity");
  const Plan& p = *plan_;
  const int64_t n = p.cells, m = p.observed(), K = std::ssize(p.tau);
  FK_CHECK(rows >= 0 && std::ssize(g) == rows * K * m, std::string(kWhere) + "::adjoint_rows",
           fk::to_text(rows) + " rows of " + fk::to_text(K * m) + " observed values",
           fk::to_text(g.size()) + " values");
  const int64_t block = std::min(rows, kBlock);
  StepWeights M(p.factors, true);
  const size_t nf = p.factors.size();
  int64_t total = 0;  // substeps over all intervals
  for (int64_t n_k : p.substeps) total += n_k;
  std::vector<double> out(static_cast<size_t>(rows * n)), lam(n * block), next(n * block),
      ds(p.source ? n * block : 0);
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
    const int64_t B = std::min(kBlock, rows - r0);
    std::fill(lam.begin(), lam.end(), 0.0);
    std::fill(ds.begin(), ds.end(), 0.0);
    for (int64_t k = K - 1, step = total - 1; k >= 0; --k) {
      for (int64_t b = 0; b < B; ++b) {
        const double* gk = g.data() + ((r0 + b) * K + k) * m;
        for (int64_t q = 0; q < m; ++q)
          lam[(p.sensors.empty() ? q : p.sensors[q]) * B + b] += gk[q];
      }
      M.set(p.tau[k]);
      for (int64_t s = 0; s < p.substeps[k]; ++s, --step)
        for (size_t j = nf; j-- > 0;) {
          // c' = c + tau (M_f c [+ s in the last]): ds += tau lam',
          // lam = (I + tau M_f)^T lam'.
          const size_t f = factor_at(step, j, nf);
          if (p.source && j + 1 == nf)
            for (int64_t i = 0; i < n * B; ++i) ds[i] += p.tau[k] * lam[i];
          euler_step(M.matrix(f), M.at(f), p.tau[k], B, lam.data(), nullptr, next.data());
          lam.swap(next);
        }
    }
    const std::vector<double>& grad = p.source ? ds : lam;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < n; ++i) out[(r0 + b) * n + i] = grad[i * B + b];
  }
  return out;
}

fk::Tensor AdvectionDiffusionOperator::apply(const fk::Tensor& x) const {
  const fk::Dims& shape = domain_.shape();
  const int lead = x.dim() - shape.size();
  const bool by_velocity = options_.unknown == TransportUnknown::kVelocity;
  bool fits = coefficient_unknown() ? x.shape() == field_shape() : lead >= 0;
  for (int a = 0; fits && !coefficient_unknown() && a < shape.size(); ++a)
    fits = x.shape()[lead + a] == shape[a];
  auto expected = [&]() -> std::string {  // built only on a refusal
    if (by_velocity)
      return "the velocity of shape " + field_shape().str() + " (one component per axis, no batch)";
    if (coefficient_unknown())
      return "the diffusivity of the grid's shape " + shape.str() + " (no batch)";
    return "a field of shape (..., " + shape.str() + ")";
  };
  FK_CHECK(fits, kWhere, expected(), x.shape().str());
  FK_CHECK(x.dtype() == fk::DType::F32 || x.dtype() == fk::DType::F64, kWhere,
           "a real f32/f64 field", fk::name(x.dtype()));
  if (coefficient_unknown()) {
    if (!x.device().is_cpu()) return advection_diffusion_device(*this, x);
    const std::vector<double> field =
        x.detach().to(fk::DType::F64).contiguous().to_vector<double>();
    const bool grad = fk::autograd::needs_grad(x);
    auto node = grad ? std::make_shared<CoefficientBackward>() : nullptr;
    std::vector<double> y;
    {
      fk::profile::OpScope scope(by_velocity ? "advection_diffusion_velocity"
                                             : "advection_diffusion_diffusivity");
      transport::CoefficientRun* keep = grad ? &node->run : nullptr;
      y = transport::coefficient_forward(
          by_velocity ? transport::velocity_plan(*plan_, domain_, options_, field)
                      : transport::diffusivity_plan(*plan_, domain_, options_, field),
          keep);
    }
    fk::Tensor out = fk::from_vector(y, output_shape(field_shape())).to(x.dtype());
    if (grad) {
      node->domain = domain_;
      node->options = options_;
      if (!by_velocity) node->D = field;
      node->in_shape = x.shape();
      fk::autograd::record(node, {x}, out);
    }
    return out;
  }
  if (!x.device().is_cpu()) return advection_diffusion_device(*this, x);
  fk::Dims out_shape;
  int64_t rows = 1;
  for (int a = 0; a < lead; ++a) {
    out_shape.push_back(x.shape()[a]);
    rows *= x.shape()[a];
  }
  for (int64_t d : output_shape(shape)) out_shape.push_back(d);
  std::vector<double> y;
  {
    fk::profile::OpScope scope("advection_diffusion");
    y = forward_rows(x.detach().to(fk::DType::F64).contiguous().to_vector<double>(), rows);
  }
  fk::Tensor out = fk::from_vector(y, out_shape).to(x.dtype());
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<AdvectionDiffusionBackward>();
    node->op = std::make_shared<AdvectionDiffusionOperator>(*this);
    node->in_shape = x.shape();
    fk::autograd::record(node, {x}, out);
  }
  return out;
}

void AdvectionDiffusionOperator::check_grid(const fk::Dims& shape, const char* who) const {
  if (shape == domain_.shape() || shape == field_shape()) return;
  bool uniform = !options_.sensors.defined() && !options_.release.defined();
  for (const fk::Tensor& v : options_.velocity) uniform = uniform && v.numel() == 1;
  FK_CHECK(uniform && shape.size() == domain_.shape().size(), who,
           "the operator's grid " + domain_.shape().str() +
               (uniform ? std::string(" or another of its axes")
                        : " (a flow, sensors or a release given per cell belong to one grid)"),
           shape.str());
}

std::shared_ptr<Operator> AdvectionDiffusionOperator::at_resolution(const fk::Dims& shape) const {
  check_grid(shape, "nefi::AdvectionDiffusionOperator::at_resolution");
  if (shape == domain_.shape() || shape == field_shape())
    return std::make_shared<AdvectionDiffusionOperator>(*this);
  return std::make_shared<AdvectionDiffusionOperator>(domain_.at(shape), options_);
}

fk::Dims AdvectionDiffusionOperator::output_shape(const fk::Dims& shape) const {
  check_grid(shape, kWhere);
  fk::Dims out{static_cast<int64_t>(options_.times.size())};
  // The velocity's field shape (axes, *grid) observes its grid.
  const fk::Dims& grid = shape == field_shape() ? domain_.shape() : shape;
  if (plan_->sensors.empty())
    for (int64_t d : grid) out.push_back(d);
  else
    out.push_back(plan_->observed());
  return out;
}

const TransportTablesOnDevice& AdvectionDiffusionOperator::tables_on(fk::Device device) const {
  std::lock_guard<std::mutex> lock(device_cache_->mu);
  auto it = device_cache_->by_device.find(device.str());
  if (it != device_cache_->by_device.end()) return it->second;
  auto upload = [&](const auto& v) {
    return fk::from_vector(v, {static_cast<int64_t>(v.size())}, device);
  };
  TransportTablesOnDevice t;
  if (coefficient_unknown()) {
    t.release = upload(plan_->release);
    // The velocity's stencils read the option's D; the diffusivity's, the
    // known flow (the velocity unknown has none).
    if (options_.unknown == TransportUnknown::kVelocity)
      t.diffusivity = upload(std::vector<double>{options_.diffusivity});
    for (const std::vector<double>& v : plan_->flow.v) t.velocity.push_back(upload(v));
  } else {
    t.forward = transport::factor_rows_on(*plan_, false, device);
    t.transposed = transport::factor_rows_on(*plan_, true, device);
  }
  if (!plan_->sensors.empty()) t.sensors = upload(plan_->sensors);
  // std::map keeps its entries' addresses: the reference outlives the lock.
  return device_cache_->by_device[device.str()] = std::move(t);
}

int64_t AdvectionDiffusionOperator::device_launches() const {
  FK_CHECK(!coefficient_unknown(), std::string(kWhere) + "::device_launches", "a release unknown",
           "the diffusivity or the velocity (its substeps follow the field)");
  const Plan& p = *plan_;
  int64_t substeps = 0;
  for (int64_t n : p.substeps) substeps += n;
  const int64_t steps = substeps * std::ssize(p.factors), observations = std::ssize(p.tau);
  // Forward: the steps and a gather per observation; back: the transposed
  // steps, an inject per observation and (a source) an accumulate per substep.
  return 2 * (steps + observations) + (p.source ? substeps : 0);
}

bool AdvectionDiffusionOperator::graph_capturable() const {
  return !coefficient_unknown() && device_launches() <= kMaxCapturedTransportLaunches;
}

std::string AdvectionDiffusionOperator::not_capturable_reason() const {
  if (options_.unknown == TransportUnknown::kDiffusivity)
    return "the diffusivity unknown's substeps follow D: every apply reads D's largest value and "
           "its stencils' largest rates back to the host";
  if (options_.unknown == TransportUnknown::kVelocity)
    return "the velocity unknown's substeps follow v: every apply reads its stencils' largest "
           "rates back to the host";
  if (graph_capturable()) return "";
  return std::to_string(device_launches()) + " kernel launches per training step (over " +
         std::to_string(kMaxCapturedTransportLaunches) + ", a graph of that many nodes)";
}

// The tables serve every dtype (the steps run in f64).
void AdvectionDiffusionOperator::prepare_tables(fk::Device device, fk::DType) const {
  if (device.is_cuda()) tables_on(device);
}

}  // namespace nefi
