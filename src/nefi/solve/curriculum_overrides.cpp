#include "nefi/solve/curriculum_overrides.h"

namespace nefi {

bool CurriculumOverrides::empty() const {
  return !early_stop_patience && !early_stop_min_delta && !discrepancy_tau && !time_budget_s &&
         !restarts && !ema && !betas;
}

Curriculum CurriculumOverrides::applied_to(Curriculum c) const {
  if (early_stop_patience) c.early_stop_patience = *early_stop_patience;
  if (early_stop_min_delta) c.early_stop_min_delta = *early_stop_min_delta;
  if (discrepancy_tau) c.discrepancy_tau = *discrepancy_tau;
  if (time_budget_s) c.time_budget_s = *time_budget_s;
  if (restarts) c.restarts = *restarts;
  if (ema) c.optim.ema = *ema;
  if (betas) std::tie(c.optim.beta1, c.optim.beta2) = *betas;
  c.validate();
  return c;
}

Curriculum run_curriculum(const Curriculum& own, const CurriculumOverrides& overrides,
                          int max_total_steps) {
  const Curriculum c = overrides.applied_to(own);
  return max_total_steps > 0 ? c.capped(max_total_steps) : c;
}

}  // namespace nefi
