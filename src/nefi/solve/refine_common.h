#pragma once
// What the refinement modes of refine.h share: the starting phases of
// the smooth field, the refit run, chi and the acceptance test.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nefi/solve/refine.h"

namespace nefi::refine_detail {

// Class means of v split at the thresholds (an empty class takes its
// threshold interval's midpoint, so the levels stay ordered).
std::vector<double> class_means(const std::vector<double>& v, const std::vector<double>& t);
// chi of `x` (the problem's field at the domain grid; see refine.h).
double chi(const InverseProblem& p, const fk::Tensor& x);
// chi of `x` and its spread over the noise (refine.h), from one apply of the
// operator. sigma is the standard error of chi as a (mask-weighted) mean of
// its per-datum terms r_i^2 / noise_std^2, sqrt(sum w_i^2 (t_i - chi)^2) /
// sum w_i. For a residual of Gaussian noise it is sqrt(2 / N); for counts
// (variance growing with the mean) it is larger, as chi's true spread is.
// 0 without a known noise level.
struct ChiStats {
  double chi = 0, sigma = 0;
};
ChiStats chi_stats(const InverseProblem& p, const fk::Tensor& x);
// Checks the options and the smooth field's shape against the problem's
// (`who` names the mode in the error); returns the smooth field's values.
std::vector<double> refit_inputs(const InverseProblem& problem, const fk::Tensor& smooth,
                                 const RefineOptions& o, const char* who);
// Fills r.thresholds, r.start_levels (Otsu or the given levels), r.chi_smooth
// and r.field = the smooth field; returns the smallest level gap (not > 0:
// r is a refusal, r.refined set: no level structure, or chi_smooth <=
// o.min_chi_smooth with a known noise level).
double start_phases(const InverseProblem& problem, const fk::Tensor& smooth,
                    const std::vector<double>& xs, const RefineOptions& o, RefineReport& r);
// One free value per cell, started at x0 (values below `floor` read as
// floor), restarted there by reset_parameters: the field of the voxels and
// tv_sharpen modes.
std::shared_ptr<Field> voxel_field(std::string primary, const fk::Dims& shape,
                                   std::vector<double> x0, double floor);
// The voxels and tv_sharpen modes: one free value per cell started at the
// smooth field, refitted under the problem's losses plus what `add_penalty`
// adds (given the losses, the primary field's name, the level gap and the
// starting phases), then judged.
using PenaltyAdder = std::function<void(LossSet&, const std::string&, double, const RefineReport&)>;
RefineReport refit_per_cell(const InverseProblem& problem, const fk::Tensor& smooth,
                            const RefineOptions& o, const SolverOptions& so, const char* who,
                            const PenaltyAdder& add_penalty);
// The refit: `p` (its field replaced) along one Adam stage of o.steps at o.lr;
// records its steps and graph replays in r.
Result run_refit(InverseProblem p, const RefineOptions& o, const SolverOptions& so,
                 RefineReport& r);
// Sets r.chi_refined, r.in_band (interfaces of `phases`, the per-cell value
// the thresholds split), r.support_kept and the verdict; r.refined must be set.
void judge(const InverseProblem& problem, const std::vector<double>& xs,
           const std::vector<double>& phases, const RefineOptions& o, RefineReport& r);

}  // namespace nefi::refine_detail
