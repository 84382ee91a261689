#pragma once
// The post-solve refinement stage as the instances run it (solve/refine.h):
// its config keys, and the call that refines a finished run and records
// what it did.
#include <functional>
#include <string>

#include "nefi/instances/instance.h"
#include "nefi/solve/refine.h"

namespace nefi {

// refine (bool, default `on`), refine_mode (default `mode`), refine_levels
// (0: auto), refine_max_levels, refine_levels_by, refine_steps, refine_lr, refine_eps_start,
// refine_eps_end, refine_chi_factor, refine_noise_sigmas, refine_min_chi_smooth,
// refine_band_fraction, refine_band_width, refine_support_share (default `support_share`),
// refine_boundary_weight, refine_boundary_eps, refine_tv_weight, refine_tv_eps,
// refine_well_weight, refine_phase_width.
void declare_refine_keys(Params& p, bool on, int64_t levels = 0,
                         const std::string& mode = "levelset", double support_share = 0);
// The options those keys give; checked (an error names the key).
RefineOptions refine_options_from(const Params& p);

// Refines out.reconstruction under `problem` (operator, measurement and
// losses at the domain grid) and records the metrics refine_accepted,
// refine_levels, refine_chi_smooth, refine_chi, refine_chi_sigma, refine_in_band,
// refine_support_kept, refine_refusal (the report's code: why it was
// refused, 0 when accepted) and, when auto picks the phases by chi,
// refine_chi_levels_<K> (each count's refit), and the field "refined"
// (the refined field whether or not it was accepted). Returns the field to
// score: the refined one when accepted, else the smooth reconstruction.
fk::Tensor refine_and_record(const InverseProblem& problem, const RefineOptions& options,
                             uint64_t seed, RunOutput& out);

// The refine stage of an instance's after_solve: refines out.reconstruction
// under `solved` (refine_and_record, seeded by out.seed) and scores the field
// it returns as refined_iou (the instance's IoU against the truth) and
// refined_psnr.
using IouOf = std::function<double(const fk::Tensor& x, const fk::Tensor& gt)>;
void refine_solved_output(const InverseProblem& solved, const RefineOptions& options,
                          const IouOf& iou_of, RunOutput& out);
// The IoU of the masks above `fraction` of each field's peak (nefi::iou).
IouOf iou_at_fraction(double fraction);
// The IoU of the masks above the truth's Otsu threshold (two-class
// multi_otsu of the truth's values; the reference's iou_tau "otsu").
IouOf iou_at_truth_otsu();

}  // namespace nefi
