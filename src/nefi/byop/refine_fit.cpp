#include "nefi/byop/refine_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "fk/error.h"

namespace nefi {

void check_refinable(const PriorSpec& pr) {
  const char* lost = pr.mass                 ? "conserved"
                     : pr.zero_mean          ? "zero_mean"
                     : !pr.symmetric.empty() ? "symmetric"
                     : pr.known_support      ? "known_support"
                                             : nullptr;
  FK_CHECK(lost == nullptr, "refine_edges",
           "a prior the refit can keep (it replaces the field's head, which holds "
           "conserved, zero_mean, symmetric and known_support exactly)",
           "'" + pr.str() + "' (" + std::string(lost ? lost : "") + ")");
}

RefineReport refine_fit(const AutoProblem& ap, const fk::Tensor& smooth, FitRefineOptions o,
                        RefineOptions* used) {
  constexpr const char* kWho = "refine_edges";
  FK_CHECK(ap.fields.size() == 1, kWho, "a problem of one field",
           fk::to_text(ap.fields.size()) + " fields");
  FK_CHECK(ap.operator_start.empty(), kWho,
           "a model without trainable parameters (the refit would train them too)",
           fk::to_text(ap.operator_start.size()) + " parameters");
  const PriorSpec& pr = ap.priors.front();
  check_refinable(pr);
  const fk::Tensor x = smooth.to(fk::DType::F64).contiguous();
  const std::vector<double> xs = x.to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i)
    FK_CHECK(std::isfinite(xs[i]), kWho, "a finite smooth field",
             "a non-finite value at cell " + fk::to_text(i));
  double lo = -std::numeric_limits<double>::infinity(), hi = -lo;
  if (pr.head == "nonnegative" || pr.head == "positive") lo = 0;
  if (pr.ranged()) lo = pr.lo, hi = pr.hi;
  RefineOptions& ro = o.refine;
  const bool floored = ro.mode != "phasefield";
  FK_CHECK(!o.floor || floored, kWho, "floor only with mode levelset, voxels or tv_sharpen",
           "floor with mode " + ro.mode);
  if (floored) ro.floor = o.floor.value_or(lo);
  const auto [xmn, xmx] = std::minmax_element(xs.begin(), xs.end());
  const double spread = xs.empty() ? 0.0 : *xmx - *xmn;
  if (o.lr)
    ro.lr = *o.lr;
  else if (spread > 0)
    ro.lr = 1e-2 * spread;
  if (used) *used = ro;
  SolverOptions so;
  so.seed = o.seed;
  so.device = o.device;
  RefineReport r = refine_edges(ap.problem, x, ro, so);
  if (r.accepted && r.refined.defined()) {  // the head's range, which the refit does not hold
    const std::vector<double> v = r.refined.to_vector<double>();
    const auto [mn, mx] = std::minmax_element(v.begin(), v.end());
    // The refits are f32: a value held at a bound comes back rounded to f32.
    double scale = std::max(1.0, spread);
    for (double b : {lo, hi})
      if (std::isfinite(b)) scale = std::max(scale, std::abs(b));
    const double slack = 1e-6 * scale;
    if (*mn < lo - slack || *mx > hi + slack) {
      r.accepted = false;
      r.refusal = kRefusalOutOfRange;
      r.reason = "the refit leaves the prior's range (" + pr.str() + "): values " +
                 std::to_string(*mn) + " .. " + std::to_string(*mx);
      r.field = x;
    }
  }
  return r;
}

}  // namespace nefi
