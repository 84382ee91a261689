// The "phasefield" refinement mode (refine.h): a per-cell phase s, started
// at the smooth fit mapped onto the phase indices, read as the field
//   u = c_0 + sum_{k>=1} (c_k - c_{k-1}) clamp(s - (k - 1), 0, 1)
// (levels c_k fitted with it), refitted under the problem's losses plus
// well_weight * progress * mean [ W(s) + w^2 |grad s|^2 ],
//   W(s) = sum_k q_k^2 (1 - q_k)^2 + relu(-s)^2 + relu(s - (K - 1))^2,
//   q_k = clamp(s - k, 0, 1),
// the double well u^2 (1 - u)^2 on each unit interval between two phases
// (zero on every integer phase) plus a pull back into [0, K - 1], and a
// gradient energy whose balance with the well sets the interface width
// w = phase_width cells (Modica-Mortola). The well ramps in with the
// refit's progress: the data place the interfaces first, the well then
// drives every cell into a phase.
#include <algorithm>
#include <cmath>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/ops/view.h"
#include "nefi/solve/refine.h"
#include "nefi/solve/refine_common.h"

namespace nefi {
namespace {

const char* const kPhase = "refine_phase";

// The phase and the levels c_k are the parameters; forward gives u (the
// problem's primary field) and s (kPhase, for the well). The phase is held
// as s times the smallest starting level gap, in the field's units like the
// levels: Adam moves each parameter by about lr a step, so the phase moves
// lr / gap indices a step, as far in the field as the levels move. Held in
// index units it moved gap times less than the levels: on deconvolution3d
// (gaps 0.07-0.09) at lr 1e-2 the levels ran 0.15 gap a step while the
// phases crept, and the refit ended short of the noise (chi 1.17 on the
// gallery's seed 1) with the levels raised past the cells still between
// two phases (docs/performance.md, session 12).
class PhaseField : public Field {
 public:
  PhaseField(std::string primary, const fk::Dims& shape, std::vector<double> s0,
             std::vector<double> levels0, double gap)
      : shape_(shape), s0_(std::move(s0)), c0_(std::move(levels0)), gap_(gap) {
    for (double& v : s0_) v *= gap_;
    primary_ = std::move(primary);
    params_.add("phase", shape_);
    params_.add("levels", {static_cast<int64_t>(c0_.size())});
    params_.allocate(fk::DType::F32);
    reset_parameters(0);
  }
  FieldMap forward(const Domain& domain, double) override {
    FK_CHECK(domain.shape() == shape_, "nefi::refine_phasefield", "the grid " + shape_.str(),
             domain.shape().str());
    const std::vector<fk::Tensor> v = params_.views();
    const fk::Tensor s = fk::mul(v[0], 1.0 / gap_);
    const fk::Tensor& c = v[1];
    fk::Tensor u = fk::mul(fk::full(shape_, 1.0, {s.dtype(), s.device()}), c.select(0, 0));
    for (size_t k = 1; k < c0_.size(); ++k) {
      const fk::Tensor q = fk::clamp(fk::sub(s, static_cast<double>(k - 1)), 0.0, 1.0);
      u = fk::add(u, fk::mul(q, fk::sub(c.select(0, k), c.select(0, k - 1))));
    }
    return {{primary_, u}, {kPhase, s}};
  }
  void reset_parameters(uint64_t) override {
    fk::autograd::NoGradGuard ng;
    params_.raw(0).copy_(fk::from_vector(s0_, shape_));
    params_.raw(1).copy_(fk::from_vector(c0_, {static_cast<int64_t>(c0_.size())}));
    params_.flat().bump_version();
  }
  std::string kind() const override { return "phasefield"; }
  // On a device through fk's ops (a solve's refit there).
  bool has_device_path() const override { return true; }
  void to(fk::Device d) override {
    fk::check_usable(d, "nefi::refine_phasefield");
    params_.to(d);
  }
  // forward reads no progress (the energy's weight does: PhaseEnergyLoss's
  // reads_progress makes those steps capture anew).
  bool retarget(double) override { return params_.flat().device().is_cuda(); }

 private:
  fk::Dims shape_;
  std::vector<double> s0_, c0_;
  double gap_;
};

class PhaseEnergyLoss : public Loss {
 public:
  PhaseEnergyLoss(int phases, double width) : Loss("phase_energy"), K_(phases), w_(width) {}
  fk::Tensor forward(const LossContext& ctx) const override {
    const fk::Tensor e = phase_energy(ctx.field(kPhase), K_, w_, ctx.domain->spacing());
    return fk::mul(e, std::clamp(ctx.progress, 0.0, 1.0));
  }
  bool reads_progress() const override { return true; }

 private:
  int K_;
  double w_;
};

// The smooth value's position between the starting levels as a phase
// index: linear between c_{k-1} and c_k, clamped to [0, K - 1].
std::vector<double> phase_of(const std::vector<double>& x, const std::vector<double>& c) {
  std::vector<double> s(x.size());
  const auto K = static_cast<int64_t>(c.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t k = std::clamp<int64_t>(std::upper_bound(c.begin(), c.end(), x[i]) - c.begin(), 1,
                                          K - 1);  // c[k-1] <= x < c[k]
    s[i] = std::clamp(static_cast<double>(k - 1) + (x[i] - c[k - 1]) / (c[k] - c[k - 1]), 0.0,
                      static_cast<double>(K - 1));
  }
  return s;
}

}  // namespace

fk::Tensor phase_energy(const fk::Tensor& s, int phases, double width,
                        const std::vector<double>& h) {
  FK_CHECK(phases >= 2, "nefi::phase_energy", "at least 2 phases", fk::to_text(phases));
  FK_CHECK(width >= 0 && std::isfinite(width), "nefi::phase_energy", "a width >= 0 (cells)",
           fk::to_text(width));
  FK_CHECK(static_cast<int64_t>(h.size()) == s.dim(), "nefi::phase_energy",
           "one spacing per axis of s (" + fk::to_text(s.dim()) + ")", fk::to_text(h.size()));
  fk::Tensor w =
      fk::add(fk::square(fk::relu(fk::neg(s))), fk::square(fk::relu(fk::sub(s, phases - 1.0))));
  for (int k = 0; k + 1 < phases; ++k) {
    const fk::Tensor q = fk::clamp(fk::sub(s, static_cast<double>(k)), 0.0, 1.0);
    w = fk::add(w, fk::mul(fk::square(q), fk::square(fk::add(fk::neg(q), 1.0))));
  }
  fk::Tensor e = fk::mean(w);
  const double hmax = *std::max_element(h.begin(), h.end());
  const double cells = static_cast<double>(s.numel());
  for (int64_t a = 0; a < s.dim(); ++a) {
    const int64_t n = s.shape()[a];
    if (n < 2) continue;
    const fk::Tensor d = fk::mul(fk::sub(s.narrow(a, 1, n - 1), s.narrow(a, 0, n - 1)), 1.0 / h[a]);
    // sum over the differences / all cells: the last cell's difference is 0.
    const double share = static_cast<double>(d.numel()) / cells;
    e = fk::add(e, fk::mul(fk::mean(fk::mul(d, d)), width * width * hmax * hmax * share));
  }
  return e;
}

RefineReport refine_phasefield(const InverseProblem& problem, const fk::Tensor& smooth,
                               const RefineOptions& o, const SolverOptions& so) {
  using namespace refine_detail;
  const fk::Dims shape = problem.domain.shape();
  const std::vector<double> xs = refit_inputs(problem, smooth, o, "nefi::refine_phasefield");
  RefineReport r;
  const double gap = start_phases(problem, smooth, xs, o, r);
  if (!(gap > 0)) return r;
  InverseProblem p = problem;
  const std::string primary = problem.field->primary();
  auto field = std::make_shared<PhaseField>(primary, shape, phase_of(xs, r.start_levels),
                                            r.start_levels, gap);
  p.field = field;
  p.losses.add(
      std::make_shared<PhaseEnergyLoss>(static_cast<int>(r.start_levels.size()), o.phase_width),
      o.well_weight);
  const Result res = run_refit(std::move(p), o, so, r);
  r.refined = res.fields.at(primary).to(fk::DType::F64);
  r.levels = field->params().raw(1).to_vector<double>();
  judge(problem, xs, r.refined.to_vector<double>(), o, r);
  return r;
}

}  // namespace nefi
