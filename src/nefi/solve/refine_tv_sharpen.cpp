// The "tv_sharpen" refinement mode (refine.h): a free value per cell,
// started at the smooth fit, refitted under the problem's losses plus a
// strong isotropic total variation with a small smoothing eps. TV charges
// an edge by its jump times its area, not by its steepness, so the refit
// trades the smooth fit's ramps for steps wherever the data allow, while
// each region's value stays free (no staircase of levels).
#include <algorithm>

#include "fk/error.h"
#include "nefi/losses/regularizers.h"
#include "nefi/solve/refine.h"
#include "nefi/solve/refine_common.h"

namespace nefi {

RefineReport refine_tv_sharpen(const InverseProblem& problem, const fk::Tensor& smooth,
                               const RefineOptions& o, const SolverOptions& so) {
  using namespace refine_detail;
  const fk::Dims shape = problem.domain.shape();
  const std::vector<double> xs = refit_inputs(problem, smooth, o, "nefi::refine_tv_sharpen");
  RefineReport r;
  const double gap = start_phases(problem, smooth, xs, o, r);
  if (!(gap > 0)) return r;
  InverseProblem p = problem;
  const std::string primary = problem.field->primary();
  p.field = voxel_field(primary, shape, xs, o.floor);
  // eps in gradient units: tv_eps of a one-gap step across one cell.
  const std::vector<double> h = problem.domain.spacing();
  TVOptions tv;
  tv.eps = o.tv_eps * gap / *std::max_element(h.begin(), h.end());
  p.losses.add(tv_loss(primary, tv, "tv_sharpen"), o.tv_weight);
  const Result res = run_refit(std::move(p), o, so);
  r.refined = res.fields.at(primary).to(fk::DType::F64);
  const std::vector<double> u = r.refined.to_vector<double>();
  r.levels = class_means(u, r.thresholds);
  judge(problem, xs, u, o, r);
  return r;
}

}  // namespace nefi
