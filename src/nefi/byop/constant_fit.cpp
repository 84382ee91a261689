#include "nefi/byop/constant_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"

namespace nefi {

double Weighted::misfit(const std::vector<double>& p) const {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += w[i] * (p[i] - y[i]) * (p[i] - y[i]);
  return s / wsum;
}

double Weighted::dot(const std::vector<double>& a, const std::vector<double>& b) const {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += w[i] * a[i] * b[i];
  return s;
}

fk::Tensor ConstantFields::make(size_t i, double c) const {
  const fk::Tensor k = fk::full(shape, c, {fk::DType::F64});
  if (!support[i].defined()) return k;
  const fk::Tensor& m = support[i];
  return fk::add(fk::mul(k, m), fk::mul(fk::sub(fk::ones_like(m), m), fill[i]));
}

namespace {

// The model's prediction on `fields`, host values; empty when an output is
// not finite.
std::vector<double> prediction(const Operator& op, const FieldMap& fields) {
  fk::autograd::NoGradGuard ng;
  std::vector<double> v = op.forward(fields).to(fk::DType::F64).to_vector<double>();
  for (double e : v)
    if (!std::isfinite(e)) return {};
  return v;
}

// The model on constant fields (one value per field name), host values;
// empty when an output is not finite (a constant the model cannot take).
std::vector<double> on_constants(const Operator& op, const ConstantFields& k,
                                 const std::vector<double>& c) {
  FieldMap fields;
  for (size_t i = 0; i < k.names.size(); ++i) fields[k.names[i]] = k.make(i, c[i]);
  return prediction(op, fields);
}

// The misfit of constant fields; infinite where the model's output is not finite.
double misfit_at(const Operator& op, const ConstantFields& k, const Weighted& d,
                 const std::vector<double>& c) {
  const std::vector<double> y = on_constants(op, k, c);
  return y.empty() ? std::numeric_limits<double>::infinity() : d.misfit(y);
}

// The constants a prior's head may start at: a grid over its range.
std::vector<double> constant_grid(const PriorSpec& prior) {
  const double lo = prior.lo + 0.05 * (prior.hi - prior.lo);
  const double hi = prior.hi - 0.05 * (prior.hi - prior.lo);
  const bool positive = prior.head == "nonnegative" || prior.head == "positive";
  std::vector<double> grid;
  if (prior.ranged()) {
    for (int j = 0; j < 16; ++j) grid.push_back(lo + (hi - lo) * j / 15.0);
    return grid;
  }
  for (int k = -8; k <= 8; ++k) {
    grid.push_back(std::pow(10.0, k / 2.0));
    if (!positive) grid.push_back(-std::pow(10.0, k / 2.0));
  }
  if (!positive) grid.push_back(0.0);
  return grid;
}

// Where a head starts before any fit: 0, 1 (positive heads) or the middle
// of the bounds.
double neutral_constant(const PriorSpec& prior) {
  if (prior.ranged()) return 0.5 * (prior.lo + prior.hi);
  return prior.head == "unconstrained" ? 0.0 : 1.0;
}

// The constant a conserved field starts at: its total spread evenly over
// its support.
double conserved_constant(const PriorSpec& prior, const ConstantFields& k, size_t i) {
  const double cells =
      k.support[i].defined() ? fk::sum(k.support[i]).item() : static_cast<double>(k.shape.numel());
  return *prior.mass / cells;
}

}  // namespace

ConstantFit fit_constants(const Operator& op, const ConstantFields& k, const Weighted& d,
                          const std::vector<PriorSpec>& priors, const std::string& model) {
  const std::vector<std::string>& names = k.names;
  const PriorSpec& p0 = priors.front();
  const bool fill0 = !k.support[0].defined() || k.fill[0] == 0;  // F(c m) = c^p F(m)
  if (const auto p = op.homogeneity(); names.size() == 1 && p && *p != 0 && !p0.mass && fill0) {
    const bool positive = p0.head == "nonnegative" || p0.head == "positive";
    const std::vector<double> y1 = on_constants(op, k, {1.0});
    const double den = y1.empty() ? 0 : d.dot(y1, y1), ratio = den > 0 ? d.dot(y1, d.y) / den : 0;
    if (den > 0 && (ratio > 0 || *p == 1)) {
      double c = *p == 1 ? ratio : std::pow(ratio, 1.0 / *p);
      if ((!positive || c > 0) && std::isfinite(c)) {
        if (p0.ranged())
          c = std::clamp(c, p0.lo + 0.05 * (p0.hi - p0.lo), p0.hi - 0.05 * (p0.hi - p0.lo));
        const double m = misfit_at(op, k, d, {c});
        if (std::isfinite(m))
          return {{c}, m, "closed form (homogeneity " + fmt::format("{:.4g}", *p) + ")"};
      }
    }
  }
  // Trials whose output is not finite (exp(-A x) at x = -1000), or that the
  // model refuses (a diffusivity of 1e4 would take more explicit substeps
  // than it allows), are skipped; a model that refuses every trial throws
  // its own error.
  std::string refused;
  std::exception_ptr refusal;
  bool answered = false;
  auto trial_misfit = [&](const std::vector<double>& c) {
    try {
      const double m = misfit_at(op, k, d, c);
      answered = true;
      return m;
    } catch (const fk::Error& e) {
      refused = e.what();
      refusal = std::current_exception();
      return std::numeric_limits<double>::infinity();
    }
  };
  ConstantFit fit;
  for (size_t i = 0; i < names.size(); ++i)
    fit.c.push_back(priors[i].mass ? conserved_constant(priors[i], k, i)
                                   : neutral_constant(priors[i]));
  fit.misfit = trial_misfit(fit.c);
  size_t tried = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    if (priors[i].mass) continue;
    for (double c : constant_grid(priors[i])) {
      std::vector<double> trial = fit.c;
      trial[i] = c;
      ++tried;
      if (const double m = trial_misfit(trial); m < fit.misfit) {
        fit.c = trial;
        fit.misfit = m;
      }
    }
  }
  if (!answered && refusal) std::rethrow_exception(refusal);
  std::string at;
  for (size_t i = 0; i < names.size(); ++i)
    at += (i ? ", " : "") + names[i] + " = " + fmt::format("{:.4g}", fit.c[i]);
  FK_CHECK(std::isfinite(fit.misfit), "forward model '" + model + "'",
           "finite outputs on some constant field",
           "none finite (last tried " + at + ")" +
               (refused.empty() ? "" : "; the last it refused: " + refused));
  fit.how = tried == 0 ? "the conserved total over the field's cells"
                       : "search over " + std::to_string(tried) + " constants" +
                             (names.size() > 1 ? " (one field at a time)" : "");
  return fit;
}

namespace {

// The model's vector-Jacobian product at `fields` (one per name, any
// values) for the seed `seed_of` makes from its prediction: f64 maps of
// k.shape, 0 where not finite (a model's vjp at the edge of its domain) and
// for a field the model does not read. Grad mode on whatever the caller's;
// fk::autograd::grad leaves every .grad (the model's trainable
// parameters') untouched.
template <class Seed>
std::vector<fk::Tensor> pulled_back(const Operator& op, const ConstantFields& k, const Weighted& d,
                                    const std::vector<fk::Tensor>& fields, const Seed& seed_of) {
  fk::autograd::EnableGradGuard on;
  FieldMap named;
  std::vector<fk::Tensor> leaves;
  for (size_t i = 0; i < k.names.size(); ++i) {
    fk::Tensor x = fields[i].detach().contiguous();
    x.set_requires_grad(true);
    leaves.push_back(x);
    named[k.names[i]] = x;
  }
  const fk::Tensor pred = op.forward(named);
  const std::vector<double> p = pred.detach().to(fk::DType::F64).to_vector<double>();
  FK_CHECK(p.size() == d.y.size() && p.size() == d.w.size(), "forward model",
           "a prediction of the data's " + fk::to_text(d.y.size()) + " values",
           fk::to_text(p.size()));
  std::vector<fk::Tensor> maps(leaves.size());
  if (fk::autograd::tensor_requires_grad(pred))
    maps = fk::autograd::grad({pred}, {fk::from_vector(seed_of(p), pred.shape()).to(pred.dtype())},
                              leaves);
  for (fk::Tensor& g : maps) {
    g = g.defined() ? g.detach().to(fk::DType::F64).contiguous().clone()
                    : fk::zeros(k.shape, {fk::DType::F64});
    double* v = g.data<double>();
    for (int64_t j = 0; j < g.numel(); ++j)
      if (!std::isfinite(v[j])) v[j] = 0;
  }
  return maps;
}

// Field i's known support (weights in [0, 1]) times v, else v: a step of
// the head's output z moves the field by M z, where M is the support (the
// masked head), so the field's change is M z and the gradient in z is M g.
std::vector<double> supported(const ConstantFields& k, size_t i, std::vector<double> v) {
  if (!k.support[i].defined()) return v;
  const std::vector<double> m = k.support[i].to_vector<double>();
  for (size_t j = 0; j < v.size(); ++j) v[j] *= m[j];
  return v;
}

// CGLS in the heads' outputs z_i (field i at x0_i + M_i z_i) on the
// mask-weighted least squares of a linear model, the scaled fields jointly
// (the others held at x0), from z = 0 (prediction y0), stopped at the noise
// floor (misfit <= sigma^2, before the first step too) or after
// `iterations`: each field's largest |z_i| (0 for the others).
std::vector<double> cgls_departures(const Operator& op, const ConstantFields& k, const Weighted& d,
                                    const std::vector<fk::Tensor>& x0,
                                    const std::vector<double>& y0, double sigma, int iterations,
                                    const std::vector<bool>& scaled) {
  const size_t nf = k.names.size();
  std::vector<double> largest(nf, 0.0), r(d.y.size());
  for (size_t j = 0; j < r.size(); ++j) r[j] = d.y[j] - y0[j];
  const auto at_floor = [&] { return d.dot(r, r) / d.wsum <= sigma * sigma; };
  if (at_floor()) return largest;
  using Fields = std::vector<std::vector<double>>;
  // s_i = M_i A_i^T W r, at any point (the model is linear); 0 off the scaled fields.
  auto normal = [&] {
    const std::vector<fk::Tensor> maps = pulled_back(op, k, d, x0, [&](const std::vector<double>&) {
      std::vector<double> seed(r.size());
      for (size_t j = 0; j < r.size(); ++j) seed[j] = d.w[j] * r[j];
      return seed;
    });
    Fields s(nf);
    for (size_t i = 0; i < nf; ++i)
      s[i] = scaled[i] ? supported(k, i, maps[i].to_vector<double>())
                       : std::vector<double>(static_cast<size_t>(k.shape.numel()), 0.0);
    return s;
  };
  auto norm2 = [](const Fields& f) {
    double n = 0;
    for (const auto& v : f)
      for (double e : v) n += e * e;
    return n;
  };
  Fields s = normal(), p = s, z(nf, std::vector<double>(s[0].size(), 0.0));
  double gamma = norm2(s);
  for (int it = 0; it < iterations && gamma > 0; ++it) {
    // A M p = F(x0 + M p) - F(x0).
    FieldMap moved;
    for (size_t i = 0; i < nf; ++i)
      moved[k.names[i]] =
          fk::add(x0[i], fk::from_vector(supported(k, i, p[i]), k.shape).to(x0[i].dtype()));
    const std::vector<double> yp = prediction(op, moved);
    if (yp.empty()) break;
    std::vector<double> q(yp.size());
    for (size_t j = 0; j < q.size(); ++j) q[j] = yp[j] - y0[j];
    const double qq = d.dot(q, q);
    if (!(qq > 0)) break;
    const double alpha = gamma / qq;
    for (size_t i = 0; i < nf; ++i) {
      largest[i] = 0;
      for (size_t j = 0; j < z[i].size(); ++j) {
        z[i][j] += alpha * p[i][j];
        largest[i] = std::max(largest[i], std::abs(z[i][j]));
      }
    }
    for (size_t j = 0; j < r.size(); ++j) r[j] -= alpha * q[j];
    if (at_floor()) break;
    s = normal();
    const double next = norm2(s);
    for (size_t i = 0; i < nf; ++i)
      for (size_t j = 0; j < p[i].size(); ++j) p[i][j] = s[i][j] + next / gamma * p[i][j];
    gamma = next;
  }
  for (double& v : largest)
    if (!std::isfinite(v)) v = 0;
  return largest;
}

// Whether a prior's head spans a scale: an affine or softplus head; a
// ranged head spans its bounds, an exp head's steps are relative whatever
// its scale, and a conserved field is normalized to its total.
bool takes_scale(const PriorSpec& prior) {
  return !prior.mass && (prior.head == "unconstrained" || prior.head == "nonnegative");
}

// One steepest-descent step of field i alone from the constants, its size
// the best of a log grid (1e-8 to 1e4, stopping once the misfit rises past
// its best): the step's largest |z|, 0 where none lowers the misfit.
double steepest_departure(const Operator& op, const ConstantFields& k, const Weighted& d,
                          const FieldMap& at, const std::vector<fk::Tensor>& grads, size_t i,
                          double m0, bool nonnegative) {
  std::vector<double> dir = supported(k, i, grads[i].to_vector<double>());  // M g
  double peak = 0;
  for (double v : dir) peak = std::max(peak, std::abs(v));
  if (!(peak > 0)) return 0;
  for (double& v : dir) v = -v / peak;
  const fk::Tensor step = fk::from_vector(supported(k, i, dir), k.shape);  // M z for |z| <= 1
  double best = m0, found = 0;
  for (int e = -16; e <= 8; ++e) {
    const double t = std::pow(10.0, e / 2.0);
    FieldMap moved = at;
    moved[k.names[i]] = fk::add(at.at(k.names[i]), fk::mul(step, t));
    if (nonnegative)  // the prior's values only, as the dry run calls the model
      moved[k.names[i]] =
          fk::clamp(moved[k.names[i]], 0.0, std::numeric_limits<double>::infinity());
    double m = std::numeric_limits<double>::infinity();
    try {
      if (const std::vector<double> y = prediction(op, moved); !y.empty()) m = d.misfit(y);
    } catch (const fk::Error&) {  // a step the model refuses (a negative diffusivity)
    }
    if (m < best) {
      best = m;
      found = t;
    } else if (found > 0) {
      break;  // past the best along the line
    }
  }
  return found;
}

}  // namespace

std::vector<fk::Tensor> misfit_gradient_at(const Operator& op, const ConstantFields& k,
                                           const Weighted& d, const std::vector<double>& c) {
  FK_CHECK(c.size() == k.names.size(), "nefi::misfit_gradient_at",
           fk::to_text(k.names.size()) + " constants (one per field)", fk::to_text(c.size()));
  std::vector<fk::Tensor> fields;
  for (size_t i = 0; i < k.names.size(); ++i) fields.push_back(k.make(i, c[i]));
  // d misfit / d pred = 2 w (pred - y) / wsum.
  return pulled_back(op, k, d, fields, [&](const std::vector<double>& p) {
    std::vector<double> seed(p.size());
    for (size_t j = 0; j < p.size(); ++j)
      seed[j] = d.w[j] == 0 ? 0.0 : 2 * d.w[j] * (p[j] - d.y[j]) / std::max(d.wsum, 1e-300);
    return seed;
  });
}

Departures departure_scales(const Operator& op, const ConstantFields& k, const Weighted& d,
                            const std::vector<double>& c, double sigma,
                            const std::vector<bool>& scaled, const std::vector<bool>& nonnegative) {
  Departures out;
  out.values.assign(k.names.size(), 0.0);
  if (std::none_of(scaled.begin(), scaled.end(), [](bool b) { return b; })) return out;
  // A scale is a convenience: a model that fails on the fit's iterates (or
  // its gradient at c) leaves the constants' magnitudes, and says why.
  try {
    FieldMap at;
    for (size_t i = 0; i < k.names.size(); ++i) at[k.names[i]] = k.make(i, c[i]);
    const std::vector<double> y0 = prediction(op, at);
    if (y0.empty()) return out;
    if (op.linear()) {
      std::vector<fk::Tensor> x0;
      for (const std::string& name : k.names) x0.push_back(at.at(name));
      out.values = cgls_departures(op, k, d, x0, y0, sigma, kDepartureIterations, scaled);
      return out;
    }
    const std::vector<fk::Tensor> grads = misfit_gradient_at(op, k, d, c);
    for (size_t i = 0; i < k.names.size(); ++i)
      if (scaled[i])
        out.values[i] = steepest_departure(op, k, d, at, grads, i, d.misfit(y0),
                                           !nonnegative.empty() && nonnegative[i]);
  } catch (const fk::Error& e) {
    out.values.assign(k.names.size(), 0.0);
    out.failure = e.what();
  }
  return out;
}

HeadScales head_scales(const Operator& op, const ConstantFields& k, const Weighted& d,
                       const std::vector<double>& c, double sigma,
                       const std::vector<PriorSpec>& priors, const std::vector<double>& given) {
  HeadScales out;
  std::vector<bool> scaled, nonnegative;
  for (const PriorSpec& pr : priors) {
    scaled.push_back(takes_scale(pr) && !pr.scale);
    nonnegative.push_back(pr.head == "nonnegative");
  }
  const Departures step = given.empty() ? departure_scales(op, k, d, c, sigma, scaled, nonnegative)
                                        : Departures{std::vector<double>(c.size(), 0.0), ""};
  const std::string how = !step.failure.empty() ? "none: the fit failed, " + step.failure
                          : op.linear() ? "CGLS, at most " + std::to_string(kDepartureIterations) +
                                              " iterations, stopped at the noise floor"
                                        : "one steepest-descent step";
  for (size_t i = 0; i < c.size(); ++i) {
    const PriorSpec& pr = priors[i];
    const double s = std::max(std::abs(c[i]), step.values[i]);
    out.scales.push_back(pr.scale ? *pr.scale : given.empty() ? (s > 0 ? s : 1.0) : given[i]);
    out.why.push_back(!takes_scale(pr) ? ""
                      : pr.scale       ? "the prior's scale"
                      : !given.empty()
                          ? "given (the batch's shared start)"
                          : "the larger of the constant fit's magnitude and the largest change of "
                            "a data-only fit from it (" +
                                how + ")");
  }
  return out;
}

}  // namespace nefi
