#pragma once
// Curriculum: the stages a solve runs through (coarse-to-fine grids, learning
// rates, schedules, annealing), the optimizer settings and the stopping rules.
//   lr_at(t): cosine  lo + (lr - lo) (1 + cos(pi min(1, t/T))) / 2, lo = lr * lr_min_ratio
//             step    lr * gamma^floor(t / step_size)
//             constant lr
//   lr_warmup W > 0: lr (t + 1) / W for t < W, then the schedule above run
//             over the remaining steps (t - W of steps - W), as the
//             reference's warmup_cosine. A wide field at a high rate needs
//             it (docs/performance.md, holography full preset, session 12).
//   progress_at(t) = min(1, t / max(1, anneal_fraction * steps)); 1 when anneal
//   is off. Annealing restarts from 0 at every stage (the beta reset).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fk/shape.h"
#include "nefi/solve/lbfgs.h"

namespace nefi {

// The most full runs `restarts` may ask for (each is a whole solve).
inline constexpr int kMaxRestarts = 1000;

struct Stage {
  std::string name = "stage";
  fk::Dims shape;  // empty: the domain shape
  int steps = 1000;
  double lr = 1e-3;
  // cosine | step | constant; warmup_cosine (the reference's name) is cosine,
  // its warm-up the lr_warmup steps as with any schedule.
  std::string lr_schedule = "cosine";
  double lr_min_ratio = 0.01;
  int lr_step_size = 1000;
  double lr_gamma = 0.1;
  int lr_warmup = 0;  // linear warm-up steps, in [0, steps)
  bool anneal = true;
  double anneal_fraction = 1.0;
  std::map<std::string, double> loss_weights;  // per-stage overrides
  // Parameter-name prefixes this stage does not train (lr multiplier 0; see
  // OptimConfig::lr_mult for the names).
  std::vector<std::string> freeze;

  double lr_at(int t) const;
  double progress_at(int t) const;
  void validate() const;  // throws fk::Error naming the bad field
};

struct OptimConfig {
  std::string optimizer = "adamw";  // adam | adamw | sgd (momentum 0.9) | lbfgs
  double weight_decay = 1e-4;
  double grad_clip = 1.0;  // <= 0: off
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  std::optional<double> ema;  // EMA decay of the parameters
  LbfgsOptions lbfgs;         // optimizer lbfgs: history, iterations and tolerances per step
  // Learning-rate multipliers by parameter-name prefix, the longest matching
  // prefix winning (the reference's parameter groups). Names: "field." and
  // the field's parameter (e.g. field.layer0.weight, field.out.bias,
  // field.table, field.values), "operator.<k>" for the operator's k-th
  // trainable parameter. A prefix matching no parameter is an error at the
  // stage start. Adam, AdamW and SGD on the CPU.
  std::map<std::string, double> lr_mult;
};

struct Curriculum {
  std::vector<Stage> stages{Stage{}};
  OptimConfig optim;
  std::optional<int> early_stop_patience;
  double early_stop_min_delta = 1e-6;
  std::optional<double> discrepancy_tau;
  std::optional<double> time_budget_s;
  // In [1, kMaxRestarts]: full runs from seeds seed, seed + 1, ...; the one
  // that got furthest (a time budget may cut the later ones short) with the
  // lowest final data loss (with optim.ema: the average's) wins.
  int restarts = 1;

  int total_steps() const;
  // The reference's scale_budget cap: when the total exceeds max_total_steps
  // (> 0), every stage's steps become round(steps · max_total / total) (ties
  // to even, at least 1), then at least min_stage_steps, and its lr_warmup
  // scales alike (below its steps); one restart.
  Curriculum capped(int max_total_steps, int min_stage_steps = 2) const;
  void validate() const;
  // One stage at `shape`.
  static Curriculum single(const fk::Dims& shape, int steps = 2000, double lr = 1e-3);
  // n_stages stages, stage i at max(min_size, n / coarse_factor^(n_stages-1-i))
  // per axis (never above n), lr * lr_decay^i (the reference default: 2
  // stages, (3000, 7000), 1e-3, 0.5, factor 2).
  static Curriculum multiscale(const fk::Dims& shape, std::vector<int> steps = {3000, 7000},
                               double lr = 1e-3, double lr_decay = 0.5, int64_t min_size = 8,
                               int64_t coarse_factor = 2);
};

}  // namespace nefi
