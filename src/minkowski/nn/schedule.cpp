#include "minkowski/nn/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "fk/error.h"

namespace minkowski::nn {

double LrSchedule::at(int64_t step) const {
  FK_CHECK(step >= 0 && total_steps > warmup_steps && warmup_steps >= 0 && step_size > 0,
           "LrSchedule", "step >= 0, total_steps > warmup_steps >= 0, step_size > 0",
           fk::to_text(step) + ", " + fk::to_text(total_steps) + ", " + fk::to_text(warmup_steps) +
               ", " + fk::to_text(step_size));
  FK_CHECK(std::isfinite(base_lr) && base_lr >= 0 && warmup_start >= 0 && warmup_start <= 1 &&
               std::isfinite(gamma) && gamma > 0 && std::isfinite(power) && power > 0 &&
               min_lr >= 0 && min_lr <= base_lr,
           "LrSchedule",
           "a finite base_lr >= 0, warmup_start in [0, 1], gamma > 0, power > 0, min_lr in [0, "
           "base_lr]",
           "base_lr " + fk::to_text(base_lr) + ", warmup_start " + fk::to_text(warmup_start) +
               ", gamma " + fk::to_text(gamma) + ", power " + fk::to_text(power) + ", min_lr " +
               fk::to_text(min_lr));
  if (step < warmup_steps) {
    const double f = static_cast<double>(step) / static_cast<double>(warmup_steps);
    return base_lr * (warmup_start + (1.0 - warmup_start) * f);
  }
  const auto t = static_cast<double>(step - warmup_steps);
  const auto span = static_cast<double>(total_steps - warmup_steps);
  switch (kind) {
    case ScheduleKind::Constant:
      return base_lr;
    case ScheduleKind::Step:
      return base_lr * std::pow(gamma, static_cast<double>((step - warmup_steps) / step_size));
    case ScheduleKind::Cosine:
      return min_lr + (base_lr - min_lr) * 0.5 *
                          (1.0 + std::cos(std::numbers::pi * std::min(t / span, 1.0)));
    case ScheduleKind::Poly:
      return base_lr * std::pow(std::max(1.0 - t / span, 0.0), power);
  }
  return base_lr;
}

ScheduleKind schedule_kind(const std::string& name) {
  if (name == "constant") return ScheduleKind::Constant;
  if (name == "step") return ScheduleKind::Step;
  if (name == "cosine") return ScheduleKind::Cosine;
  if (name == "poly") return ScheduleKind::Poly;
  throw fk::Error("schedule", "constant, step, cosine or poly", "'" + name + "'");
}

}  // namespace minkowski::nn
