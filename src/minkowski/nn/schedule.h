#pragma once
// Learning-rate schedules: the rate at optimizer step t (0-based) from the
// base rate, after a linear warm-up from base * warmup_start over
// warmup_steps steps.
//
//   Constant  base
//   Step      base * gamma^floor(t' / step_size)
//   Cosine    min + (base - min) (1 + cos(pi min(t' / T', 1))) / 2
//   Poly      base * max(1 - t' / T', 0)^power
// where t' = t - warmup_steps and T' = total_steps - warmup_steps: past
// total_steps, Cosine stays at min (torch's CosineAnnealingLR rises again)
// and Poly at 0.
#include <cstdint>
#include <string>

namespace minkowski::nn {

enum class ScheduleKind { Constant, Step, Cosine, Poly };

struct LrSchedule {
  ScheduleKind kind = ScheduleKind::Constant;
  double base_lr = 0.01;
  int64_t total_steps = 1;
  int64_t warmup_steps = 0;
  double warmup_start = 0.0;  // fraction of base_lr at step 0
  int64_t step_size = 1;      // Step
  double gamma = 0.1;         // Step
  double power = 0.9;         // Poly
  double min_lr = 0.0;        // Cosine

  double at(int64_t step) const;
};

// "constant", "step", "cosine", "poly"; else an fk::Error listing them.
ScheduleKind schedule_kind(const std::string& name);

}  // namespace minkowski::nn
