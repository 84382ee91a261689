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

// The model on constant fields (one value per field name), host values;
// empty when an output is not finite (a constant the model cannot take).
std::vector<double> on_constants(const Operator& op, const ConstantFields& k,
                                 const std::vector<double>& c) {
  fk::autograd::NoGradGuard ng;
  FieldMap fields;
  for (size_t i = 0; i < k.names.size(); ++i) fields[k.names[i]] = k.make(i, c[i]);
  std::vector<double> v = op.forward(fields).to(fk::DType::F64).to_vector<double>();
  for (double e : v)
    if (!std::isfinite(e)) return {};
  return v;
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

std::vector<fk::Tensor> misfit_gradient_at(const Operator& op, const ConstantFields& k,
                                           const Weighted& d, const std::vector<double>& c) {
  FK_CHECK(c.size() == k.names.size(), "nefi::misfit_gradient_at",
           std::to_string(k.names.size()) + " constants (one per field)", std::to_string(c.size()));
  fk::autograd::EnableGradGuard on;  // whatever the caller's mode
  FieldMap fields;
  std::vector<fk::Tensor> leaves;
  for (size_t i = 0; i < k.names.size(); ++i) {
    fk::Tensor x = k.make(i, c[i]).detach().contiguous();
    x.set_requires_grad(true);
    leaves.push_back(x);
    fields[k.names[i]] = x;
  }
  const fk::Tensor pred = op.forward(fields);
  const std::vector<double> p = pred.detach().to(fk::DType::F64).to_vector<double>();
  FK_CHECK(p.size() == d.y.size() && p.size() == d.w.size(), "nefi::misfit_gradient_at",
           "a prediction of the data's " + std::to_string(d.y.size()) + " values",
           std::to_string(p.size()));
  std::vector<fk::Tensor> maps(leaves.size());
  if (fk::autograd::tensor_requires_grad(pred)) {
    // d misfit / d pred = 2 w (pred - y) / wsum; fk::autograd::grad leaves
    // every .grad (the model's trainable parameters') untouched.
    std::vector<double> seed(p.size());
    for (size_t j = 0; j < p.size(); ++j)
      seed[j] = d.w[j] == 0 ? 0.0 : 2 * d.w[j] * (p[j] - d.y[j]) / std::max(d.wsum, 1e-300);
    maps =
        fk::autograd::grad({pred}, {fk::from_vector(seed, pred.shape()).to(pred.dtype())}, leaves);
  }
  for (fk::Tensor& g : maps) {  // no gradient: a field the model does not read
    g = g.defined() ? g.detach().to(fk::DType::F64).contiguous().clone()
                    : fk::zeros(k.shape, {fk::DType::F64});
    double* v = g.data<double>();
    for (int64_t j = 0; j < g.numel(); ++j)
      if (!std::isfinite(v[j])) v[j] = 0;  // a model's vjp at the edge of its domain
  }
  return maps;
}

}  // namespace nefi
