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
  return refine_detail::refit_per_cell(
      problem, smooth, o, so, "nefi::refine_tv_sharpen",
      [&](LossSet& losses, const std::string& primary, double gap, const RefineReport&) {
        // eps in gradient units: tv_eps of a one-gap step across one cell.
        const std::vector<double> h = problem.domain.spacing();
        TVOptions tv;
        tv.eps = o.tv_eps * gap / *std::max_element(h.begin(), h.end());
        losses.add(tv_loss(primary, tv, "tv_sharpen"), o.tv_weight);
      });
}

}  // namespace nefi
