#include "nefi/instances/refine_stage.h"

#include <algorithm>
#include <cmath>

#include "fk/device.h"
#include "fk/error.h"
#include "nefi/solve/metrics.h"

namespace nefi {

void declare_refine_keys(Params& p, bool on, int64_t levels, const std::string& mode,
                         double support_share) {
  const RefineOptions d;
  p.declare("refine", on, "run the edge refinement after the solve");
  p.declare("refine_mode", mode,
            "refinement: levelset (K-level staircase) | voxels | tv_sharpen | phasefield");
  p.declare("refine_levels", levels, "refinement phases (0: auto by multi-level Otsu)");
  p.declare("refine_max_levels", int64_t{d.max_levels}, "refinement: most phases auto picks");
  p.declare("refine_levels_by", d.levels_by,
            "refinement: how auto picks the phases: separation (histogram) | chi (a refit per "
            "count, the lowest accepted chi)");
  p.declare("refine_steps", int64_t{d.steps}, "refinement: Adam steps");
  p.declare("refine_lr", d.lr, "refinement: Adam learning rate, in the field's units (every mode)");
  p.declare("refine_eps_start", d.eps_start, "refinement: starting interface width (level gaps)");
  p.declare("refine_eps_end", d.eps_end, "refinement: final interface width (level gaps)");
  p.declare("refine_chi_factor", d.chi_factor, "refinement: accept chi <= this max(chi_smooth, 1)");
  p.declare("refine_noise_sigmas", d.noise_sigmas,
            "refinement: refuse a refit that fits the data this many sigma of chi closer than "
            "the noise level allows, from a smooth fit at the noise level (0: off)");
  p.declare("refine_min_chi_smooth", d.min_chi_smooth,
            "refinement: no refit when the smooth fit's chi <= this (0: off)");
  p.declare("refine_band_fraction", d.band_fraction,
            "refinement: share of interfaces required in the smooth transition band");
  p.declare("refine_band_width", int64_t{d.band_width},
            "refinement: cells the transition band is grown by");
  p.declare(
      "refine_support_share", support_share,
      "refinement: share of the smooth half-max support the refined field must keep (0: off)");
  p.declare("refine_boundary_weight", d.boundary_weight,
            "refinement (voxels): weight of the phases' perimeter");
  p.declare("refine_boundary_eps", d.boundary_eps,
            "refinement (voxels): interface width of the perimeter (level gaps)");
  p.declare("refine_tv_weight", d.tv_weight, "refinement (tv_sharpen): weight of the TV");
  p.declare("refine_tv_eps", d.tv_eps,
            "refinement (tv_sharpen): the TV's smoothing (level gaps per cell)");
  p.declare("refine_well_weight", d.well_weight,
            "refinement (phasefield): weight of the double well + gradient energy");
  p.declare("refine_phase_width", d.phase_width,
            "refinement (phasefield): interface width (cells)");
}

RefineOptions refine_options_from(const Params& p) {
  RefineOptions o;
  o.mode = p.choice("refine_mode", {"levelset", "voxels", "tv_sharpen", "phasefield"});
  o.levels_by = p.choice("refine_levels_by", {"separation", "chi"});
  auto integer = [&](const char* key, int64_t lo, int64_t hi) {
    const int64_t v = p.i(key);
    FK_CHECK(v >= lo && v <= hi, std::string("config key '") + key + "'",
             "an integer in [" + fk::to_text(lo) + ", " + fk::to_text(hi) + "]", fk::to_text(v));
    return static_cast<int>(v);
  };
  o.levels = integer("refine_levels", 0, 8);
  FK_CHECK(o.levels != 1, "config key 'refine_levels'", "0 (auto) or a phase count in [2, 8]", "1");
  o.max_levels = integer("refine_max_levels", 2, 8);
  o.steps = integer("refine_steps", 1, 1000000);
  o.band_width = integer("refine_band_width", 0, 64);
  auto positive = [&](const char* key) {
    const double v = p.d(key);
    FK_CHECK(v > 0, std::string("config key '") + key + "'", "a value > 0", Params::render(v));
    return v;
  };
  o.lr = positive("refine_lr");
  o.eps_start = positive("refine_eps_start");
  o.eps_end = positive("refine_eps_end");
  o.boundary_eps = positive("refine_boundary_eps");
  o.tv_eps = positive("refine_tv_eps");
  auto non_negative = [&](const char* key, const char* what) {
    const double v = p.d(key);
    FK_CHECK(v >= 0, std::string("config key '") + key + "'", what, Params::render(v));
    return v;
  };
  o.tv_weight = non_negative("refine_tv_weight", "a weight >= 0");
  o.well_weight = non_negative("refine_well_weight", "a weight >= 0");
  o.phase_width = non_negative("refine_phase_width", "a width >= 0 (cells)");
  o.boundary_weight = p.d("refine_boundary_weight");
  FK_CHECK(o.boundary_weight >= 0, "config key 'refine_boundary_weight'", "a weight >= 0",
           Params::render(o.boundary_weight));
  FK_CHECK(o.eps_end <= o.eps_start, "config key 'refine_eps_end'",
           "a width <= refine_eps_start (" + Params::render(o.eps_start) + ")",
           Params::render(o.eps_end));
  o.min_chi_smooth = p.d("refine_min_chi_smooth");
  FK_CHECK(o.min_chi_smooth >= 0, "config key 'refine_min_chi_smooth'", "a chi >= 0 (0: off)",
           Params::render(o.min_chi_smooth));
  o.noise_sigmas = p.d("refine_noise_sigmas");
  FK_CHECK(o.noise_sigmas >= 0 && std::isfinite(o.noise_sigmas), "config key 'refine_noise_sigmas'",
           "a count of standard deviations >= 0 (0: off)", Params::render(o.noise_sigmas));
  o.chi_factor = p.d("refine_chi_factor");
  FK_CHECK(o.chi_factor >= 1, "config key 'refine_chi_factor'", "a factor >= 1",
           Params::render(o.chi_factor));
  o.band_fraction = p.d("refine_band_fraction");
  FK_CHECK(o.band_fraction >= 0 && o.band_fraction <= 1, "config key 'refine_band_fraction'",
           "a fraction in [0, 1]", Params::render(o.band_fraction));
  o.support_share = p.d("refine_support_share");
  FK_CHECK(o.support_share >= 0 && o.support_share <= 1, "config key 'refine_support_share'",
           "a fraction in [0, 1] (0: off)", Params::render(o.support_share));
  return o;
}

fk::Tensor refine_and_record(const InverseProblem& problem, const RefineOptions& given,
                             uint64_t seed, RunOutput& out) {
  RefineOptions options = given;
  // A capped run (--smoke-steps) caps each refit too: 400-900 refit steps a
  // level count took a 2-step run half a minute.
  if (out.step_cap > 0) options.steps = std::min(options.steps, out.step_cap);
  SolverOptions so;
  so.seed = seed;
  // The refit trains where the solve did (a solve on a device had a model
  // with a device path; the refits' fields have one).
  if (!out.result.device.empty()) so.device = fk::parse_device(out.result.device);
  const RefineReport r = refine_edges(problem, out.reconstruction, options, so);
  out.metrics["refine_accepted"] = r.accepted ? 1.0 : 0.0;
  out.metrics["refine_levels"] = static_cast<double>(r.start_levels.size());
  out.metrics["refine_chi_smooth"] = r.chi_smooth;
  out.metrics["refine_chi"] = r.chi_refined;
  out.metrics["refine_chi_sigma"] = r.chi_sigma;
  out.metrics["refine_in_band"] = r.in_band;
  out.metrics["refine_support_kept"] = r.support_kept;
  out.metrics["refine_refusal"] = r.refusal;
  out.metrics["refine_refit_steps"] = r.refit_steps;  // over every phase count tried
  for (size_t i = 0; i < r.chi_by_levels.size(); ++i)
    out.metrics["refine_chi_levels_" + std::to_string(i + 2)] = r.chi_by_levels[i];
  out.result.fields["refined"] = r.refined;
  return r.field;
}

void refine_solved_output(const InverseProblem& solved, const RefineOptions& options,
                          const IouOf& iou_of, RunOutput& out) {
  const fk::Tensor x = refine_and_record(solved, options, out.seed, out);
  if (!out.gt.defined()) return;  // measured data: nothing to score against
  out.metrics["refined_iou"] = iou_of(x, out.gt);
  out.metrics["refined_psnr"] = psnr(x, out.gt);
}

IouOf iou_at_fraction(double fraction) {
  return [fraction](const fk::Tensor& x, const fk::Tensor& gt) { return iou(x, gt, fraction); };
}

IouOf iou_at_truth_otsu() {
  return [](const fk::Tensor& x, const fk::Tensor& gt) {
    return iou_above(x, gt, multi_otsu(gt.to_vector<double>(), 2)[0]);
  };
}

}  // namespace nefi
