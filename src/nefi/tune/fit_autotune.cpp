#include "nefi/tune/fit_autotune.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fk/error.h"
#include "nefi/byop/prior.h"
#include "nefi/diagnostics/diagnose.h"
#include "nefi/solve/metrics.h"
#include "nefi/tune/autotune_report.h"

namespace nefi::tune {
namespace {

using Log = std::function<void(const std::string&)>;

// Six significant digits: 3e-4, not 0.00030000000000000003.
std::string value_text(double v) {
  return fmt::format("{:.6g}", v);
}

// Runs one pilot: the problem rebuilt with a candidate's options and solved.
struct PilotRunner {
  const OperatorPtr& op;
  const fk::Dims& shape;
  const Measurement& y;
  const AutoProblem& base;  // its reset_operator puts the model back as given
  const fk::Tensor& truth;
  const Log& log;
  fk::Device device;

  // `steps` > 0: the stages capped to that many steps in all.
  Pilot run(const AutoOptions& o, int steps, const std::string& key,
            const std::string& value) const {
    Pilot p;
    p.value = value;
    base.reset_operator();
    try {
      AutoProblem ap = auto_problem(op, shape, y, o);
      if (steps > 0) ap.curriculum = ap.curriculum.capped(steps);
      SolverOptions so;
      so.device = device;
      const Result r = ap.solve(so);
      p.steps = r.total_steps();
      p.residual_rms = diagnostics::residual_rms(r.prediction, ap.problem.measurement);
      p.misfit_ratio = ap.noise_std > 0 ? p.residual_rms / ap.noise_std
                                        : std::numeric_limits<double>::quiet_NaN();
      if (truth.defined()) p.oracle["psnr"] = psnr(r.fields.at(ap.fields.front()), truth);
      if (!std::isfinite(p.residual_rms)) p.error = "diverged (non-finite residual)";
    } catch (const std::exception& e) {
      p.error = e.what();
    }
    base.reset_operator();
    if (log)
      log(p.error.empty() ? fmt::format("{}={}: residual {:.4e} ({} steps)", key, value,
                                        p.residual_rms, p.steps)
                          : fmt::format("{}={}: failed: {}", key, value, p.error));
    return p;
  }
};

// The prior text of field `f` in `o` (the one prior, or the field's own).
std::string& prior_text(AutoOptions& o, size_t f) {
  return o.field_priors.empty() ? o.prior : o.field_priors[f].second;
}

std::string term_name(const PriorPenalty& pen) {
  if (pen.kind == "monotone")
    return fmt::format("{}({})", pen.sign > 0 ? "increasing" : "decreasing", pen.axis);
  return pen.kind;
}

// A decision's outcome: the chosen pilot's value and reason, or the value
// before and `kept` when every pilot failed.
void settle(Decision& d, const Choice& c, const std::string& kept) {
  d.chosen = c.first ? c.first->value : d.before;
  d.reason = c.first ? c.second : kept;
}

}  // namespace

FitTuneReport autotune_fit(const OperatorPtr& op, const fk::Dims& shape, const Measurement& y,
                           const AutoOptions& options, const LevelPlan& plan,
                           const fk::Tensor& truth, const Log& on_log, fk::Device device) {
  const size_t n_fields = options.field_priors.empty() ? 1 : options.field_priors.size();
  FK_CHECK(!truth.defined() || (n_fields == 1 && truth.numel() == shape.numel()), "autotune truth",
           "one field's truth of shape " + shape.str(),
           truth.defined() ? truth.shape().str() + " for " + fk::to_text(n_fields) + " field(s)"
                           : "none");
  const AutoProblem base = auto_problem(op, shape, y, options);
  if (device.is_cuda()) {  // a refusal once, by name, not as every pilot's failure
    SolverOptions so;
    so.device = device;
    (void)Solver(base.problem, base.curriculum, so);
  }
  const fk::Tensor gt = truth.defined() ? truth.reshape(shape) : truth;
  const PilotRunner pilots{op, shape, y, base, gt, on_log, device};
  FitTuneReport r;
  r.level = plan.name;
  r.representation = options.representation;
  r.noise_std = base.noise_std;
  r.noise_estimated = base.noise_estimated;
  r.total_steps = base.curriculum.total_steps();
  r.pilot_steps = std::max(2, static_cast<int>(std::lround(plan.pilot_fraction * r.total_steps)));
  r.tuned = options;

  {  // 1. the learning rate
    Decision d;
    d.key = "lr";
    d.rule = lr_rule();
    const double lr = base.curriculum.stages.front().lr;
    d.before = value_text(lr);
    // L-BFGS's line search sets its steps; the lr is only where each search
    // starts, and pilots that all stop at the noise floor would pick by noise.
    const bool line_search = base.curriculum.optim.optimizer == "lbfgs";
    for (double f : line_search ? std::vector<double>{} : plan.lr_factors) {
      AutoOptions o = r.tuned;
      o.lr = std::stod(value_text(lr * f));
      d.pilots.push_back(pilots.run(o, r.pilot_steps, d.key, value_text(*o.lr)));
    }
    const Choice c = lr_choice(d.pilots);
    settle(d, c,
           line_search ? "L-BFGS: its line search sets the steps; the learning rate (each "
                         "search's first trial) is kept"
                       : "every pilot failed; the learning rate is kept");
    if (c.first) r.tuned.lr = std::stod(d.chosen);
    r.decisions.push_back(std::move(d));
  }

  // 2. each penalty's strength
  for (size_t f = 0; f < n_fields; ++f) {
    const size_t n_terms = parse_prior(prior_text(r.tuned, f)).penalties.size();
    for (size_t t = 0; t < n_terms; ++t) {
      const PriorSpec spec = parse_prior(prior_text(r.tuned, f));
      Decision d;
      d.key = term_name(spec.penalties[t]) +
              (n_fields > 1 ? ":" + options.field_priors[f].first : std::string());
      d.rule = discrepancy_rule("strength");
      const double s = spec.penalties[t].strength;
      d.before = value_text(s);
      if (!(base.noise_std > 0)) {
        d.chosen = d.before;
        d.reason = "no noise level (noise-free data); the strength is kept";
        r.decisions.push_back(std::move(d));
        continue;
      }
      for (double k : plan.weight_factors) {
        PriorSpec c = spec;
        c.penalties[t].strength = std::stod(value_text(s * k));
        AutoOptions o = r.tuned;
        prior_text(o, f) = c.str();
        d.pilots.push_back(
            pilots.run(o, r.pilot_steps, d.key, value_text(c.penalties[t].strength)));
      }
      const Choice c = discrepancy_choice(d.pilots, base.noise_std, "strength");
      settle(d, c, "every pilot failed; the strength is kept");
      PriorSpec chosen = spec;
      chosen.penalties[t].strength = std::stod(d.chosen);
      prior_text(r.tuned, f) = chosen.str();
      r.decisions.push_back(std::move(d));
    }
  }

  if (!plan.budget_factors.empty()) {  // 3. the budget
    Decision d;
    d.key = "steps";
    d.rule = budget_rule();
    d.before = std::to_string(r.total_steps);
    AutoOptions counted = r.tuned;  // a step count, with the given budget's early stop
    counted.early_stop_patience = base.curriculum.early_stop_patience;
    for (double k : plan.budget_factors) {
      AutoOptions o = counted;
      o.budget = std::to_string(std::max(1L, std::lround(r.total_steps * k)));
      d.pilots.push_back(pilots.run(o, 0, d.key, o.budget));
    }
    const Choice c = budget_choice(d.pilots, base.noise_std);
    settle(d, c, "every pilot failed; the budget is kept");
    if (c.first && d.chosen != d.before) {
      r.tuned = counted;
      r.tuned.budget = d.chosen;
    }
    r.decisions.push_back(std::move(d));
  }
  return r;
}

AutoProblem tuned_problem(const OperatorPtr& op, const fk::Dims& shape, const Measurement& y,
                          const FitTuneReport& r) {
  AutoProblem ap = auto_problem(op, shape, y, r.tuned);
  for (const Decision& d : r.decisions)
    for (AutoDecision& a : ap.decisions)
      if (a.key == d.key && !d.pilots.empty())
        a.why = fmt::format("autotune ({}): {} -> {}, {}", r.level, d.before, d.chosen, d.reason);
  return ap;
}

std::string fit_autotune_md(const FitTuneReport& r) {
  std::string s = fmt::format(
      "# Autotune: your forward model ({} field), level {}\n\n"
      "Pilot solves of {} steps each (the decided budget: {}); noise sigma {:.4e} ({}). "
      "Decisions read the data residual only.\n",
      r.representation, r.level, r.pilot_steps, r.total_steps, r.noise_std,
      r.noise_estimated ? "estimated" : "given");
  return s + decisions_md(r.decisions);
}

std::string fit_autotune_json(const FitTuneReport& r) {
  nlohmann::json j;
  j["level"] = r.level;
  j["representation"] = r.representation;
  j["noise_std"] = r.noise_std;
  j["noise_estimated"] = r.noise_estimated;
  j["pilot_steps"] = r.pilot_steps;
  j["total_steps"] = r.total_steps;
  j["discrepancy_tau"] = kDiscrepancyTau;
  j["decisions"] = decisions_json(r.decisions);
  return j.dump(2) + "\n";
}

}  // namespace nefi::tune
