#pragma once
// What a run's config may change in whichever curriculum its instance builds:
// the stopping rules, restarts, the optimizer's EMA, betas and per-prefix
// learning-rate multipliers, and per-stage frozen parameters (config section
// `curriculum:`, `--set curriculum.ATTR`, `--set optim.ema|betas|lr_mult`).
// The reference lets a run set these on every instance; here an instance's
// own keys build the stages, and these apply on top. Unset fields keep the
// instance's values.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nefi/solve/curriculum.h"

namespace nefi {

struct CurriculumOverrides {
  std::optional<int> early_stop_patience;
  std::optional<double> early_stop_min_delta;
  std::optional<double> discrepancy_tau;
  std::optional<double> time_budget_s;
  std::optional<int> restarts;
  std::optional<double> ema;
  std::optional<std::pair<double, double>> betas;
  std::optional<std::map<std::string, double>> lr_mult;  // OptimConfig::lr_mult
  // Stage::freeze: one prefix list for every stage, or one list per stage
  // (a count other than 1 or the stage count is an error in applied_to).
  std::optional<std::vector<std::vector<std::string>>> freeze;

  bool empty() const;
  // `c` with every set field replaced, then validated (fk::Error naming the
  // bad field).
  Curriculum applied_to(Curriculum c) const;
};

// The curriculum a run solves: `own` (its instance's) with `overrides`
// applied, then capped at max_total_steps when > 0 (Curriculum::capped).
// solve_and_record, the batched benchmark and Python's batch_invert all
// prepare theirs by it.
Curriculum run_curriculum(const Curriculum& own, const CurriculumOverrides& overrides,
                          int max_total_steps);

}  // namespace nefi
