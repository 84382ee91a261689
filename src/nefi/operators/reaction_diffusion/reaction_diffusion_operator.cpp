#include "nefi/operators/reaction_diffusion/reaction_diffusion_operator.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/profile.h"
#include "nefi/operators/reaction_diffusion/gray_scott_device.h"

namespace nefi {
namespace {

using gray_scott::Grid;

// Writes the observed channels of state (u, v) as time t of the output.
void record_state(const ReactionDiffusionOptions& o, int64_t t, int64_t n, const double* u,
                  const double* v, double* out) {
  const int64_t ch = o.observe_u + o.observe_v;
  if (o.observe_u) std::copy(u, u + n, out + (t * ch) * n);
  if (o.observe_v) std::copy(v, v + n, out + (t * ch + ch - 1) * n);
}

// Adds the cotangents of time t's observed channels to (ub, vb).
void add_cotangent(const ReactionDiffusionOptions& o, int64_t t, int64_t n, const double* g,
                   double* ub, double* vb) {
  const int64_t ch = o.observe_u + o.observe_v;
  if (o.observe_u)
    for (int64_t i = 0; i < n; ++i) ub[i] += g[(t * ch) * n + i];
  if (o.observe_v)
    for (int64_t i = 0; i < n; ++i) vb[i] += g[(t * ch + ch - 1) * n + i];
}

// The per-cell coefficients of a solve whose unknown field is x, with F the
// feed rate per cell (x itself, or the scalar F repeated).
gray_scott::Fields fields_of(RDUnknown unknown, const std::vector<double>& x,
                             const std::vector<double>& F) {
  return {F.data(), unknown == RDUnknown::kK ? x.data() : nullptr,
          unknown == RDUnknown::kDu ? x.data() : nullptr};
}

struct ReactionDiffusionBackward : fk::autograd::Node {
  ReactionDiffusionOptions options;
  Grid grid;
  RDSchedule sched;
  std::vector<double> x, F;  // the unknown field, and the feed rate per cell
  // (u, v) at substeps 0, c, 2c, ... as (blocks, 2, n0, n1) f64, held in fk
  // memory so the memory statistics see it.
  fk::Tensor checkpoints;
  fk::Dims in_shape;
  fk::DType dtype;
  const char* name() const override { return "ReactionDiffusionBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override;
};

std::vector<fk::Tensor> ReactionDiffusionBackward::apply(std::vector<fk::Tensor>&& grads) {
  fk::autograd::NoGradGuard ng;
  fk::profile::OpScope scope("gray_scott_adjoint");
  const int64_t n = grid.size(), S = sched.total, every = sched.every;
  const auto g = grads[0].to(fk::DType::F64).contiguous().to_vector<double>();
  std::vector<double> ub(n, 0.0), vb(n, 0.0), xb(n, 0.0);
  const gray_scott::Fields f = fields_of(options.unknown, x, F);
  gray_scott::FieldGrads fg;
  (options.unknown == RDUnknown::kF   ? fg.F
   : options.unknown == RDUnknown::kK ? fg.k
                                      : fg.Du) = xb.data();
  std::vector<double> block(2 * n * every);  // the states of one block
  gray_scott::Workspace w(n);
  int64_t t = static_cast<int64_t>(sched.obs.size()) - 1;
  for (int64_t b = (S - 1) / every; b >= 0; --b) {
    const int64_t start = b * every, end = std::min(S, start + every);
    const double* saved = checkpoints.data<double>() + 2 * n * b;
    std::copy(saved, saved + 2 * n, block.begin());
    for (int64_t s = start + 1; s < end; ++s) {
      double* next = block.data() + 2 * n * (s - start);
      std::copy(next - 2 * n, next, next);
      gray_scott::step(grid, options.rates, f, sched.tau, next, next + n, w);
    }
    for (int64_t s = end; s > start; --s) {
      if (t >= 0 && sched.obs[t] == s)
        add_cotangent(options, t--, n, g.data(), ub.data(), vb.data());
      const double* before = block.data() + 2 * n * (s - 1 - start);
      gray_scott::adjoint_step(grid, options.rates, f, sched.tau, before, before + n, ub.data(),
                               vb.data(), fg, w);
    }
  }
  return {fk::from_vector(xb, in_shape).to(dtype)};
}

// lap(x) as fk ops (the unrolled reference): face differences padded with
// zero flux (Neumann) or rolled (periodic).
fk::Tensor laplacian_ops(const fk::Tensor& x, const Grid& g) {
  fk::Tensor out;
  for (int a = 0; a < 2; ++a) {
    const int64_t n = x.size(a);
    const double s = 1.0 / (a == 0 ? g.h0 * g.h0 : g.h1 * g.h1);
    fk::Tensor term;
    if (g.boundary == gray_scott::Boundary::kPeriodic) {
      term = fk::roll(x, {1}, {a}) + fk::roll(x, {-1}, {a}) - x * 2.0;
    } else {
      const fk::Tensor d = x.narrow(a, 1, n - 1) - x.narrow(a, 0, n - 1);
      const fk::Tensor flux =
          fk::pad(d, a == 0 ? std::vector<int64_t>{0, 0, 1, 1} : std::vector<int64_t>{1, 1});
      term = flux.narrow(a, 1, n) - flux.narrow(a, 0, n);
    }
    out = a == 0 ? term * s : out + term * s;
  }
  return out;
}

// div(D grad x) as fk ops: harmonic face means of D times the face
// differences, zero flux on Neumann faces, wrapped on a periodic grid.
fk::Tensor diffusion_ops(const fk::Tensor& x, const fk::Tensor& D, const Grid& g) {
  fk::Tensor out;
  for (int a = 0; a < 2; ++a) {
    const int64_t n = x.size(a);
    const double s = 1.0 / (a == 0 ? g.h0 * g.h0 : g.h1 * g.h1);
    fk::Tensor term;
    if (g.boundary == gray_scott::Boundary::kPeriodic) {
      const fk::Tensor Dn = fk::roll(D, {-1}, {a});  // the next cell's
      const fk::Tensor flux = D * Dn * 2.0 / (D + Dn) * (fk::roll(x, {-1}, {a}) - x);
      term = flux - fk::roll(flux, {1}, {a});
    } else {
      const fk::Tensor Dl = D.narrow(a, 0, n - 1), Dr = D.narrow(a, 1, n - 1);
      const fk::Tensor d =
          (x.narrow(a, 1, n - 1) - x.narrow(a, 0, n - 1)) * Dl * Dr * 2.0 / (Dl + Dr);
      const fk::Tensor flux =
          fk::pad(d, a == 0 ? std::vector<int64_t>{0, 0, 1, 1} : std::vector<int64_t>{1, 1});
      term = flux.narrow(a, 1, n) - flux.narrow(a, 0, n);
    }
    out = a == 0 ? term * s : out + term * s;
  }
  return out;
}

}  // namespace

struct ReactionDiffusionOperator::InitialStates {
  std::mutex mu;
  std::map<std::string, fk::Tensor> by_device;
};

ReactionDiffusionOperator::ReactionDiffusionOperator(Domain domain,
                                                     ReactionDiffusionOptions options)
    : domain_(std::move(domain)), options_(std::move(options)) {
  const char* who = "nefi::ReactionDiffusionOperator";
  FK_CHECK(domain_.ndim() == 2 && domain_.shape()[0] >= 3 && domain_.shape()[1] >= 3, who,
           "a 2-D domain of >= 3 cells per axis", domain_.str());
  const auto& r = options_.rates;
  FK_CHECK(r.k >= 0 && r.Du >= 0 && r.Dv >= 0, who, "k, Du, Dv >= 0",
           fk::to_text(r.k) + ", " + fk::to_text(r.Du) + ", " + fk::to_text(r.Dv));
  FK_CHECK(options_.dt > 0, who, "dt > 0", fk::to_text(options_.dt));
  FK_CHECK(options_.observe_u || options_.observe_v, who, "u or v observed", "neither");
  FK_CHECK(options_.F >= 0, who, "a feed rate F >= 0", fk::to_text(options_.F));
  const bool du = options_.unknown == RDUnknown::kDu;
  FK_CHECK(du ? options_.field_max > 0 : options_.field_max >= 0, who,
           du ? "field_max > 0 (a Du bound)" : "field_max >= 0", fk::to_text(options_.field_max));
  FK_CHECK(options_.substep_factor >= 1 && options_.substep_factor <= 64, who,
           "substep_factor in [1, 64]", fk::to_text(options_.substep_factor));
  FK_CHECK(options_.checkpoint_every >= 0, who, "checkpoint_every >= 0 (0: sqrt)",
           fk::to_text(options_.checkpoint_every));
  FK_CHECK(options_.device_fused_cells >= 0 && options_.device_fused_cells <= kMaxDeviceFusedCells,
           who,
           "device_fused_cells in [0, " + fk::to_text(kMaxDeviceFusedCells) +
               "] (0: never fused; above, one block would take too many cells)",
           fk::to_text(options_.device_fused_cells));
  FK_CHECK(!options_.obs_times.empty(), who, "at least one observation time", "none");
  int64_t last = 0;
  for (double t : options_.obs_times) {
    const double steps = t / options_.dt;
    const int64_t k = std::llround(steps);
    FK_CHECK(k > last && k <= 1000000 && std::abs(steps - k) < 1e-9 * std::max(1.0, steps), who,
             "increasing positive multiples of dt = " + fk::to_text(options_.dt), fk::to_text(t));
    obs_steps_.push_back(last = k);
  }
  initial_states_ = std::make_shared<InitialStates>();
}

gray_scott::Grid ReactionDiffusionOperator::grid() const {
  const auto h = domain_.spacing();
  return {domain_.shape()[0], domain_.shape()[1], h[0], h[1], options_.boundary};
}

int64_t ReactionDiffusionOperator::substeps(double peak) const {
  gray_scott::Rates r = options_.rates;
  double F_max = options_.F;
  const double top = std::max(options_.field_max, peak);
  switch (options_.unknown) {
    case RDUnknown::kF:
      F_max = top;
      break;
    case RDUnknown::kK:
      r.k = top;
      break;
    case RDUnknown::kDu:
      r.Du = top;
      break;
  }
  return gray_scott::stable_substeps(grid(), r, options_.dt, F_max) * options_.substep_factor;
}

std::shared_ptr<Operator> ReactionDiffusionOperator::at_resolution(const fk::Dims& shape) const {
  auto op = std::make_shared<ReactionDiffusionOperator>(*this);
  op->domain_ = domain_.at(shape);
  op->initial_states_ = std::make_shared<InitialStates>();
  return op;
}

RDSchedule ReactionDiffusionOperator::schedule(double peak) const {
  RDSchedule sc;
  sc.m = substeps(peak);
  sc.tau = options_.dt / sc.m;
  for (int64_t k : obs_steps_) sc.obs.push_back(k * sc.m);
  sc.total = sc.obs.back();
  sc.every = options_.checkpoint_every > 0
                 ? std::min(options_.checkpoint_every, sc.total)
                 : static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(sc.total))));
  return sc;
}

double ReactionDiffusionOperator::schedule_limit() const {
  // substeps() is a non-decreasing step function of the peak: bisect for
  // its first jump above field_max, down to adjacent doubles.
  const int64_t m = substeps(options_.field_max);
  double lo = options_.field_max, hi = std::max(2 * lo, 1.0);
  while (substeps(hi) == m) hi *= 2;
  while (std::nextafter(lo, hi) < hi) {
    const double mid = lo + (hi - lo) / 2;
    (substeps(mid) == m ? lo : hi) = mid;
  }
  return lo;
}

fk::Tensor ReactionDiffusionOperator::initial_state_on(fk::Device device) const {
  std::lock_guard<std::mutex> lock(initial_states_->mu);
  fk::Tensor& t = initial_states_->by_device[device.str()];
  if (!t.defined()) {
    const Grid g = grid();
    std::vector<double> u, v;
    gray_scott::initial_condition(g, options_.ic_modes[0], options_.ic_modes[1], u, v);
    u.insert(u.end(), v.begin(), v.end());
    t = fk::from_vector(u, {2, g.n0, g.n1}, device);
  }
  return t;
}

void ReactionDiffusionOperator::prepare_tables(fk::Device device, fk::DType) const {
  if (device.is_cuda() && options_.grad_mode == RDGradMode::kCheckpoint) initial_state_on(device);
}

fk::Dims ReactionDiffusionOperator::output_shape(const fk::Dims& shape) const {
  FK_CHECK(shape.size() == 2, "nefi::ReactionDiffusionOperator", "a field shape (n0, n1)",
           shape.str());
  return {static_cast<int64_t>(obs_steps_.size()) * channels(), shape[0], shape[1]};
}

void ReactionDiffusionOperator::check_field(double lowest) const {
  if (options_.unknown == RDUnknown::kDu)
    FK_CHECK(lowest > 0, "nefi::ReactionDiffusionOperator", "a Du field > 0",
             "a minimum of " + fk::to_text(lowest));
}

fk::Tensor ReactionDiffusionOperator::apply(const fk::Tensor& x) const {
  FK_CHECK(x.shape() == domain_.shape(), "nefi::ReactionDiffusionOperator",
           "a coefficient field of shape " + domain_.shape().str(), x.shape().str());
  FK_CHECK(x.dtype() == fk::DType::F32 || x.dtype() == fk::DType::F64,
           "nefi::ReactionDiffusionOperator", "a real f32/f64 field", fk::name(x.dtype()));
  if (options_.grad_mode == RDGradMode::kAutograd) return apply_unrolled(x);
  if (!x.device().is_cpu()) return gray_scott_device(*this, x);
  const bool record = fk::autograd::needs_grad(x);
  const Grid g = grid();
  const int64_t n = g.size();
  auto node = std::make_shared<ReactionDiffusionBackward>();
  node->x = x.detach().to(fk::DType::F64).contiguous().to_vector<double>();
  const auto [lo, hi] = std::minmax_element(node->x.begin(), node->x.end());
  check_field(*lo);
  node->F = options_.unknown == RDUnknown::kF ? node->x : std::vector<double>(n, options_.F);
  const gray_scott::Fields f = fields_of(options_.unknown, node->x, node->F);
  node->sched = schedule(*hi);
  const RDSchedule& sc = node->sched;
  if (record)
    node->checkpoints =
        fk::empty({(sc.total + sc.every - 1) / sc.every, 2, g.n0, g.n1}, {fk::DType::F64});
  std::vector<double> state(2 * n), out(obs_steps_.size() * channels() * n);
  std::vector<double> u, v;
  gray_scott::initial_condition(g, options_.ic_modes[0], options_.ic_modes[1], u, v);
  std::copy(u.begin(), u.end(), state.begin());
  std::copy(v.begin(), v.end(), state.begin() + n);
  {
    fk::profile::OpScope scope("gray_scott");
    gray_scott::Workspace w(n);
    size_t t = 0;
    for (int64_t s = 0; s < sc.total; ++s) {
      if (record && s % sc.every == 0)
        std::copy(state.begin(), state.end(),
                  node->checkpoints.data<double>() + s / sc.every * 2 * n);
      gray_scott::step(g, options_.rates, f, sc.tau, state.data(), state.data() + n, w);
      if (s + 1 == sc.obs[t])
        record_state(options_, static_cast<int64_t>(t++), n, state.data(), state.data() + n,
                     out.data());
    }
  }
  fk::Tensor y = fk::from_vector(out, output_shape(domain_.shape())).to(x.dtype());
  if (record) {
    node->options = options_;
    node->grid = g;
    node->in_shape = x.shape();
    node->dtype = x.dtype();
    fk::autograd::record(node, {x}, y);
  }
  return y;
}

std::string ReactionDiffusionOperator::not_capturable_reason() const {
  if (options_.grad_mode == RDGradMode::kCheckpoint) return "";
  return "grad_mode autograd copies the field to the host at every apply (its range checks it and "
         "sets the substep count, so the number of steps depends on the values) and uploads the "
         "initial state each time (a captured step needs grad_mode checkpoint, which steps with "
         "field_max's schedule)";
}

fk::Tensor ReactionDiffusionOperator::apply_unrolled(const fk::Tensor& x) const {
  const Grid g = grid();
  const fk::Tensor f = x.to(fk::DType::F64);
  double peak;
  {
    fk::autograd::NoGradGuard ng;
    const auto fv = f.detach().contiguous().to_vector<double>();
    const auto [lo, hi] = std::minmax_element(fv.begin(), fv.end());
    check_field(*lo);
    peak = *hi;
  }
  const int64_t m = substeps(peak);
  const double tau = options_.dt / m;
  const auto& r = options_.rates;
  const RDUnknown unknown = options_.unknown;
  const double F = options_.F;
  std::vector<double> u0, v0;
  gray_scott::initial_condition(g, options_.ic_modes[0], options_.ic_modes[1], u0, v0);
  // On a device the field's: this reference runs wherever the field lives.
  fk::Tensor u = fk::from_vector(u0, domain_.shape(), x.device()),
             v = fk::from_vector(v0, domain_.shape(), x.device());
  std::vector<fk::Tensor> snaps;
  int64_t s = 0;
  for (int64_t k : obs_steps_) {
    for (; s < k * m; ++s) {
      const fk::Tensor uvv = u * v * v;
      fk::Tensor du, dv;
      if (unknown == RDUnknown::kF) {
        du = laplacian_ops(u, g) * r.Du - uvv + f * (-u + 1.0);
        dv = laplacian_ops(v, g) * r.Dv + uvv - (f + r.k) * v;
      } else {
        const fk::Tensor diff_u =
            unknown == RDUnknown::kDu ? diffusion_ops(u, f, g) : laplacian_ops(u, g) * r.Du;
        du = diff_u - uvv + (-u + 1.0) * F;
        dv = laplacian_ops(v, g) * r.Dv + uvv -
             (unknown == RDUnknown::kK ? (f + F) * v : v * (F + r.k));
      }
      u = u + du * tau;
      v = v + dv * tau;
    }
    if (options_.observe_u) snaps.push_back(u);
    if (options_.observe_v) snaps.push_back(v);
  }
  return fk::stack(snaps, 0).to(x.dtype());
}

}  // namespace nefi
