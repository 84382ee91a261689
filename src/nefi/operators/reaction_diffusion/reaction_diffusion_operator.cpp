#include "nefi/operators/reaction_diffusion/reaction_diffusion_operator.h"

#include <algorithm>
#include <cmath>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/profile.h"

namespace nefi {
namespace {

using gray_scott::Grid;

// One solve's time stepping: m substeps of tau per dt, S in all, and the
// substep counts after which the state is observed.
struct Schedule {
  int64_t m = 1, total = 0;
  double tau = 1;
  std::vector<int64_t> obs;
};

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

struct ReactionDiffusionBackward : fk::autograd::Node {
  ReactionDiffusionOptions options;
  Grid grid;
  Schedule sched;
  int64_t every = 1;
  std::vector<double> F;
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
  const int64_t n = grid.size(), S = sched.total;
  const auto g = grads[0].to(fk::DType::F64).contiguous().to_vector<double>();
  std::vector<double> ub(n, 0.0), vb(n, 0.0), Fb(n, 0.0);
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
      gray_scott::step(grid, options.rates, F.data(), sched.tau, next, next + n, w);
    }
    for (int64_t s = end; s > start; --s) {
      if (t >= 0 && sched.obs[t] == s)
        add_cotangent(options, t--, n, g.data(), ub.data(), vb.data());
      const double* before = block.data() + 2 * n * (s - 1 - start);
      gray_scott::adjoint_step(grid, options.rates, F.data(), sched.tau, before, before + n,
                               ub.data(), vb.data(), Fb.data(), w);
    }
  }
  return {fk::from_vector(Fb, in_shape).to(dtype)};
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

}  // namespace

ReactionDiffusionOperator::ReactionDiffusionOperator(Domain domain,
                                                     ReactionDiffusionOptions options)
    : domain_(std::move(domain)), options_(std::move(options)) {
  const char* who = "nefi::ReactionDiffusionOperator";
  FK_CHECK(domain_.ndim() == 2 && domain_.shape()[0] >= 3 && domain_.shape()[1] >= 3, who,
           "a 2-D domain of >= 3 cells per axis", domain_.str());
  const auto& r = options_.rates;
  FK_CHECK(r.k >= 0 && r.Du >= 0 && r.Dv >= 0, who, "k, Du, Dv >= 0",
           std::to_string(r.k) + ", " + std::to_string(r.Du) + ", " + std::to_string(r.Dv));
  FK_CHECK(options_.dt > 0, who, "dt > 0", std::to_string(options_.dt));
  FK_CHECK(options_.observe_u || options_.observe_v, who, "u or v observed", "neither");
  FK_CHECK(options_.F_max >= 0, who, "F_max >= 0", std::to_string(options_.F_max));
  FK_CHECK(options_.substep_factor >= 1 && options_.substep_factor <= 64, who,
           "substep_factor in [1, 64]", std::to_string(options_.substep_factor));
  FK_CHECK(options_.checkpoint_every >= 0, who, "checkpoint_every >= 0 (0: sqrt)",
           std::to_string(options_.checkpoint_every));
  FK_CHECK(!options_.obs_times.empty(), who, "at least one observation time", "none");
  int64_t last = 0;
  for (double t : options_.obs_times) {
    const double steps = t / options_.dt;
    const int64_t k = std::llround(steps);
    FK_CHECK(k > last && k <= 1000000 && std::abs(steps - k) < 1e-9 * std::max(1.0, steps), who,
             "increasing positive multiples of dt = " + std::to_string(options_.dt),
             std::to_string(t));
    obs_steps_.push_back(last = k);
  }
}

gray_scott::Grid ReactionDiffusionOperator::grid() const {
  const auto h = domain_.spacing();
  return {domain_.shape()[0], domain_.shape()[1], h[0], h[1], options_.boundary};
}

int64_t ReactionDiffusionOperator::substeps(double F_peak) const {
  return gray_scott::stable_substeps(grid(), options_.rates, options_.dt,
                                     std::max(options_.F_max, F_peak)) *
         options_.substep_factor;
}

std::shared_ptr<Operator> ReactionDiffusionOperator::at_resolution(const fk::Dims& shape) const {
  auto op = std::make_shared<ReactionDiffusionOperator>(*this);
  op->domain_ = domain_.at(shape);
  return op;
}

fk::Dims ReactionDiffusionOperator::output_shape(const fk::Dims& shape) const {
  FK_CHECK(shape.size() == 2, "nefi::ReactionDiffusionOperator", "a field shape (n0, n1)",
           shape.str());
  return {static_cast<int64_t>(obs_steps_.size()) * channels(), shape[0], shape[1]};
}

fk::Tensor ReactionDiffusionOperator::apply(const fk::Tensor& F) const {
  FK_CHECK(F.shape() == domain_.shape(), "nefi::ReactionDiffusionOperator",
           "a feed-rate field of shape " + domain_.shape().str(), F.shape().str());
  FK_CHECK(F.dtype() == fk::DType::F32 || F.dtype() == fk::DType::F64,
           "nefi::ReactionDiffusionOperator", "a real f32/f64 field", fk::name(F.dtype()));
  if (options_.grad_mode == RDGradMode::kAutograd) return apply_unrolled(F);
  const bool record = fk::autograd::needs_grad(F);
  const Grid g = grid();
  const int64_t n = g.size();
  auto node = std::make_shared<ReactionDiffusionBackward>();
  node->F = F.detach().to(fk::DType::F64).contiguous().to_vector<double>();
  Schedule& sc = node->sched;
  sc.m = substeps(*std::max_element(node->F.begin(), node->F.end()));
  sc.tau = options_.dt / sc.m;
  for (int64_t k : obs_steps_) sc.obs.push_back(k * sc.m);
  sc.total = sc.obs.back();
  node->every = options_.checkpoint_every > 0
                    ? std::min(options_.checkpoint_every, sc.total)
                    : static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(sc.total))));
  if (record)
    node->checkpoints =
        fk::empty({(sc.total + node->every - 1) / node->every, 2, g.n0, g.n1}, {fk::DType::F64});
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
      if (record && s % node->every == 0)
        std::copy(state.begin(), state.end(),
                  node->checkpoints.data<double>() + s / node->every * 2 * n);
      gray_scott::step(g, options_.rates, node->F.data(), sc.tau, state.data(), state.data() + n,
                       w);
      if (s + 1 == sc.obs[t])
        record_state(options_, static_cast<int64_t>(t++), n, state.data(), state.data() + n,
                     out.data());
    }
  }
  fk::Tensor y = fk::from_vector(out, output_shape(domain_.shape())).to(F.dtype());
  if (record) {
    node->options = options_;
    node->grid = g;
    node->in_shape = F.shape();
    node->dtype = F.dtype();
    fk::autograd::record(node, {F}, y);
  }
  return y;
}

fk::Tensor ReactionDiffusionOperator::apply_unrolled(const fk::Tensor& F) const {
  const Grid g = grid();
  const fk::Tensor f = F.to(fk::DType::F64);
  double peak;
  {
    fk::autograd::NoGradGuard ng;
    const auto fv = f.detach().contiguous().to_vector<double>();
    peak = *std::max_element(fv.begin(), fv.end());
  }
  const int64_t m = substeps(peak);
  const double tau = options_.dt / m;
  const auto& r = options_.rates;
  std::vector<double> u0, v0;
  gray_scott::initial_condition(g, options_.ic_modes[0], options_.ic_modes[1], u0, v0);
  fk::Tensor u = fk::from_vector(u0, domain_.shape()), v = fk::from_vector(v0, domain_.shape());
  std::vector<fk::Tensor> snaps;
  int64_t s = 0;
  for (int64_t k : obs_steps_) {
    for (; s < k * m; ++s) {
      const fk::Tensor uvv = u * v * v;
      const fk::Tensor du = laplacian_ops(u, g) * r.Du - uvv + f * (-u + 1.0);
      const fk::Tensor dv = laplacian_ops(v, g) * r.Dv + uvv - (f + r.k) * v;
      u = u + du * tau;
      v = v + dv * tau;
    }
    if (options_.observe_u) snaps.push_back(u);
    if (options_.observe_v) snaps.push_back(v);
  }
  return fk::stack(snaps, 0).to(F.dtype());
}

}  // namespace nefi
