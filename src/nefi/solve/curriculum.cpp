#include "nefi/solve/curriculum.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "fk/error.h"

namespace nefi {

double Stage::lr_at(int t) const {
  if (t < lr_warmup) return lr * (t + 1) / lr_warmup;
  t -= lr_warmup;
  if (lr_schedule == "constant") return lr;
  if (lr_schedule == "step")
    return lr * std::pow(lr_gamma, std::floor(t / std::max(1, lr_step_size)));
  const double lo = lr * lr_min_ratio;
  const double f = std::min(1.0, static_cast<double>(t) / std::max(1, steps - lr_warmup));
  return lo + (lr - lo) * 0.5 * (1.0 + std::cos(std::numbers::pi * f));
}

double Stage::progress_at(int t) const {
  if (!anneal) return 1.0;
  return std::min(1.0, static_cast<double>(t) / std::max(1.0, anneal_fraction * steps));
}

void Stage::validate() const {
  const std::string w = "nefi::Stage '" + name + "'";
  FK_CHECK(steps > 0, w, "steps > 0", fk::to_text(steps));
  FK_CHECK(lr > 0 && std::isfinite(lr), w, "a finite lr > 0", fk::to_text(lr));
  FK_CHECK(lr_schedule == "cosine" || lr_schedule == "warmup_cosine" || lr_schedule == "step" ||
               lr_schedule == "constant",
           w, "lr_schedule cosine, warmup_cosine, step or constant", lr_schedule);
  FK_CHECK(lr_warmup >= 0 && lr_warmup < steps, w, "lr_warmup in [0, steps)",
           fk::to_text(lr_warmup));
  FK_CHECK(anneal_fraction > 0 && anneal_fraction <= 1, w, "anneal_fraction in (0, 1]",
           fk::to_text(anneal_fraction));
  // A negative floor or decay would turn the lr negative: gradient ascent.
  FK_CHECK(lr_min_ratio >= 0 && lr_min_ratio <= 1, w, "lr_min_ratio in [0, 1]",
           fk::to_text(lr_min_ratio));
  FK_CHECK(lr_gamma > 0 && std::isfinite(lr_gamma), w, "a finite lr_gamma > 0",
           fk::to_text(lr_gamma));
  FK_CHECK(lr_step_size >= 1, w, "lr_step_size >= 1", fk::to_text(lr_step_size));
  for (const std::string& f : freeze)
    FK_CHECK(!f.empty(), w, "non-empty parameter-name prefixes to freeze", "''");
}

int Curriculum::total_steps() const {
  int n = 0;
  for (const Stage& s : stages) n += s.steps;
  return n;
}

void Curriculum::validate() const {
  FK_CHECK(!stages.empty(), "nefi::Curriculum", "at least one stage", "none");
  for (const Stage& s : stages) s.validate();
  FK_CHECK(restarts >= 1 && restarts <= kMaxRestarts, "nefi::Curriculum",
           "restarts in [1, " + fk::to_text(kMaxRestarts) + "]", fk::to_text(restarts));
  const char* w = "nefi::Curriculum";
  if (early_stop_patience)
    FK_CHECK(*early_stop_patience >= 1, w, "early_stop_patience >= 1",
             fk::to_text(*early_stop_patience));
  FK_CHECK(early_stop_min_delta >= 0, w, "early_stop_min_delta >= 0",
           fk::to_text(early_stop_min_delta));
  if (discrepancy_tau)
    FK_CHECK(*discrepancy_tau > 0, w, "discrepancy_tau > 0", fk::to_text(*discrepancy_tau));
  if (time_budget_s)
    FK_CHECK(*time_budget_s > 0, w, "time_budget_s > 0", fk::to_text(*time_budget_s));
  if (optim.ema)
    FK_CHECK(*optim.ema > 0 && *optim.ema < 1, "nefi::OptimConfig", "ema in (0, 1)",
             fk::to_text(*optim.ema));
  FK_CHECK(optim.weight_decay >= 0 && std::isfinite(optim.weight_decay), "nefi::OptimConfig",
           "weight_decay >= 0 (a negative decay grows every weight)",
           fk::to_text(optim.weight_decay));
  FK_CHECK(optim.beta1 >= 0 && optim.beta1 < 1 && optim.beta2 >= 0 && optim.beta2 < 1,
           "nefi::OptimConfig", "betas in [0, 1)",
           fk::to_text(optim.beta1) + ", " + fk::to_text(optim.beta2));
  FK_CHECK(optim.optimizer == "adam" || optim.optimizer == "adamw" || optim.optimizer == "sgd" ||
               optim.optimizer == "lbfgs",
           "nefi::OptimConfig", "optimizer adam, adamw, sgd or lbfgs", optim.optimizer);
  for (const auto& [prefix, mult] : optim.lr_mult)
    FK_CHECK(!prefix.empty() && mult >= 0 && std::isfinite(mult), "nefi::OptimConfig lr_mult",
             "non-empty prefixes with multipliers >= 0", "'" + prefix + "': " + fk::to_text(mult));
  bool frozen = false;
  for (const Stage& s : stages) frozen = frozen || !s.freeze.empty();
  FK_CHECK(optim.optimizer != "lbfgs" || (optim.lr_mult.empty() && !frozen), "nefi::OptimConfig",
           "no lr_mult or freeze with lbfgs (its step is one vector)",
           std::string("lbfgs with ") + (optim.lr_mult.empty() ? "a stage's freeze"
                                         : frozen              ? "lr_mult and a stage's freeze"
                                                               : "lr_mult"));
  optim.lbfgs.validate();
}

Curriculum Curriculum::capped(int max_total_steps, int min_stage_steps) const {
  FK_CHECK(max_total_steps >= 0 && min_stage_steps >= 1, "nefi::Curriculum::capped",
           "max_total_steps >= 0 and min_stage_steps >= 1",
           fk::to_text(max_total_steps) + ", " + fk::to_text(min_stage_steps));
  Curriculum c = *this;
  c.restarts = 1;
  const int total = total_steps();
  if (max_total_steps > 0 && total > max_total_steps) {
    const double f = static_cast<double>(max_total_steps) / total;
    for (Stage& s : c.stages) {
      s.steps = std::max(1, static_cast<int>(std::nearbyint(s.steps * f)));
      s.lr_warmup = static_cast<int>(std::nearbyint(s.lr_warmup * f));
    }
  }
  for (Stage& s : c.stages) {
    s.steps = std::max(min_stage_steps, s.steps);
    s.lr_warmup = std::min(s.lr_warmup, s.steps - 1);  // the warm-up stays a part of the stage
  }
  return c;
}

Curriculum Curriculum::single(const fk::Dims& shape, int steps, double lr) {
  Curriculum c;
  c.stages[0].shape = shape;
  c.stages[0].steps = steps;
  c.stages[0].lr = lr;
  return c;
}

Curriculum Curriculum::multiscale(const fk::Dims& shape, std::vector<int> steps, double lr,
                                  double lr_decay, int64_t min_size, int64_t coarse_factor) {
  FK_CHECK(!steps.empty(), "nefi::Curriculum::multiscale", "at least one stage", "none");
  FK_CHECK(coarse_factor >= 2 && coarse_factor <= 16, "nefi::Curriculum::multiscale",
           "a coarse factor in [2, 16]", fk::to_text(coarse_factor));
  Curriculum c;
  c.stages.clear();
  const int n = static_cast<int>(steps.size());
  for (int i = 0; i < n; ++i) {
    Stage s;
    s.name = "stage" + std::to_string(i);
    s.shape = shape;
    int64_t divisor = 1;
    for (int k = i; k < n - 1 && divisor <= shape.numel(); ++k) divisor *= coarse_factor;
    for (int a = 0; a < shape.size(); ++a)
      s.shape[a] = std::min(shape[a], std::max(min_size, shape[a] / divisor));
    s.steps = steps[i];
    s.lr = lr * std::pow(lr_decay, i);
    c.stages.push_back(s);
  }
  return c;
}

}  // namespace nefi
