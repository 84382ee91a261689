#pragma once
// Edge refinement (solve/refine.h) of a bring-your-own fit, as
// ForwardProblem.refine_edges and `nefi fit --refine` run it: the refit
// replaces the field's head, so what the head held is checked instead.
//   refused     several fields, a model with trainable parameters (the refit
//               would train them), and priors a staircase or a free grid
//               cannot keep: conserved, zero_mean, symmetric, known_support
//   range       a nonnegative or positive field's levelset, voxels and
//               tv_sharpen refits are held above 0 (floor, when not given),
//               a bounded or two-phase field's above its low bound; any
//               refit whose values leave the prior's range (by more than
//               1e-6 of its scale: the refits are f32) is then refused
//               (refusal 6): a phasefield refit, or one above a high bound
//   lr          when not given, 1e-2 times the smooth field's spread (max -
//               min): the refit moves values and interfaces in the field's
//               units, and a from_forward field has any scale
// chi in the report is the mean squared residual over sigma^2 (not RMSE /
// sigma as fit.json's discrepancy_ratio). The refit trains on `device`
// (its fields have a device path; the model needs one there).
#include <optional>

#include "fk/device.h"
#include "fk/tensor.h"
#include "nefi/byop/auto_problem.h"
#include "nefi/solve/refine.h"

namespace nefi {

struct FitRefineOptions {
  RefineOptions refine;
  std::optional<double> lr;     // unset: the rule above
  std::optional<double> floor;  // unset: the prior's low bound (voxels, tv_sharpen)
  uint64_t seed = 0;
  fk::Device device = fk::kCPU;  // where the refit trains (a model with a device path)
};

// Throws fk::Error unless the refit can keep `prior` (checked by refine_fit;
// a caller may check before its fit).
void check_refinable(const PriorSpec& prior);

// Refusal code of a refit that leaves the prior's range.
inline constexpr int kRefusalOutOfRange = 6;

// smooth: the fit's field (the problem's shape, finite). Throws fk::Error
// naming what cannot be refined.
// `used`: the refine options it ran with (lr and floor filled in).
RefineReport refine_fit(const AutoProblem& problem, const fk::Tensor& smooth,
                        FitRefineOptions options, RefineOptions* used = nullptr);

}  // namespace nefi
