// The "voxels" refinement mode (refine.h): a free value per cell under the
// problem's losses plus the phases' perimeter.
#include <algorithm>
#include <cmath>
#include <limits>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/unary.h"
#include "nefi/losses/regularizers.h"
#include "nefi/solve/refine.h"
#include "nefi/solve/refine_common.h"

namespace nefi {
namespace {

// One value per cell, restarted at the smooth fit by reset_parameters;
// values below `floor` read as floor (the refit's value prior, e.g. p0 >= 0).
class VoxelField : public Field {
 public:
  VoxelField(std::string primary, const fk::Dims& shape, std::vector<double> x0, double floor)
      : shape_(shape), x0_(std::move(x0)), floor_(floor) {
    primary_ = std::move(primary);
    for (double& v : x0_) v = std::max(v, floor_);
    params_.add("u", shape_);
    params_.allocate(fk::DType::F32);
    reset_parameters(0);
  }
  FieldMap forward(const Domain& domain, double) override {
    FK_CHECK(domain.shape() == shape_, "nefi::refine_voxels", "the grid " + shape_.str(),
             domain.shape().str());
    const fk::Tensor u = params_.views()[0];
    return {{primary_, std::isfinite(floor_)
                           ? fk::clamp(u, floor_, std::numeric_limits<double>::infinity())
                           : u}};
  }
  void reset_parameters(uint64_t) override {
    fk::autograd::NoGradGuard ng;
    params_.raw(0).copy_(fk::from_vector(x0_, shape_));
    params_.flat().bump_version();
  }
  std::string kind() const override { return "voxels"; }
  // On a device through fk's ops (a solve's refit there).
  bool has_device_path() const override { return true; }
  void to(fk::Device d) override {
    fk::check_usable(d, "nefi::refine_voxels");
    params_.to(d);
  }
  // forward reads no progress: a captured step stays valid as it moves.
  bool retarget(double) override { return params_.flat().device().is_cuda(); }

 private:
  fk::Dims shape_;
  std::vector<double> x0_;
  double floor_;
};

}  // namespace

namespace refine_detail {
std::shared_ptr<Field> voxel_field(std::string primary, const fk::Dims& shape,
                                   std::vector<double> x0, double floor) {
  return std::make_shared<VoxelField>(std::move(primary), shape, std::move(x0), floor);
}
}  // namespace refine_detail

namespace {

class PerimeterLoss : public Loss {
 public:
  PerimeterLoss(std::string field, std::vector<double> t, double eps)
      : Loss("perimeter"), field_(std::move(field)), t_(std::move(t)), eps_(eps) {}
  fk::Tensor forward(const LossContext& ctx) const override {
    return phase_perimeter(ctx.field(field_), t_, eps_, ctx.domain->spacing());
  }

 private:
  std::string field_;
  std::vector<double> t_;
  double eps_;
};

}  // namespace

fk::Tensor phase_perimeter(const fk::Tensor& u, const std::vector<double>& t, double eps,
                           const std::vector<double>& h) {
  FK_CHECK(eps > 0 && std::isfinite(eps), "nefi::phase_perimeter", "a width eps > 0",
           fk::to_text(eps));
  FK_CHECK(!t.empty(), "nefi::phase_perimeter", "at least one threshold", "none");
  FK_CHECK(static_cast<int64_t>(h.size()) == u.dim(), "nefi::phase_perimeter",
           "one spacing per axis of u (" + fk::to_text(u.dim()) + ")", fk::to_text(h.size()));
  // |grad| of a unit step across one cell is 1/h; 1e-3 of that keeps the
  // norm smooth at flat cells without blunting the interfaces, and the
  // floor it puts under every cell's norm is taken off again (P = 0 on a
  // constant field).
  TVOptions tv;
  tv.eps = 1e-3 / *std::max_element(h.begin(), h.end());
  fk::Tensor sum;
  for (double tk : t) {
    const fk::Tensor area = total_variation(fk::sigmoid(fk::mul(fk::sub(u, tk), 1.0 / eps)), h, tv);
    sum = sum.defined() ? fk::add(sum, area) : area;
  }
  return fk::sub(sum, static_cast<double>(t.size()) * tv.eps);
}

namespace refine_detail {

RefineReport refit_per_cell(const InverseProblem& problem, const fk::Tensor& smooth,
                            const RefineOptions& o, const SolverOptions& so, const char* who,
                            const PenaltyAdder& add_penalty) {
  const fk::Dims shape = problem.domain.shape();
  const std::vector<double> xs = refit_inputs(problem, smooth, o, who);
  RefineReport r;
  const double gap = start_phases(problem, smooth, xs, o, r);
  if (!(gap > 0)) return r;
  InverseProblem p = problem;
  const std::string primary = problem.field->primary();
  p.field = voxel_field(primary, shape, xs, o.floor);
  add_penalty(p.losses, primary, gap, r);
  const Result res = run_refit(std::move(p), o, so, r);
  r.refined = res.fields.at(primary).to(fk::DType::F64);
  const std::vector<double> u = r.refined.to_vector<double>();
  r.levels = class_means(u, r.thresholds);
  judge(problem, xs, u, o, r);
  return r;
}

}  // namespace refine_detail

RefineReport refine_voxels(const InverseProblem& problem, const fk::Tensor& smooth,
                           const RefineOptions& o, const SolverOptions& so) {
  return refine_detail::refit_per_cell(
      problem, smooth, o, so, "nefi::refine_voxels",
      [&o](LossSet& losses, const std::string& primary, double gap, const RefineReport& r) {
        losses.add(std::make_shared<PerimeterLoss>(primary, r.thresholds, o.boundary_eps * gap),
                   o.boundary_weight);
      });
}

}  // namespace nefi
