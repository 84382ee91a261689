#pragma once
// autotune: the learning rate, the regularizer weights and (standard and
// thorough levels) the step budget of one method, chosen from the data
// alone by pilot solves (nefi.md §3.7):
//   1. learning rate: pilots at lr x each factor of the level; the one with
//      the lowest RMS data residual wins (a diverged or failed pilot never
//      does).
//   2. each regularizer weight the config switches on (a loss weight > 0,
//      bench/variants.h's loss_weight_keys), in key order, at the chosen lr:
//      pilots at w x each factor; by Morozov's discrepancy principle the
//      largest weight whose RMS residual is <= tau L (tau = 1.1) wins, L the
//      noise sigma, or the lowest pilot residual when every pilot stays above
//      sigma (model error in the data, or pilots too short to fit down to the
//      noise): then the largest weight that costs at most 10 % over the best
//      fit wins. With the noise level unknown the weight is kept.
//   3. the step budget (standard and thorough), at the chosen lr and
//      weights: full solves with every stage's steps times each factor; the
//      smallest budget whose RMS residual is within tau of the floor (sigma,
//      or the lowest pilot residual when that is higher) wins, so a budget
//      longer than the data need is cut and one too short is lengthened
//      (thorough tries 2x).
// Ground-truth metrics of the pilots are recorded for the reader only; no
// decision reads them. A pilot of steps 1 and 2 runs pilot_fraction of the
// method's total steps (every stage scaled alike). Levels:
//   quick     lr x {1/3, 1, 3}            w x {0.1, 1, 10}                     25 %   -
//   standard  lr x {0.1, 0.3, 1, 3, 10}   w x {0.01, 0.1, 0.3, 1, 3, 10, 100}  50 %   steps x {1/8
//   .. 1} thorough  lr x 10^{-1.5 ... 1.5}      w x 10^{-3 ... 3}                   100 %  steps x
//   {1/8 .. 2}
//             in half decades (7 and 13 values)
// The tuned config is the input config with the chosen values, and
// `nefi run tuned_config.yaml` solves exactly what compare() reports.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"

namespace nefi::tune {

struct LevelPlan {
  std::string name;
  std::vector<double> lr_factors, weight_factors;
  double pilot_fraction = 0.25;
  std::vector<double> budget_factors;  // step-budget pilots (empty: the budget is kept)
};
// quick | standard | thorough (an fk::Error names the levels otherwise).
LevelPlan level_plan(const std::string& level, const std::string& who = "--level");

inline constexpr double kDiscrepancyTau = 1.1;

struct Pilot {
  std::string value;  // the candidate as written into the config
  double residual_rms = 0;
  double misfit_ratio = 0;  // residual / sigma (NaN when sigma is unknown)
  int steps = 0;
  std::string error;                     // non-empty: the pilot failed or diverged
  std::map<std::string, double> oracle;  // ground-truth metrics, never used to decide
};

struct Decision {
  std::string key, rule, before, chosen, reason;
  std::vector<Pilot> pilots;
};

struct Comparison {
  std::map<std::string, double> default_metrics, tuned_metrics;
  double default_residual = 0, tuned_residual = 0;
  int default_steps = 0, tuned_steps = 0;
};

struct AutotuneReport {
  std::string instance, method, level;
  uint64_t seed = 0;
  int pilot_steps = 0, total_steps = 0;
  double noise_std = -1;
  std::vector<Decision> decisions;
  RunConfig tuned;
  std::optional<Comparison> comparison;
};

// The rules that pick a decision's value from its pilots (tried in
// ascending order of value), shared by the instance tuner and the
// from_forward tuner (fit_autotune.h). Each returns the chosen pilot and
// the reason for the report, or nullptr when every pilot failed.
//   lr_choice           the lowest RMS residual (the learning rate)
//   discrepancy_choice  a penalty's weight or strength (`what`) by Morozov's
//                       discrepancy principle: the largest value whose
//                       residual is <= tau L, L the noise sigma or the lowest
//                       residual when every pilot stays above sigma (noise
//                       must be > 0)
//   budget_choice       the smallest step budget whose residual is within
//                       tau of the floor (sigma, or the lowest residual above it)
using Choice = std::pair<const Pilot*, std::string>;
Choice lr_choice(const std::vector<Pilot>& pilots);
Choice discrepancy_choice(const std::vector<Pilot>& pilots, double noise,
                          const std::string& what = "weight");
Choice budget_choice(const std::vector<Pilot>& pilots, double noise);
// Each rule in words, for the decision it makes (Decision::rule).
std::string lr_rule();
std::string discrepancy_rule(const std::string& what = "weight");
std::string budget_rule();

// The learning-rate key of a method: its own when declared (grid_lr,
// splat_lr, dd_lr, pinn_lr), else the neural method's lr.
std::string lr_key(const Params& config, const std::string& method);
// Whether two or more pilots ran and all gave one residual, one set of
// metrics and one step count: the setting changes nothing in the method's
// solve (a key it does not read), so autotune keeps its value. (A budget the
// method reads changes its step count, even where the residual stays.)
bool no_effect(const std::vector<Pilot>& pilots);

// `cfg` is the config to tune (its max_total_steps, if any, caps the solves;
// a measured dataset, run.data, is refused: the pilots need the instance's
// synthetic data); on_log gets one line per pilot.
AutotuneReport autotune(const Instance& inst, const RunConfig& cfg, const std::string& method,
                        const LevelPlan& plan,
                        const std::function<void(const std::string&)>& on_log = {});
// Full solves of `original` and report.tuned (what --compare adds).
Comparison compare(const Instance& inst, const RunConfig& original, const AutotuneReport& report);

}  // namespace nefi::tune
