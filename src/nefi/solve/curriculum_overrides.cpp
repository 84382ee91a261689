#include "nefi/solve/curriculum_overrides.h"

#include <string>

#include "fk/error.h"

namespace nefi {

bool CurriculumOverrides::empty() const {
  return !early_stop_patience && !early_stop_min_delta && !discrepancy_tau && !time_budget_s &&
         !restarts && !ema && !betas && !lr_mult && !freeze;
}

Curriculum CurriculumOverrides::applied_to(Curriculum c) const {
  if (early_stop_patience) c.early_stop_patience = *early_stop_patience;
  if (early_stop_min_delta) c.early_stop_min_delta = *early_stop_min_delta;
  if (discrepancy_tau) c.discrepancy_tau = *discrepancy_tau;
  if (time_budget_s) c.time_budget_s = *time_budget_s;
  if (restarts) c.restarts = *restarts;
  if (ema) c.optim.ema = *ema;
  if (betas) std::tie(c.optim.beta1, c.optim.beta2) = *betas;
  if (lr_mult) c.optim.lr_mult = *lr_mult;
  if (freeze) {
    const size_t n = c.stages.size();
    FK_CHECK(freeze->size() == 1 || freeze->size() == n, "curriculum.freeze",
             "one prefix list for every stage or one per stage (" + fk::to_text(n) + ")",
             fk::to_text(freeze->size()) + " lists");
    for (size_t i = 0; i < n; ++i) c.stages[i].freeze = (*freeze)[freeze->size() == 1 ? 0 : i];
  }
  c.validate();
  return c;
}

Curriculum run_curriculum(const Curriculum& own, const CurriculumOverrides& overrides,
                          int max_total_steps) {
  const Curriculum c = overrides.applied_to(own);
  return max_total_steps > 0 ? c.capped(max_total_steps) : c;
}

}  // namespace nefi
