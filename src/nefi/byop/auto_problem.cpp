#include "nefi/byop/auto_problem.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"
#include "nefi/byop/constant_fit.h"
#include "nefi/byop/custom_prior.h"
#include "nefi/byop/given_field.h"
#include "nefi/byop/noise_estimate.h"
#include "nefi/byop/parametric_choice.h"
#include "nefi/field/heads.h"
#include "nefi/field/layered_field.h"
#include "nefi/field/neural_field.h"
#include "nefi/field/parametric_field.h"
#include "nefi/field/polygon_outline.h"
#include "nefi/field/star_harmonics.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/regularizers.h"
#include "nefi/operators/function_operator.h"
#include "nefi/operators/prolonged.h"
#include "nefi/operators/sampling.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "nefi::auto_problem";
constexpr int kProbeSteps = 25;
// A ranged field's sigmoid, its slope floored at this (heads.h's leak): the
// data's best fit often lies on a bound (a deblurred edge overshoots), and a
// network pushed there saturates cells whose f32 slope is then exactly 0.
constexpr double kSigmoidLeak = 0.01;
constexpr double kSharpEps = 0.05;  // a two-phase field's final sharpness

std::string num(double v) {
  std::ostringstream o;
  o.precision(4);
  o << v;
  return o.str();
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

// A prior's axis list with {-1} (none listed) made every axis of an
// ndim-D field.
std::vector<int> resolved_axes(std::vector<int> axes, int ndim) {
  if (axes == std::vector<int>{-1}) {
    axes.clear();
    for (int a = 0; a < ndim; ++a) axes.push_back(a);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

// The value a known support's outside takes: 0, or the low bound of a
// ranged field that excludes 0.
double support_fill(const PriorSpec& prior) {
  return prior.ranged() && (prior.lo > 0 || prior.hi < 0) ? prior.lo : 0.0;
}

// The head of field `name`: it starts at c, and its O(1) raw output spans
// `scale`; then the modifiers, in the order that keeps each exact: the
// mirror images, the support, and the total or the mean.
HeadPtr head_for(const std::string& name, const PriorSpec& prior, double c, double s,
                 const fk::Tensor& support, int ndim) {
  HeadPtr h;
  if (prior.mass)
    h = softplus_head(name, 1.0);  // any positive start: the total is normalized
  else if (prior.head == "nonnegative" || prior.head == "positive")
    h = affine_head(prior.head == "positive" ? exp_head(name, c / s) : softplus_head(name, c / s),
                    s, 0.0);
  else if (prior.head == "phases")
    h = multi_phase_head(name, prior.phases, c, 1.0, kSharpEps, kSigmoidLeak);
  else if (prior.ranged())  // bounded: a level set that never sharpens
    h = level_set_head(name, prior.lo, prior.hi, c, 1.0, prior.two_valued() ? kSharpEps : 1.0,
                       kSigmoidLeak);
  else
    h = affine_head(identity_head(name, 0.0), s, prior.zero_mean ? 0.0 : c);
  if (!prior.symmetric.empty()) h = symmetric_head(h, resolved_axes(prior.symmetric, ndim));
  if (support.defined()) h = masked_head(h, support, support_fill(prior));
  if (prior.mass) h = mass_normalized_head(h, *prior.mass);
  if (prior.zero_mean) h = zero_mean_head(h);
  return h;
}

LossPtr penalty_loss(const PriorPenalty& pen, const std::string& field, const std::string& name,
                     const std::vector<int>& periodic_axes,
                     const std::vector<int>& component_axes) {
  if (pen.kind == "tv") {
    TVOptions tv;
    tv.periodic_axes = periodic_axes;
    tv.component_axes = component_axes;
    return tv_loss(field, tv, name);
  }
  if (pen.kind == "smooth") return laplacian_loss(field, true, name, periodic_axes, component_axes);
  if (pen.kind == "monotone") return monotone_loss(pen.axis, pen.sign, field, name);
  if (pen.custom) return custom_penalty_loss(pen.kind, field, name);
  return l1_loss(field, name);
}

// Writes `values` into the leaves `params` (the model's trainable
// parameters, trained in place by a solve).
void set_values(const std::vector<fk::Tensor>& params, const std::vector<fk::Tensor>& values) {
  FK_CHECK(params.size() == values.size(), "nefi::AutoProblem",
           fk::to_text(params.size()) + " starting values of the model's parameters",
           fk::to_text(values.size()));
  fk::autograd::NoGradGuard ng;
  for (size_t k = 0; k < params.size(); ++k) {
    fk::Tensor p = params[k];
    p.copy_(values[k]);
  }
}

}  // namespace

Domain isotropic_domain(const fk::Dims& shape) {
  FK_CHECK(shape.size() >= 1 && shape.size() <= 3 && shape.numel() > 0, kWhere,
           "a 1-, 2- or 3-D field shape", shape.str());
  const auto longest = static_cast<double>(*std::max_element(shape.begin(), shape.end()));
  std::vector<double> extent;
  for (int64_t n : shape) extent.push_back(static_cast<double>(n) / longest);
  return Domain(shape, extent);
}

void AutoProblem::reset_operator() const {
  set_values(problem.op->parameters(), operator_start);
}

Result AutoProblem::solve(SolverOptions so) const {
  so.seed = seed;
  reset_operator();
  return Solver(problem, curriculum, std::move(so)).run();
}

AutoProblem auto_problem(OperatorPtr op, const fk::Dims& shape, Measurement m,
                         const AutoOptions& o) {
  FK_CHECK(op != nullptr, kWhere, "a forward model", "none");
  FK_CHECK(shape.size() >= 1 && shape.size() <= 3 && shape.numel() > 0, kWhere,
           "a 1-, 2- or 3-D field shape", shape.str());
  std::vector<fk::Tensor> start;  // the model's parameters as given
  for (const fk::Tensor& p : op->parameters()) start.push_back(p.detach().clone());
  const fk::Dims out_shape = op->output_shape(shape);
  FK_CHECK(m.data.defined() && m.data.shape() == out_shape, kWhere,
           "a measurement of the model's output shape " + out_shape.str(),
           m.data.defined() ? m.data.shape().str() : "none");
  FK_CHECK(fk::is_floating(m.data.dtype()), kWhere, "real measured data", fk::name(m.data.dtype()));
  check_representation_options(o, shape);
  const bool layered = o.representation.starts_with("layers");
  FK_CHECK(o.discrepancy_tau > 0, "discrepancy_tau", "> 0", num(o.discrepancy_tau));
  if (m.mask.defined()) m.mask = m.mask.to(fk::DType::F32).contiguous();
  check_mask(m, "measurement mask");
  Weighted d;
  // Read as given and checked, then rounded to the f32 the fit runs in (cast
  // first, 1e300 read as "non-finite").
  d.y = m.data.to(fk::DType::F64).contiguous().to_vector<double>();
  d.w = m.mask.defined() ? m.mask.to_vector<double>() : std::vector<double>(d.y.size(), 1.0);
  for (size_t i = 0; i < d.y.size(); ++i) {
    FK_CHECK(std::isfinite(d.y[i]) || d.w[i] == 0, "measurement", "finite data at observed cells",
             "a non-finite value at cell " + fk::to_text(i));
    FK_CHECK(d.w[i] == 0 || std::abs(d.y[i]) <= std::numeric_limits<float>::max(), "measurement",
             "data within f32's range (|y| <= 3.4e38: the fit runs in f32; rescale them)",
             fk::to_text(d.y[i]) + " at cell " + fk::to_text(i));
    d.y[i] = d.w[i] == 0 ? 0.0 : static_cast<float>(d.y[i]);  // as fitted; unread ones finite
    d.wsum += d.w[i];
  }
  m.data = fk::from_vector(d.y, out_shape).to(fk::DType::F32);

  AutoProblem ap;
  ap.seed = o.seed;
  if (o.field_priors.empty()) {
    ap.fields = {"x"};
    ap.priors = {parse_prior(o.prior)};
  }
  for (const auto& [name, text] : o.field_priors) {
    FK_CHECK(
        !name.empty() && std::find(ap.fields.begin(), ap.fields.end(), name) == ap.fields.end(),
        "field_priors", "distinct non-empty field names", "'" + name + "'");
    ap.fields.push_back(name);
    try {
      ap.priors.push_back(parse_prior(text));
    } catch (const fk::Error& e) {
      throw fk::Error("prior of field '" + name + "'", e.expected(), e.given());
    }
  }
  auto decide = [&](std::string key, std::string value, std::string why) {
    ap.decisions.push_back({std::move(key), std::move(value), std::move(why)});
  };
  ConstantFields k{shape, ap.fields, std::vector<fk::Tensor>(ap.fields.size()),
                   std::vector<double>(ap.fields.size(), 0.0)};
  for (const auto& [name, mask] : o.supports) {
    std::string names;
    for (const std::string& f : ap.fields) names += (names.empty() ? "" : ", ") + f;
    FK_CHECK(std::find(ap.fields.begin(), ap.fields.end(), name) != ap.fields.end(), "supports",
             "a support for a field of the problem (" + names + ")", "one for '" + name + "'");
  }
  for (size_t i = 0; i < ap.fields.size(); ++i) {
    PriorSpec& pr = ap.priors[i];
    const std::string where = "prior of field '" + ap.fields[i] + "'";
    const auto it = o.supports.find(ap.fields[i]);
    if (it != o.supports.end()) {
      const fk::Tensor& mask = it->second;
      FK_CHECK(mask.defined() && mask.shape() == shape && fk::is_floating(mask.dtype()),
               "support of field '" + ap.fields[i] + "'", "a real mask of shape " + shape.str(),
               mask.defined() ? mask.shape().str() + " " + fk::name(mask.dtype()) : "none");
      pr.known_support = true;
      k.support[i] = mask.to(fk::DType::F64).contiguous();
      // Checked here, before the start's constant fit runs the model over it
      // (a NaN there would be blamed on the model).
      for (const double w : k.support[i].to_vector<double>())
        FK_CHECK(w >= 0 && w <= 1, "support of field '" + ap.fields[i] + "'", "weights in [0, 1]",
                 fk::to_text(w));
      k.fill[i] = support_fill(pr);
    }
    // The prior must keep the field where the operator takes it.
    if (ap.fields.size() == 1 && std::isfinite(op->input_lower_bound())) {
      const double bound = op->input_lower_bound();
      const double least = pr.head == "nonnegative" || pr.head == "positive" ? 0.0
                           : pr.ranged()                                     ? pr.lo
                                         : -std::numeric_limits<double>::infinity();
      FK_CHECK(least >= bound, where,
               "a field >= " + num(bound) + " for " + op->kind() + "'s unknown " +
                   op->input_name() + " (\"nonnegative\", \"positive\" or \"bounded(" + num(bound) +
                   ", hi)\")",
               pr.str());
    }
    FK_CHECK(!pr.known_support || k.support[i].defined(), where,
             "known_support with a support mask given beside the prior", "no mask");
    FK_CHECK(!(pr.known_support && pr.zero_mean), where,
             "zero_mean or known_support (removing the mean moves the outside off 0)", "both");
    FK_CHECK(!o.multiscale || !(pr.known_support || pr.mass || pr.phased()), where,
             "multiscale without known_support, conserved or a two-phase or phases field (the "
             "coarse stage's field has other cells, and a level set would anneal twice)",
             "multiscale with " + pr.str());
    for (const PriorPenalty& pen : pr.penalties)
      FK_CHECK(!o.multiscale || !pen.custom, where,
               "multiscale without registered terms (the coarse stage hands them a coarser "
               "field than they were written for)",
               "multiscale with " + pen.kind);
    for (const auto& [term, axes] :
         {std::pair{"symmetric", &pr.symmetric}, {"periodic", &pr.periodic}})
      for (int a : *axes)
        FK_CHECK(a < shape.size(), where,
                 std::string(term) + " axes of the " + fk::to_text(shape.size()) + "-D field",
                 "axis " + fk::to_text(a));
    keep_to_space_axes(pr, op->component_axes(), static_cast<int>(shape.size()), op->kind(), where);
    if (k.support[i].defined())
      for (int a : resolved_axes(pr.symmetric, static_cast<int>(shape.size())))
        FK_CHECK(k.support[i].to_vector<double>() ==
                     fk::flip(k.support[i], {a}).contiguous().to_vector<double>(),
                 where, "a support mask symmetric about the middle of each symmetric axis",
                 "one that is not about axis " + fk::to_text(a));
    FK_CHECK(resolved_axes(pr.periodic, static_cast<int>(shape.size())) ==
                 resolved_axes(ap.priors[0].periodic, static_cast<int>(shape.size())),
             where,
             "the periodic axes of field '" + ap.fields[0] + "' (the fields share one network)",
             "other axes");
    for (const PriorPenalty& pen : pr.penalties)
      FK_CHECK(pen.kind != "monotone" || (pen.axis < shape.size() && shape[pen.axis] >= 2), where,
               "a monotone axis of the field with >= 2 cells (shape " + shape.str() + ")",
               "axis " + fk::to_text(pen.axis));
  }

  // Domain: isotropic cells, longest axis 1, unless given.
  std::vector<double> extent = o.extent;
  const auto longest = static_cast<double>(*std::max_element(shape.begin(), shape.end()));
  if (extent.empty()) {
    extent = isotropic_domain(shape).extent();
    std::string lengths;  // the extent itself, not the grid it spans
    for (double e : extent) lengths += (lengths.empty() ? "[" : ", ") + num(e);
    decide("extent", lengths + "]",
           "isotropic cells, longest axis 1 (grid " + fk::Dims(shape).str() + ")");
  } else {
    FK_CHECK(extent.size() == static_cast<size_t>(shape.size()), "extent",
             fk::to_text(shape.size()) + " lengths", fk::to_text(extent.size()));
  }
  const Domain domain(shape, extent);

  // Noise.
  if (o.noise_std) {
    FK_CHECK(std::isfinite(*o.noise_std) && *o.noise_std >= 0, "noise_std", "a sigma >= 0",
             num(*o.noise_std));
    ap.noise_std = *o.noise_std;
    decide("noise_std", num(ap.noise_std), "given");
  } else if (const auto sampled = sampled_noise(*op, m.data, m.mask)) {
    // Samples of the field or of its spectrum are no smooth signal along
    // their list: the data-space stencil would read their variation as noise.
    ap.noise_std = sampled->sigma;
    ap.noise_estimated = true;
    decide("noise_std", num(ap.noise_std), sampled->why);
  } else {
    const NoiseEstimate e = estimate_noise(m.data, m.mask);
    ap.noise_std = e.sigma;
    ap.noise_estimated = true;
    decide("noise_std", num(e.sigma),
           "estimated: median absolute deviation of a noise-isolating stencil over " +
               std::to_string(e.stencils) + " positions");
  }
  m.noise_std = ap.noise_std;

  // Head scale: the best constant fields.
  const auto* fop = dynamic_cast<const FunctionOperator*>(op.get());
  const std::string model = fop ? fop->name() : op->kind();
  ConstantFit fit = fit_constants(*op, k, d, ap.priors, model);
  if (!o.start.empty()) {
    FK_CHECK(o.start.size() == ap.fields.size(), "start",
             fk::to_text(ap.fields.size()) + " starting constants (one per field)",
             fk::to_text(o.start.size()));
    for (size_t i = 0; i < o.start.size(); ++i) {
      const PriorSpec& pr = ap.priors[i];
      const double c = o.start[i];
      const bool positive = pr.head == "nonnegative" || pr.head == "positive" || pr.mass;
      FK_CHECK(
          std::isfinite(c) && (!positive || c > 0) && (!pr.ranged() || (c > pr.lo && c < pr.hi)),
          "start of field '" + ap.fields[i] + "'",
          "a finite constant its prior's head can start at (" + pr.str() + ")", num(c));
    }
    std::string own;
    for (double c : fit.c) own += (own.empty() ? "" : ", ") + num(c);
    fit.c = o.start;
    fit.how = "given (the batch's shared start; its own fit " + own + " sets the data weight)";
  }
  ap.constant_fits = fit.c;
  const bool several = ap.fields.size() > 1;
  for (size_t i = 0; i < ap.fields.size(); ++i) {
    const std::string sfx = several ? ":" + ap.fields[i] : "";
    decide("head" + sfx, ap.priors[i].str(), "from the prior");
    decide("constant_fit" + sfx, num(fit.c[i]), fit.how + "; the field starts there");
  }

  // Head scale: what the network's O(1) output spans.
  FK_CHECK(o.start_scales.empty() ||
               (o.start_scales.size() == ap.fields.size() && o.start.size() == ap.fields.size()),
           "start_scales", "one scale per field, with start",
           fk::to_text(o.start_scales.size()) + " scales and " + fk::to_text(o.start.size()) +
               " starts");
  for (const double s : o.start_scales)
    FK_CHECK(std::isfinite(s) && s > 0, "start_scales", "finite scales > 0", num(s));
  const HeadScales hs = head_scales(*op, k, d, fit.c, ap.noise_std, ap.priors, o.start_scales);
  ap.head_scales = hs.scales;
  for (size_t i = 0; i < ap.fields.size(); ++i)
    if (!hs.why[i].empty())
      decide("head_scale" + (several ? ":" + ap.fields[i] : ""), num(hs.scales[i]), hs.why[i]);

  // Field.
  const int64_t cells = shape.numel();
  const Network net = network_for(cells);
  NeuralFieldConfig fc;
  fc.hidden = o.hidden.value_or(net.hidden);
  fc.depth = o.depth.value_or(net.depth);
  fc.skip_at = fc.depth >= 4 ? fc.depth / 2 : 0;
  const int oct = static_cast<int>(std::ceil(std::log2(longest)));
  fc.n_octaves = o.n_octaves.value_or(std::clamp(oct, 4, 12));
  const std::vector<int> periodic =
      resolved_axes(ap.priors[0].periodic, static_cast<int>(shape.size()));
  FK_CHECK(periodic.empty() || o.representation == "neural", "prior",
           "periodic with representation neural (its Fourier features take the period)",
           "periodic with " + o.representation);
  FK_CHECK(periodic.empty() || fc.n_octaves >= 1, "prior",
           "periodic with n_octaves >= 1 (without bands the field is constant along the axis)",
           "n_octaves 0");
  fc.periodic_axes = periodic;
  FK_CHECK(
      fc.hidden >= 1 && fc.depth >= 1 && fc.n_octaves >= 0, kWhere,
      "hidden, depth >= 1 and n_octaves >= 0",
      fk::to_text(fc.hidden) + ", " + fk::to_text(fc.depth) + ", " + fk::to_text(fc.n_octaves));
  std::vector<HeadPtr> heads;
  for (size_t i = 0; i < ap.fields.size(); ++i)
    heads.push_back(head_for(ap.fields[i], ap.priors[i], fit.c[i], ap.head_scales[i], k.support[i],
                             static_cast<int>(shape.size())));
  InverseProblem& prob = ap.problem;
  prob.name = "from_forward";
  prob.domain = domain;
  prob.op = op;
  if (const std::vector<int> comp = op->component_axes(); !comp.empty()) {
    std::string axes;
    for (int a : comp) axes += (axes.empty() ? "" : ", ") + std::to_string(a);
    decide("component_axes", axes,
           "the model's field holds components along them (" + op->kind() +
               "): tv and smooth take no differences across them");
  }
  if (o.representation == "neural") {
    prob.field = std::make_shared<NeuralField>(static_cast<int>(shape.size()), heads, fc, o.seed);
    decide("network", std::to_string(fc.hidden) + " x " + std::to_string(fc.depth),
           o.hidden || o.depth ? "given" : "by cells (" + std::to_string(cells) + ")");
    decide("n_octaves", std::to_string(fc.n_octaves),
           o.n_octaves ? "given" : "clamp(ceil(log2 " + num(longest) + "), 4, 12)");
    if (!periodic.empty()) {
      std::string axes;
      for (int a : periodic) axes += (axes.empty() ? "" : ", ") + std::to_string(a);
      decide("periodic_axes", axes,
             "the prior: no raw coordinate in the features there, so the domain is a period");
    }
  } else if (o.representation == "blobs" || o.representation == "ellipses" ||
             o.representation == "stars" || o.representation == "polygons" ||
             o.representation.starts_with("layers+")) {
    ParametricChoice pc = parametric_choice(o, shape, heads, *op, k, d, fit.c, ap.priors);
    prob.field = std::move(pc.field);
    decide("representation", o.representation, pc.why);
  } else {
    GivenField g = given_field(o, domain, heads);
    prob.field = std::move(g.field);
    decide("representation", o.representation, g.why);
  }

  // Losses: the data term starts at 1.
  const double l0 = fit.misfit;
  // The estimate assumes a smooth signal on a grid: one calling a quarter or
  // more of the spread about the best constant noise is refused. Data that
  // are not smooth (random projections) and a weak signal under its noise
  // look alike from the data alone, so the message names both.
  FK_CHECK(!ap.noise_estimated || ap.noise_std * ap.noise_std <= 0.25 * l0, "noise",
           "for the automatic estimate, data whose spread about the best constant field is "
           "mostly signal, smooth on the scale of a few cells (else pass noise= with the sigma, "
           "or 0 for noise-free data)",
           "an estimate of " + num(ap.noise_std) + ", " +
               num(100 * ap.noise_std * ap.noise_std / std::max(l0, 1e-300)) +
               " % of the data's variance about the best constant field: data not smooth on "
               "that scale, or a signal weak against its noise");
  const double data_weight = l0 > 0 ? 1.0 / l0 : 1.0;
  prob.losses.add(mse_loss(), data_weight);
  decide("data_weight", num(data_weight), "1 / misfit of the constant field: the loss starts at 1");
  prob.measurement = m;

  // Curriculum.
  const int steps = steps_for(o.budget, cells);
  // The spectral field's gains precondition a method whose steps follow the
  // gradient: Adam moves a mode the data barely see (a blur's fine ones) as
  // far as one they pin, and fills the field with them
  // (docs/performance.md). L-BFGS, one iteration a step (the stop and the
  // history see each), each line search starting at 1.
  const bool spectral = o.representation == "spectral";
  if (spectral) {
    ap.curriculum.optim.optimizer = "lbfgs";
    ap.curriculum.optim.lbfgs.max_iter = 1;
    decide("optimizer", "lbfgs",
           "spectral field: its gains precondition steps that follow the gradient (Adam's do "
           "not); one iteration a step, strong Wolfe line search");
  }
  const double lr =
      o.lr.value_or(spectral                       ? 1.0
                    : o.representation == "grid"   ? 1e-1
                    : o.representation == "neural" ? 1e-2 * std::sqrt(64.0 / fc.hidden)
                    : o.representation == "blobs" || o.representation == "ellipses" ||
                            o.representation == "stars" || o.representation == "polygons" || layered
                        ? 5e-2    // centres and depths in (-1, 1), inverse radii of a few
                        : 1e-2);  // hash, lowrank
  FK_CHECK(lr > 0 && std::isfinite(lr), "lr", "a finite learning rate > 0", num(lr));
  Stage st;
  st.name = "native";
  st.shape = shape;
  st.steps = steps;
  st.lr = lr;
  st.anneal_fraction = 0.5;
  if (spectral) st.lr_schedule = "constant";
  bool penalised = false;
  for (const PriorSpec& pr : ap.priors) penalised = penalised || !pr.penalties.empty();
  if (spectral || ((o.representation == "grid" || o.representation == "lowrank") && !penalised)) {
    // These fields read no progress: nothing to anneal unless a head
    // sharpens, so the Morozov stop watches from the first step (an
    // iterative method's fit passes the noise floor on its way to fitting
    // the noise: an unpenalised grid fitted half its budget first ended far
    // below it). A penalty still shapes the field after the data fit reaches
    // the floor: a grid with tv stopped there lost 5 dB (from_forward_deblur).
    st.anneal = heads_read_progress(heads);
  }
  ap.curriculum.stages = {st};
  decide("steps", std::to_string(steps), "budget " + o.budget);
  int64_t shortest = shape[0];
  for (int64_t n : shape) shortest = std::min(shortest, n);
  if (o.multiscale && shortest >= 16 && steps >= 4) {
    // Half the grid for 30 % of the steps, then the native grid at half the
    // lr: the model runs at its grid throughout (a coarse field is
    // prolonged). A model brought as functions does so by itself; a built-in
    // operator would rebuild itself on the coarse grid (and its data be
    // resampled with it), so it is kept on its grid.
    if (dynamic_cast<const FunctionOperator*>(op.get()) == nullptr)
      prob.op = std::make_shared<GridKeptOperator>(op, shape);
    Stage coarse = st;
    coarse.name = "coarse";
    for (int a = 0; a < shape.size(); ++a) coarse.shape[a] = shape[a] / 2;
    coarse.steps = static_cast<int>(std::lround(0.3 * steps));
    st.steps = steps - coarse.steps;
    if (!spectral) st.lr = 0.5 * lr;  // line searches start at lr in both stages
    ap.curriculum.stages = {coarse, st};
    decide("stages", coarse.shape.str() + " then " + shape.str(),
           spectral ? "multiscale: half the grid for 30 % of the steps, then native"
                    : "multiscale: half the grid for 30 % of the steps, then native at lr / 2");
  }
  decide("lr", num(lr),
         o.lr                           ? "given"
         : o.representation == "neural" ? "1e-2 sqrt(64 / width)"
         : spectral                     ? "where each L-BFGS line search starts"
                                        : o.representation + " field");
  if (o.early_stop_patience)
    ap.curriculum.early_stop_patience = *o.early_stop_patience;
  else if (o.budget == "thorough")
    ap.curriculum.early_stop_patience = 500;
  if (o.discrepancy && ap.noise_std > 0) {
    ap.curriculum.discrepancy_tau = o.discrepancy_tau;
    decide("discrepancy_tau", num(o.discrepancy_tau),
           ap.curriculum.stages.back().anneal ? "stop at RMSE <= tau sigma after annealing"
                                              : "stop at RMSE <= tau sigma (from the first step: "
                                                "nothing anneals)");
  }
  ap.curriculum.validate();

  // Penalties: weighed against the data term at the noise floor, on the
  // field a short data-only probe reaches.
  if (penalised) {
    InverseProblem probe = prob;
    Curriculum pc = Curriculum::single(shape, kProbeSteps, lr);
    pc.stages[0].anneal_fraction = 0.5;
    pc.optim = ap.curriculum.optim;
    pc.stages[0].lr_schedule = st.lr_schedule;
    SolverOptions so;
    so.seed = o.seed;
    so.stopping_rules = false;
    Result r;
    try {  // a probe that diverged would weigh the penalties by NaN
      r = Solver(probe, pc, so).run();
    } catch (const fk::Error& e) {
      throw fk::Error("from_forward's penalty probe (" + fk::to_text(kProbeSteps) +
                          " steps at the decided lr, weighing the prior's penalties)",
                      e.expected(), e.given());
    }
    set_values(op->parameters(), start);  // the probe trained them too
    const double floor = std::max(ap.noise_std * ap.noise_std, 1e-6 * l0) * data_weight;
    for (size_t i = 0; i < ap.fields.size(); ++i)
      for (const PriorPenalty& pen : ap.priors[i].penalties) {
        const std::string kind =
            pen.kind == "monotone" ? "monotone_axis" + std::to_string(pen.axis) : pen.kind;
        const std::string name = several ? kind + ":" + ap.fields[i] : kind;
        const LossPtr loss = penalty_loss(pen, ap.fields[i], name, periodic, op->component_axes());
        LossContext ctx;
        ctx.fields = &r.fields;
        ctx.domain = &domain;
        ctx.op = op.get();
        ctx.obs = &m;
        double value = 0, reference = 0;
        {
          fk::autograd::NoGradGuard ng;
          value = loss->forward(ctx).item();
          // The probe's wrong-way steps are noise the hinge should remove,
          // not a level it should allow: it weighs as much as the data at
          // the noise floor when 0.1 % of the field's squared steps go the
          // wrong way.
          if (pen.kind == "monotone")
            reference =
                1e-3 *
                (value + monotone_loss(pen.axis, -pen.sign, ap.fields[i])->forward(ctx).item());
        }
        const double w =
            pen.strength * floor / std::max(pen.kind == "monotone" ? reference : value, 1e-30);
        prob.losses.add(loss, w);
        const std::string probe = std::to_string(kProbeSteps) + "-step probe";
        decide(name + "_weight", num(w),
               "strength " + num(pen.strength) + " x data term at the noise floor (" + num(floor) +
                   ") / " +
                   (pen.kind == "monotone"
                        ? "0.1 % of the mean squared step of a " + probe + " (" + num(reference) +
                              "; its wrong-way part " + num(value) + ")"
                        : pen.kind + " of a " + probe + " (" + num(value) + ")"));
      }
  }
  ap.operator_start = start;
  return ap;
}

}  // namespace nefi
