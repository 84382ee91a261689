#include "nefi/tune/autotune.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <variant>

#include <fmt/format.h>

#include "fk/device.h"
#include "fk/error.h"
#include "nefi/bench/variants.h"
#include "nefi/diagnostics/diagnose.h"

namespace nefi::tune {
namespace {

// 10^(i/2) for i in [lo, hi]: factors half a decade apart.
std::vector<double> half_decades(int lo, int hi) {
  std::vector<double> v;
  for (int i = lo; i <= hi; ++i) v.push_back(std::pow(10.0, i / 2.0));
  return v;
}

// The method's total steps under cfg (the steps list's sum, or a count),
// capped by cfg.max_total_steps.
int total_steps(const RunConfig& cfg) {
  double total = 0;
  for (const auto& e : cfg.config.entries()) {
    if (e.key != "steps") continue;
    if (const auto* l = std::get_if<std::vector<double>>(&e.value))
      total = std::accumulate(l->begin(), l->end(), 0.0);
    else if (const auto* i = std::get_if<int64_t>(&e.value))
      total = static_cast<double>(*i);
  }
  FK_CHECK(total >= 1, "nefi autotune", "an instance with a 'steps' config key",
           cfg.instance + " has none");
  if (cfg.max_total_steps > 0) total = std::min<double>(total, cfg.max_total_steps);
  return static_cast<int>(total);
}

Pilot run_pilot(const Instance& inst, const RunConfig& cfg, const std::string& method, int steps,
                const std::string& value) {
  Pilot p;
  p.value = value;
  bool direct = false;
  try {
    SolverOptions so = solver_options(cfg);
    so.max_total_steps = steps;
    const RunOutput out = inst.run(cfg.config, method, cfg.seed, so);
    p.steps = out.result.total_steps();
    direct = p.steps == 0;
    if (!direct) p.residual_rms = diagnostics::residual_rms(out.result.prediction, out.measurement);
    p.misfit_ratio = out.measurement.noise_std > 0 ? p.residual_rms / out.measurement.noise_std
                                                   : std::numeric_limits<double>::quiet_NaN();
    p.oracle = out.metrics;
    if (!std::isfinite(p.residual_rms)) p.error = "diverged (non-finite residual)";
  } catch (const std::exception& e) {
    p.error = e.what();
  }
  FK_CHECK(!direct, "nefi autotune --method", "a method that runs the solver loop",
           "'" + method + "' (a direct method)");
  return p;
}

std::string value_text(double v) {
  return Params::render(v);
}

// Pilots of `key` at base x each factor (the config's value set each time).
std::vector<Pilot> pilots(const Instance& inst, const RunConfig& cfg, const std::string& method,
                          int steps, const std::string& key, double base,
                          const std::vector<double>& factors,
                          const std::function<void(const std::string&)>& log) {
  std::vector<Pilot> out;
  for (double f : factors) {
    RunConfig c = cfg;
    // Six significant digits: 3e-4, not 0.00030000000000000003.
    const std::string v = value_text(std::stod(fmt::format("{:.6g}", base * f)));
    c.config.set(key, v);
    out.push_back(run_pilot(inst, c, method, steps, v));
    const Pilot& p = out.back();
    if (log)
      log(p.error.empty()
              ? fmt::format("{}={}: residual {:.4e} ({} steps)", key, v, p.residual_rms, p.steps)
              : fmt::format("{}={}: failed: {}", key, v, p.error));
  }
  return out;
}

// Kept when the pilots show the setting changes nothing in `method`'s solve
// (a key it does not read: the neural method's loss weights under grid):
// a tie-break would move it without cause. True when it did.
bool kept_without_effect(Decision& d, const std::string& method) {
  if (!no_effect(d.pilots)) return false;
  d.chosen = d.before;
  d.reason = "no effect on " + method +
             ": every pilot gave the same residual and metrics; the value is kept";
  return true;
}

Decision tune_lr(const Instance& inst, RunConfig& cfg, const std::string& method, int steps,
                 const LevelPlan& plan, const std::function<void(const std::string&)>& log) {
  Decision d;
  d.key = lr_key(cfg.config, method);
  d.rule = lr_rule();
  const double lr = cfg.config.d(d.key);
  d.before = value_text(lr);
  d.pilots = pilots(inst, cfg, method, steps, d.key, lr, plan.lr_factors, log);
  if (kept_without_effect(d, method)) return d;
  const auto [best, reason] = lr_choice(d.pilots);
  if (!best) {
    d.chosen = d.before;
    d.reason = "every pilot failed; the learning rate is kept";
    return d;
  }
  d.chosen = best->value;
  d.reason = reason;
  cfg.config.set(d.key, d.chosen);
  return d;
}

Decision tune_weight(const Instance& inst, RunConfig& cfg, const std::string& method, int steps,
                     const LevelPlan& plan, const std::string& key, double noise,
                     const std::function<void(const std::string&)>& log) {
  Decision d;
  d.key = key;
  d.rule = discrepancy_rule();
  const double w = cfg.config.d(key);
  d.before = value_text(w);
  if (!(noise > 0)) {
    d.chosen = d.before;
    d.reason = "the noise level is unknown; the weight is kept";
    return d;
  }
  d.pilots = pilots(inst, cfg, method, steps, key, w, plan.weight_factors, log);
  if (kept_without_effect(d, method)) return d;
  const auto [chosen, reason] = discrepancy_choice(d.pilots, noise);
  if (!chosen) {
    d.chosen = d.before;
    d.reason = "every pilot failed; the weight is kept";
    return d;
  }
  d.chosen = chosen->value;
  d.reason = reason;
  cfg.config.set(key, d.chosen);
  return d;
}

// The config's `steps` (a list of stage steps or a count) times f, each at
// least 1, as its config text.
std::string scaled_steps(const Params& config, double f) {
  for (const auto& e : config.entries()) {
    if (e.key != "steps") continue;
    if (const auto* l = std::get_if<std::vector<double>>(&e.value)) {
      std::vector<double> v;
      for (double s : *l) v.push_back(std::max(1.0, std::round(s * f)));
      return Params::render(v);
    }
    if (const auto* i = std::get_if<int64_t>(&e.value))
      return Params::render(std::max<int64_t>(1, std::llround(static_cast<double>(*i) * f)));
  }
  throw fk::Error("nefi autotune", "an instance with a 'steps' config key", "none");
}

// The budget: pilots at the tuned config with every stage's steps times
// each factor; the smallest budget whose residual is within tau of the
// floor (sigma, or the lowest pilot's residual above it) wins.
Decision tune_budget(const Instance& inst, RunConfig& cfg, const std::string& method,
                     const LevelPlan& plan, double noise,
                     const std::function<void(const std::string&)>& log) {
  Decision d;
  d.key = "steps";
  d.rule = budget_rule();
  d.before = scaled_steps(cfg.config, 1.0);
  for (double f : plan.budget_factors) {
    RunConfig c = cfg;
    const std::string v = scaled_steps(cfg.config, f);
    c.config.set("steps", v);
    // Capped only by the run's own cap: a method with its own budget key
    // (grid_steps) was cut at the scaled 'steps' it never reads.
    d.pilots.push_back(run_pilot(inst, c, method, c.max_total_steps, v));
    const Pilot& p = d.pilots.back();
    if (log)
      log(p.error.empty() ? fmt::format("steps={}: residual {:.4e}", v, p.residual_rms)
                          : fmt::format("steps={}: failed: {}", v, p.error));
  }
  if (kept_without_effect(d, method)) return d;
  const auto [chosen, reason] = budget_choice(d.pilots, noise);
  if (!chosen) {
    d.chosen = d.before;
    d.reason = "every pilot failed; the budget is kept";
    return d;
  }
  d.chosen = chosen->value;
  d.reason = reason;
  cfg.config.set("steps", d.chosen);
  return d;
}

}  // namespace

namespace {

const Pilot* lowest_residual(const std::vector<Pilot>& pilots) {
  const Pilot* lowest = nullptr;
  for (const Pilot& p : pilots)
    if (p.error.empty() && (!lowest || p.residual_rms < lowest->residual_rms)) lowest = &p;
  return lowest;
}

}  // namespace

std::string lr_rule() {
  return "lowest RMS data residual after a pilot solve";
}

std::string discrepancy_rule(const std::string& what) {
  return fmt::format("discrepancy principle: the largest {} with residual <= {} sigma", what,
                     kDiscrepancyTau);
}

std::string budget_rule() {
  return fmt::format(
      "the smallest budget whose residual is within {} x the floor (sigma, or the lowest pilot "
      "residual)",
      kDiscrepancyTau);
}

Choice lr_choice(const std::vector<Pilot>& pilots) {
  const Pilot* best = lowest_residual(pilots);
  if (!best) return {nullptr, ""};
  return {best, fmt::format("residual {:.4e}, the lowest of {} pilots", best->residual_rms,
                            pilots.size())};
}

Choice discrepancy_choice(const std::vector<Pilot>& pilots, double noise, const std::string& what) {
  const Pilot* lowest = lowest_residual(pilots);
  if (!lowest) return {nullptr, ""};
  // The level the residual can reach: sigma, or the lowest pilot's residual
  // when model error (or a short pilot) keeps every fit above sigma.
  const double level = std::max(noise, lowest->residual_rms);
  const Pilot* chosen = lowest;
  for (const Pilot& p : pilots)  // values ascend: the last that meets is the largest
    if (p.error.empty() && p.residual_rms <= kDiscrepancyTau * level) chosen = &p;
  return {chosen, level > noise
                      ? fmt::format("no pilot reached sigma (the best: {:.3f} sigma); the "
                                    "largest {} within {} x that floor: residual "
                                    "{:.3f} sigma",
                                    lowest->residual_rms / noise, what, kDiscrepancyTau,
                                    chosen->residual_rms / noise)
                      : fmt::format("residual {:.4e} = {:.3f} sigma", chosen->residual_rms,
                                    chosen->residual_rms / noise)};
}

Choice budget_choice(const std::vector<Pilot>& pilots, double noise) {
  const Pilot* lowest = lowest_residual(pilots);
  if (!lowest) return {nullptr, ""};
  const double floor = std::max(noise > 0 ? noise : 0.0, lowest->residual_rms);
  for (const Pilot& p : pilots)  // budgets ascend: the first that meets is the smallest
    if (p.error.empty() && p.residual_rms <= kDiscrepancyTau * floor)
      return {&p, fmt::format("residual {:.4e} in {} steps (floor {:.4e})", p.residual_rms, p.steps,
                              floor)};
  return {lowest, ""};  // unreachable: the lowest always meets its own floor
}

LevelPlan level_plan(const std::string& level, const std::string& who) {
  if (level == "quick") return {"quick", {1.0 / 3, 1, 3}, {0.1, 1, 10}, 0.25, {}};
  if (level == "standard")
    return {"standard",
            {0.1, 0.3, 1, 3, 10},
            {0.01, 0.1, 0.3, 1, 3, 10, 100},
            0.5,
            {0.125, 0.25, 0.5, 1}};
  if (level == "thorough")
    return {"thorough", half_decades(-3, 3), half_decades(-6, 6), 1.0, {0.125, 0.25, 0.5, 1, 2}};
  throw fk::Error(who, "quick, standard or thorough", "'" + level + "'");
}

bool no_effect(const std::vector<Pilot>& pilots) {
  const Pilot* first = nullptr;
  int ran = 0;
  for (const Pilot& p : pilots) {
    if (!p.error.empty()) continue;
    if (++ran == 1) first = &p;
    if (p.residual_rms != first->residual_rms || p.oracle != first->oracle ||
        p.steps != first->steps)
      return false;
  }
  return ran >= 2;
}

std::string lr_key(const Params& config, const std::string& method) {
  // The methods with a learning rate of their own (the neural method's is 'lr').
  for (const auto& [m, key] : {std::pair<const char*, const char*>{"grid", "grid_lr"},
                               {"gaussian_splat", "splat_lr"},
                               {"deep_decoder", "dd_lr"},
                               {"pinn_soft", "pinn_lr"}})
    if (method == m && config.has(key)) return key;
  FK_CHECK(config.has("lr"), "nefi autotune", "a config with an 'lr' key", "none");
  return "lr";
}

AutotuneReport autotune(const Instance& inst, const RunConfig& cfg, const std::string& method,
                        const LevelPlan& plan,
                        const std::function<void(const std::string&)>& on_log) {
  FK_CHECK(cfg.data.empty(), "run.data",
           "no measured dataset (autotune studies the instance's synthetic data; a run solves a "
           "measured one)",
           "'" + cfg.data + "'");
  // Before any pilot: each would fail on an unusable device, and a tuning
  // whose every pilot failed returned the config unchanged without a word.
  fk::check_usable(fk::parse_device(cfg.device), "autotune device (run.device or NEFI_DEVICE)");
  AutotuneReport r;
  r.instance = cfg.instance;
  r.method = method;
  r.level = plan.name;
  r.seed = cfg.seed;
  r.total_steps = total_steps(cfg);
  r.pilot_steps = std::max(2, static_cast<int>(std::lround(plan.pilot_fraction * r.total_steps)));
  r.noise_std = inst.make_measurement(cfg.config, cfg.seed).first.noise_std;
  r.tuned = cfg;
  r.tuned.methods = {method};
  r.decisions.push_back(tune_lr(inst, r.tuned, method, r.pilot_steps, plan, on_log));
  for (const std::string& key : bench::loss_weight_keys(cfg.config))
    if (cfg.config.d(key) > 0)
      r.decisions.push_back(
          tune_weight(inst, r.tuned, method, r.pilot_steps, plan, key, r.noise_std, on_log));
  if (!plan.budget_factors.empty())
    r.decisions.push_back(tune_budget(inst, r.tuned, method, plan, r.noise_std, on_log));
  return r;
}

Comparison compare(const Instance& inst, const RunConfig& original, const AutotuneReport& report) {
  Comparison c;
  const RunOutput a =
      inst.run(original.config, report.method, original.seed, solver_options(original));
  const RunOutput b =
      inst.run(report.tuned.config, report.method, report.tuned.seed, solver_options(report.tuned));
  c.default_metrics = a.metrics;
  c.tuned_metrics = b.metrics;
  c.default_residual = diagnostics::residual_rms(a.result.prediction, a.measurement);
  c.tuned_residual = diagnostics::residual_rms(b.result.prediction, b.measurement);
  c.default_steps = a.result.total_steps();
  c.tuned_steps = b.result.total_steps();
  return c;
}

}  // namespace nefi::tune
