#pragma once
// autotune for a bring-your-own problem (from_forward, nefi fit): the
// learning rate, each prior penalty's strength and (levels standard and
// thorough) the step budget, chosen from the data by pilot solves under the
// instance tuner's levels and rules (autotune.h), as the reference's
// autotune_problem tunes a problem:
//   1. lr: pilots at the decided lr x the level's lr factors, each capped at
//      pilot_fraction of the decided steps (Curriculum::capped, as the
//      instance pilots are); lr_choice;
//   2. each penalty term of each field's prior (tv, smooth, sparse,
//      increasing / decreasing, registered terms), in prior order, at the
//      chosen lr: pilots at its strength x the weight factors, the strength
//      picked by the discrepancy principle (discrepancy_choice): the
//      strongest prior the data allow. Without a noise level (0: noise-free
//      data) the strengths are kept. A decision's key is the term as the
//      prior text names it (tv, increasing(0)), with ":field" when the
//      problem has several fields;
//   3. the budget (standard, thorough): full solves at the decided steps x
//      each budget factor (budget_choice); a thorough budget keeps its early
//      stop at any step count.
// Each pilot rebuilds the problem with its candidate (auto_problem: the
// constant fit and the penalty probe) and solves it from options.seed, the
// model's trainable parameters set back to their given values before each
// build and after each solve. The residual is the RMS of prediction - data
// over observed entries, the data as the problem holds them. A truth, when
// given, is scored (PSNR) for the reader only; no decision reads it.
#include <functional>
#include <string>
#include <vector>

#include "fk/device.h"
#include "nefi/byop/auto_problem.h"
#include "nefi/tune/autotune.h"

namespace nefi::tune {

struct FitTuneReport {
  std::string level, representation;
  double noise_std = 0;
  bool noise_estimated = false;
  int total_steps = 0, pilot_steps = 0;
  std::vector<Decision> decisions;  // lr, one per penalty term, steps
  // The given options with every chosen value; a value kept because every
  // pilot failed stays as given.
  AutoOptions tuned;
};

// `device`: where the pilots train (a CUDA device: the problem's device
// solve is checked first, a field or model without a device path refused by
// name before any pilot).
FitTuneReport autotune_fit(const OperatorPtr& op, const fk::Dims& shape, const Measurement& y,
                           const AutoOptions& options, const LevelPlan& plan,
                           const fk::Tensor& truth = {},
                           const std::function<void(const std::string&)>& on_log = {},
                           fk::Device device = fk::kCPU);

// The problem built with r.tuned, its lr and steps decisions saying that
// the tuner chose them (and why) instead of "given".
AutoProblem tuned_problem(const OperatorPtr& op, const fk::Dims& shape, const Measurement& y,
                          const FitTuneReport& r);

// The report as markdown (the pilots' settings, then each decision) and as
// JSON (the same numbers; decisions as autotune.json holds them).
std::string fit_autotune_md(const FitTuneReport& r);
std::string fit_autotune_json(const FitTuneReport& r);

}  // namespace nefi::tune
