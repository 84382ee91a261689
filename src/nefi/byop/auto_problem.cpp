#include "nefi/byop/auto_problem.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/byop/noise_estimate.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/hash_grid_field.h"
#include "nefi/field/heads.h"
#include "nefi/field/neural_field.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/regularizers.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "nefi::auto_problem";
constexpr int kProbeSteps = 25;

std::string num(double v) {
  std::ostringstream o;
  o.precision(4);
  o << v;
  return o.str();
}

// Mask-weighted mean of (a - b)^2 and inner products, on host vectors.
struct Weighted {
  std::vector<double> y, w;
  double wsum = 0;
  double misfit(const std::vector<double>& p) const {
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i) s += w[i] * (p[i] - y[i]) * (p[i] - y[i]);
    return s / wsum;
  }
  double dot(const std::vector<double>& a, const std::vector<double>& b) const {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += w[i] * a[i] * b[i];
    return s;
  }
};

// The model on the constant field c (host values, finite or an error).
std::vector<double> on_constant(const Operator& op, const fk::Dims& shape, double c) {
  fk::autograd::NoGradGuard ng;
  const fk::Tensor y = op.apply(fk::full(shape, c, {fk::DType::F64}));
  std::vector<double> v = y.to(fk::DType::F64).to_vector<double>();
  for (double e : v)
    FK_CHECK(std::isfinite(e), "forward model " + op.kind(), "finite outputs",
             "a non-finite value on the constant field " + num(c));
  return v;
}

struct ConstantFit {
  double c = 0, misfit = 0;
  std::string how;
};

// The constant field that best explains the data under the head's range.
ConstantFit fit_constant(const Operator& op, const fk::Dims& shape, const Weighted& d,
                         const PriorSpec& prior) {
  const double lo = prior.head == "bounded" ? prior.lo + 0.05 * (prior.hi - prior.lo) : -INFINITY;
  const double hi = prior.head == "bounded" ? prior.hi - 0.05 * (prior.hi - prior.lo) : INFINITY;
  const bool positive = prior.head == "nonnegative" || prior.head == "positive";
  if (const auto p = op.homogeneity(); p && *p != 0) {
    const std::vector<double> y1 = on_constant(op, shape, 1.0);
    const double den = d.dot(y1, y1), ratio = den > 0 ? d.dot(y1, d.y) / den : 0;
    if (den > 0 && (ratio > 0 || *p == 1)) {
      double c = *p == 1 ? ratio : std::pow(ratio, 1.0 / *p);
      if ((!positive || c > 0) && std::isfinite(c)) {
        c = std::clamp(c, lo, hi);
        return {c, d.misfit(on_constant(op, shape, c)),
                "closed form (homogeneity " + num(*p) + ")"};
      }
    }
  }
  std::vector<double> grid;
  if (prior.head == "bounded") {
    for (int j = 0; j < 16; ++j) grid.push_back(lo + (hi - lo) * j / 15.0);
  } else {
    for (int k = -8; k <= 8; ++k) {
      grid.push_back(std::pow(10.0, k / 2.0));
      if (!positive) grid.push_back(-std::pow(10.0, k / 2.0));
    }
    if (!positive) grid.push_back(0.0);
  }
  ConstantFit best{0, std::numeric_limits<double>::infinity(), ""};
  for (double c : grid)
    if (const double m = d.misfit(on_constant(op, shape, c)); m < best.misfit) best = {c, m, ""};
  best.how = "search over " + std::to_string(grid.size()) + " constants";
  return best;
}

struct Network {
  int hidden, depth;
};

Network network_for(int64_t cells) {
  if (cells <= 1024) return {64, 3};
  if (cells <= 16384) return {128, 4};
  if (cells <= 262144) return {256, 5};
  return {256, 6};
}

int steps_for(const std::string& budget, int64_t cells) {
  if (budget == "quick") return 300;
  if (budget == "thorough") return 5000;
  if (budget == "default")
    return static_cast<int>(std::lround(
        1500 * std::clamp(std::pow(static_cast<double>(cells) / 4096.0, 0.25), 0.5, 2.0)));
  char* end = nullptr;
  const long n = std::strtol(budget.c_str(), &end, 10);
  FK_CHECK(!budget.empty() && end == budget.c_str() + budget.size() && n >= 1 && n <= 10000000,
           "budget", "quick, default, thorough or a step count >= 1", "'" + budget + "'");
  return static_cast<int>(n);
}

HeadPtr head_for(const PriorSpec& prior, double c, double scale) {
  if (prior.head == "nonnegative") return affine_head(softplus_head("x", 1.0), c, 0.0);
  if (prior.head == "positive") return affine_head(exp_head("x", 1.0), c, 0.0);
  if (prior.head == "bounded") return bounded_head("x", prior.lo, prior.hi, c);
  if (prior.zero_mean) return zero_mean_head(affine_head(identity_head("x", 0.0), scale, 0.0));
  return affine_head(identity_head("x", 0.0), scale, c);
}

LossPtr penalty_loss(const std::string& kind) {
  if (kind == "tv") return tv_loss("x", TVOptions{}, "tv");
  if (kind == "smooth") return laplacian_loss("x", true, "smooth");
  return l1_loss("x", "sparse");
}

}  // namespace

Result AutoProblem::solve(SolverOptions so) const {
  so.seed = seed;
  return Solver(problem, curriculum, std::move(so)).run();
}

AutoProblem auto_problem(OperatorPtr op, const fk::Dims& shape, Measurement m,
                         const AutoOptions& o) {
  FK_CHECK(op != nullptr, kWhere, "a forward model", "none");
  FK_CHECK(shape.size() >= 1 && shape.size() <= 3 && shape.numel() > 0, kWhere,
           "a 1-, 2- or 3-D field shape", shape.str());
  const fk::Dims out_shape = op->output_shape(shape);
  FK_CHECK(m.data.defined() && m.data.shape() == out_shape, kWhere,
           "a measurement of the model's output shape " + out_shape.str(),
           m.data.defined() ? m.data.shape().str() : "none");
  FK_CHECK(fk::is_floating(m.data.dtype()), kWhere, "real measured data", fk::name(m.data.dtype()));
  FK_CHECK(o.representation == "neural" || o.representation == "grid" || o.representation == "hash",
           "representation", "neural, grid or hash", o.representation);
  FK_CHECK(o.discrepancy_tau > 0, "discrepancy_tau", "> 0", num(o.discrepancy_tau));
  m.data = m.data.to(fk::DType::F32).contiguous();
  if (m.mask.defined()) m.mask = m.mask.to(fk::DType::F32).contiguous();
  check_mask(m, "measurement mask");
  Weighted d;
  d.y = m.data.to_vector<double>();
  d.w = m.mask.defined() ? m.mask.to_vector<double>() : std::vector<double>(d.y.size(), 1.0);
  for (size_t i = 0; i < d.y.size(); ++i) {
    FK_CHECK(std::isfinite(d.y[i]) || d.w[i] == 0, "measurement", "finite data at observed cells",
             "a non-finite value at cell " + std::to_string(i));
    if (d.w[i] == 0) d.y[i] = 0;  // never read, kept finite for the sums
    d.wsum += d.w[i];
  }
  m.data = fk::from_vector(d.y, out_shape).to(fk::DType::F32);

  AutoProblem ap;
  ap.seed = o.seed;
  ap.prior = parse_prior(o.prior);
  auto decide = [&](std::string key, std::string value, std::string why) {
    ap.decisions.push_back({std::move(key), std::move(value), std::move(why)});
  };

  // Domain: isotropic cells, longest axis 1, unless given.
  std::vector<double> extent = o.extent;
  const auto longest = static_cast<double>(*std::max_element(shape.begin(), shape.end()));
  if (extent.empty()) {
    for (int64_t n : shape) extent.push_back(static_cast<double>(n) / longest);
    decide("extent", fk::Dims(shape).str(), "isotropic cells, longest axis 1");
  } else {
    FK_CHECK(extent.size() == static_cast<size_t>(shape.size()), "extent",
             std::to_string(shape.size()) + " lengths", std::to_string(extent.size()));
  }
  const Domain domain(shape, extent);

  // Noise.
  if (o.noise_std) {
    FK_CHECK(std::isfinite(*o.noise_std) && *o.noise_std >= 0, "noise_std", "a sigma >= 0",
             num(*o.noise_std));
    ap.noise_std = *o.noise_std;
    decide("noise_std", num(ap.noise_std), "given");
  } else {
    const NoiseEstimate e = estimate_noise(m.data, m.mask);
    ap.noise_std = e.sigma;
    ap.noise_estimated = true;
    decide("noise_std", num(e.sigma),
           "estimated: median absolute deviation of a noise-isolating stencil over " +
               std::to_string(e.stencils) + " positions");
  }
  m.noise_std = ap.noise_std;

  // Head scale: the best constant field.
  const ConstantFit fit = fit_constant(*op, shape, d, ap.prior);
  ap.constant_fit = fit.c;
  const double scale = std::abs(fit.c) > 0 ? std::abs(fit.c) : 1.0;
  decide("head", ap.prior.str(), "from the prior");
  decide("constant_fit", num(fit.c), fit.how + "; the field starts there");
  if (ap.prior.head == "unconstrained") decide("head_scale", num(scale), "|c| (1 when c = 0)");

  // Field.
  const int64_t cells = shape.numel();
  const Network net = network_for(cells);
  NeuralFieldConfig fc;
  fc.hidden = o.hidden.value_or(net.hidden);
  fc.depth = o.depth.value_or(net.depth);
  fc.skip_at = fc.depth >= 4 ? fc.depth / 2 : 0;
  const int oct = static_cast<int>(std::ceil(std::log2(longest)));
  fc.n_octaves = o.n_octaves.value_or(std::clamp(oct, 4, 12));
  FK_CHECK(fc.hidden >= 1 && fc.depth >= 1 && fc.n_octaves >= 0, kWhere,
           "hidden, depth >= 1 and n_octaves >= 0",
           std::to_string(fc.hidden) + ", " + std::to_string(fc.depth) + ", " +
               std::to_string(fc.n_octaves));
  const std::vector<HeadPtr> heads{head_for(ap.prior, fit.c, scale)};
  InverseProblem& prob = ap.problem;
  prob.name = "from_forward";
  prob.domain = domain;
  prob.op = op;
  if (o.representation == "neural") {
    prob.field = std::make_shared<NeuralField>(static_cast<int>(shape.size()), heads, fc, o.seed);
    decide("network", std::to_string(fc.hidden) + " x " + std::to_string(fc.depth),
           o.hidden || o.depth ? "given" : "by cells (" + std::to_string(cells) + ")");
    decide("n_octaves", std::to_string(fc.n_octaves),
           o.n_octaves ? "given" : "clamp(ceil(log2 " + num(longest) + "), 4, 12)");
  } else if (o.representation == "hash") {
    HashGridConfig hc;
    hc.hidden = o.hidden.value_or(64);
    hc.depth = o.depth.value_or(2);
    auto hf = std::make_shared<HashGridField>(shape, heads, hc, o.seed);
    const HashGridLayout& L = hf->layout();
    prob.field = hf;
    decide("representation", "hash",
           "given: " + std::to_string(hc.levels) + " levels x " + std::to_string(hc.features) +
               " features, " + std::to_string(L.resolution.front()) + " .. " +
               std::to_string(L.resolution.back()) + " cells, tables of <= 2^" +
               std::to_string(hc.log2_table) + ", MLP " + std::to_string(hc.hidden) + " x " +
               std::to_string(hc.depth));
  } else {
    prob.field = std::make_shared<GridField>(shape, heads);
    decide("representation", "grid", "given: one value per cell");
  }

  // Losses: the data term starts at 1.
  const double l0 = d.misfit(on_constant(*op, shape, fit.c));
  const double data_weight = l0 > 0 ? 1.0 / l0 : 1.0;
  prob.losses.add(mse_loss(), data_weight);
  decide("data_weight", num(data_weight), "1 / misfit of the constant field: the loss starts at 1");
  prob.measurement = m;

  // Curriculum.
  const int steps = steps_for(o.budget, cells);
  const double lr =
      o.lr.value_or(o.representation == "grid"   ? 1e-1
                    : o.representation == "hash" ? 1e-2
                                                 : 1e-2 * std::sqrt(64.0 / fc.hidden));
  FK_CHECK(lr > 0 && std::isfinite(lr), "lr", "a learning rate > 0", num(lr));
  Stage st;
  st.name = "native";
  st.shape = shape;
  st.steps = steps;
  st.lr = lr;
  st.anneal_fraction = 0.5;
  ap.curriculum.stages = {st};
  decide("steps", std::to_string(steps), "budget " + o.budget);
  decide("lr", num(lr),
         o.lr                           ? "given"
         : o.representation == "neural" ? "1e-2 sqrt(64 / width)"
                                        : o.representation + " field");
  if (o.budget == "thorough") ap.curriculum.early_stop_patience = 500;
  if (o.discrepancy && ap.noise_std > 0) {
    ap.curriculum.discrepancy_tau = o.discrepancy_tau;
    decide("discrepancy_tau", num(o.discrepancy_tau), "stop at RMSE <= tau sigma after annealing");
  }
  ap.curriculum.validate();

  // Penalties: weighed against the data term at the noise floor, on the
  // field a short data-only probe reaches.
  if (!ap.prior.penalties.empty()) {
    InverseProblem probe = prob;
    Curriculum pc = Curriculum::single(shape, kProbeSteps, lr);
    pc.stages[0].anneal_fraction = 0.5;
    SolverOptions so;
    so.seed = o.seed;
    so.stopping_rules = false;
    const Result r = Solver(probe, pc, so).run();
    const double floor = std::max(ap.noise_std * ap.noise_std, 1e-6 * l0) * data_weight;
    for (const PriorPenalty& pen : ap.prior.penalties) {
      const LossPtr loss = penalty_loss(pen.kind);
      LossContext ctx;
      ctx.fields = &r.fields;
      ctx.domain = &domain;
      ctx.op = op.get();
      ctx.obs = &m;
      double value = 0;
      {
        fk::autograd::NoGradGuard ng;
        value = loss->forward(ctx).item();
      }
      const double w = pen.strength * floor / std::max(value, 1e-30);
      prob.losses.add(loss, w);
      decide(pen.kind + "_weight", num(w),
             "strength " + num(pen.strength) + " x data term at the noise floor (" + num(floor) +
                 ") / " + pen.kind + " of a " + std::to_string(kProbeSteps) + "-step probe (" +
                 num(value) + ")");
    }
  }
  return ap;
}

}  // namespace nefi
