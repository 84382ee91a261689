#include "nefi/solve/refine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/unary.h"
#include "nefi/solve/refine_common.h"

namespace nefi {
namespace {

// The K-phase field over one level set (refine.h); phi and the levels are
// its parameters, restarted from the smooth fit by reset_parameters.
class LevelSetField : public Field {
 public:
  LevelSetField(std::string primary, const fk::Dims& shape, std::vector<double> phi0,
                std::vector<double> thresholds, std::vector<double> levels0, double eps_start,
                double eps_end, double floor)
      : shape_(shape),
        phi0_(std::move(phi0)),
        t_(std::move(thresholds)),
        c0_(std::move(levels0)),
        eps_start_(eps_start),
        eps_end_(eps_end),
        floor_(floor) {
    for (double& c : c0_) c = std::max(c, floor_);
    primary_ = std::move(primary);
    params_.add("phi", shape_);
    params_.add("levels", {static_cast<int64_t>(c0_.size())});
    params_.allocate(fk::DType::F32);
    reset_parameters(0);
  }
  FieldMap forward(const Domain& domain, double progress) override {
    FK_CHECK(domain.shape() == shape_, "nefi::refine_levelset", "the grid " + shape_.str(),
             domain.shape().str());
    const double eps = eps_start_ * std::pow(eps_end_ / eps_start_, std::clamp(progress, 0.0, 1.0));
    const std::vector<fk::Tensor> v = params_.views();
    const fk::Tensor& phi = v[0];
    // Levels below `floor` read as floor: u lies between its levels.
    const fk::Tensor c = std::isfinite(floor_)
                             ? fk::clamp(v[1], floor_, std::numeric_limits<double>::infinity())
                             : v[1];
    fk::Tensor u = fk::mul(fk::full(shape_, 1.0, {phi.dtype(), phi.device()}), c.select(0, 0));
    for (size_t k = 0; k < t_.size(); ++k) {
      const fk::Tensor step = fk::sigmoid(fk::mul(fk::sub(phi, t_[k]), 1.0 / eps));
      u = fk::add(u, fk::mul(step, fk::sub(c.select(0, k + 1), c.select(0, k))));
    }
    return {{primary_, u}};
  }
  void reset_parameters(uint64_t) override {
    fk::autograd::NoGradGuard ng;
    params_.raw(0).copy_(fk::from_vector(phi0_, shape_));
    params_.raw(1).copy_(fk::from_vector(c0_, {static_cast<int64_t>(c0_.size())}));
    params_.flat().bump_version();
  }
  std::string kind() const override { return "levelset"; }
  // On a device through fk's ops (a solve's refit there); the width is a
  // number of each forward, so its steps are eager while it anneals.
  bool has_device_path() const override { return true; }
  void to(fk::Device d) override {
    fk::check_usable(d, "nefi::refine_levelset");
    params_.to(d);
  }
  // The levels as the field reads them (held at the floor).
  std::vector<double> levels() const {
    std::vector<double> c = params_.raw(1).to_vector<double>();
    for (double& e : c) e = std::max(e, floor_);
    return c;
  }

 private:
  fk::Dims shape_;
  std::vector<double> phi0_, t_, c0_;
  double eps_start_, eps_end_, floor_;
};

// The threshold above which the share (mean(v) − lo)/(hi − lo) of v lies
// (clamped to [0, 1]; midway between the neighbouring sorted values).
double mass_matched_threshold(std::vector<double> v, double lo, double hi) {
  double mean = 0;
  for (double x : v) mean += x / static_cast<double>(v.size());
  const double f = std::clamp((mean - lo) / (hi - lo), 0.0, 1.0);
  const auto n = static_cast<int64_t>(v.size());
  const int64_t m = std::clamp<int64_t>(std::llround(f * static_cast<double>(n)), 1, n - 1);
  std::sort(v.begin(), v.end(), std::greater<>());
  return 0.5 * (v[m - 1] + v[m]);
}

// Share of the refined interface cells (a cell whose phase index differs
// from a face neighbour's across threshold k) inside the smooth field's
// band for k: cells with a smooth value strictly between the starting
// levels k-1 and k, grown by `width` face-neighbour steps.
double interface_in_band(const std::vector<double>& smooth, const std::vector<double>& phi,
                         const fk::Dims& shape, const std::vector<double>& t,
                         const std::vector<double>& c0, int width) {
  const int64_t n = shape.numel();
  std::vector<int64_t> stride(shape.size(), 1);
  for (int a = static_cast<int>(shape.size()) - 2; a >= 0; --a)
    stride[a] = stride[a + 1] * shape[a + 1];
  auto neighbours = [&](int64_t i, auto&& fn) {
    for (int a = 0; a < shape.size(); ++a) {
      const int64_t ia = (i / stride[a]) % shape[a];
      if (ia > 0) fn(i - stride[a]);
      if (ia + 1 < shape[a]) fn(i + stride[a]);
    }
  };
  int64_t total = 0, inside = 0;
  for (size_t k = 0; k < t.size(); ++k) {
    std::vector<char> band(n, 0);
    for (int64_t i = 0; i < n; ++i) band[i] = smooth[i] > c0[k] && smooth[i] < c0[k + 1];
    for (int r = 0; r < width; ++r) {  // grow by one face neighbour per pass
      std::vector<char> grown = band;
      for (int64_t i = 0; i < n; ++i)
        if (band[i]) neighbours(i, [&](int64_t j) { grown[j] = 1; });
      band.swap(grown);
    }
    for (int64_t i = 0; i < n; ++i) {
      bool edge = false;
      neighbours(i, [&](int64_t j) { edge = edge || ((phi[i] >= t[k]) != (phi[j] >= t[k])); });
      if (!edge) continue;
      ++total;
      inside += band[i] != 0;
    }
  }
  return total ? static_cast<double>(inside) / static_cast<double>(total) : 1.0;
}

// The share of the cells above half the smooth peak that `refined` keeps
// above that level (1 when the smooth peak is not > 0: no support to keep).
double half_max_support_kept(const std::vector<double>& smooth,
                             const std::vector<double>& refined) {
  const double level = 0.5 * *std::max_element(smooth.begin(), smooth.end());
  if (!(level > 0)) return 1.0;
  int64_t support = 0, kept = 0;
  for (size_t i = 0; i < smooth.size(); ++i) {
    support += smooth[i] > level;
    kept += smooth[i] > level && refined[i] > level;
  }
  return static_cast<double>(kept) / static_cast<double>(support);
}

}  // namespace

namespace refine_detail {

// Class means of v split at the thresholds (an empty class takes its
// threshold interval's midpoint, so the levels stay ordered).
std::vector<double> class_means(const std::vector<double>& v, const std::vector<double>& t) {
  const size_t K = t.size() + 1;
  std::vector<double> sum(K, 0.0), cnt(K, 0.0);
  for (double x : v) {
    const size_t k = std::upper_bound(t.begin(), t.end(), x) - t.begin();
    sum[k] += x, cnt[k] += 1;
  }
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  std::vector<double> m(K);
  for (size_t k = 0; k < K; ++k) {
    const double a = k ? t[k - 1] : *lo, b = k + 1 < K ? t[k] : *hi;
    m[k] = cnt[k] > 0 ? sum[k] / cnt[k] : (a + b) / 2;
  }
  return m;
}

namespace {

// The per-datum terms of chi for `x` (squared residual / noise_std^2, or
// the plain squared residual without a known noise level) and their
// weights (the mask's, or 1).
struct ChiTerms {
  std::vector<double> t, w;
};

ChiTerms chi_terms(const InverseProblem& p, const fk::Tensor& x) {
  fk::autograd::NoGradGuard ng;
  const fk::Tensor pred = p.op->apply(x.to(p.measurement.data.dtype()));
  FK_CHECK(pred.shape() == p.measurement.data.shape(), "nefi::refine",
           "a prediction of the measurement's shape " + p.measurement.data.shape().str(),
           pred.shape().str());
  const auto a = pred.to_vector<double>(), y = p.measurement.data.to_vector<double>();
  ChiTerms c;
  c.w = p.measurement.mask.defined() ? p.measurement.mask.to_vector<double>()
                                     : std::vector<double>(a.size(), 1.0);
  const double s = p.measurement.noise_std;
  const double scale = s > 0 ? 1.0 / (s * s) : 1.0;
  c.t.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) c.t.push_back((a[i] - y[i]) * (a[i] - y[i]) * scale);
  return c;
}

// The weighted mean of the terms and its standard error.
std::pair<double, double> mean_and_error(const ChiTerms& c) {
  double sw = 0, m = 0;
  for (size_t i = 0; i < c.t.size(); ++i) sw += c.w[i], m += c.w[i] * c.t[i];
  if (!(sw > 0)) return {0.0, 0.0};
  m /= sw;
  double v = 0;
  for (size_t i = 0; i < c.t.size(); ++i) v += c.w[i] * c.w[i] * (c.t[i] - m) * (c.t[i] - m);
  return {m, std::sqrt(v) / sw};
}

}  // namespace

// chi of `x` (the problem's field at the domain grid; see refine.h).
double chi(const InverseProblem& p, const fk::Tensor& x) {
  return mean_and_error(chi_terms(p, x)).first;
}

ChiStats chi_stats(const InverseProblem& p, const fk::Tensor& x) {
  const auto [chi, error] = mean_and_error(chi_terms(p, x));
  return {chi, p.measurement.noise_std > 0 ? error : 0.0};
}

std::vector<double> refit_inputs(const InverseProblem& problem, const fk::Tensor& smooth,
                                 const RefineOptions& o, const char* who) {
  o.validate();
  const fk::Dims shape = problem.domain.shape();
  FK_CHECK(smooth.shape() == shape, who, "a smooth field of shape " + shape.str(),
           smooth.shape().str());
  std::vector<double> xs = smooth.to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i)  // (multi_otsu bins them by value)
    FK_CHECK(std::isfinite(xs[i]), who, "a finite smooth field",
             "a non-finite value at cell " + fk::to_text(i));
  return xs;
}

double start_phases(const InverseProblem& problem, const fk::Tensor& smooth,
                    const std::vector<double>& xs, const RefineOptions& o, RefineReport& r) {
  int K = o.levels;
  if (K == 0)
    for (K = 2; K < o.max_levels; ++K)
      if (class_separation(xs, multi_otsu(xs, K)) >= o.auto_separation) break;
  if (o.start_levels.empty()) {
    r.thresholds = multi_otsu(xs, K);
    r.start_levels = class_means(xs, r.thresholds);
  } else {
    r.start_levels = o.start_levels;
    r.thresholds = {mass_matched_threshold(xs, o.start_levels[0], o.start_levels[1])};
  }
  double gap = std::numeric_limits<double>::infinity();
  for (int k = 1; k < K; ++k) gap = std::min(gap, r.start_levels[k] - r.start_levels[k - 1]);
  const ChiStats smooth_fit = chi_stats(problem, smooth);  // one apply of the operator
  r.chi_smooth = smooth_fit.chi;
  r.chi_sigma = smooth_fit.sigma;
  r.field = smooth.to(fk::DType::F64);
  if (!(gap > 0)) {
    r.reason = "the smooth field has no level structure";
    r.refusal = 1;
    r.refined = r.field;
  } else if (problem.measurement.noise_std > 0 && r.chi_smooth <= o.min_chi_smooth) {
    r.reason =
        "the smooth fit is at the noise level already (chi " + std::to_string(r.chi_smooth) + ")";
    r.refusal = 1;
    r.refined = r.field;
    return 0.0;
  }
  return gap;
}

Result run_refit(InverseProblem p, const RefineOptions& o, const SolverOptions& so,
                 RefineReport& r) {
  Curriculum cur = Curriculum::single(p.domain.shape(), o.steps, o.lr);
  cur.stages[0].name = "refine";
  cur.optim.optimizer = "adam";
  cur.optim.weight_decay = 0;
  cur.optim.grad_clip = 0;
  SolverOptions opts;
  opts.seed = so.seed;
  opts.device = so.device;  // the refit trains where the solve did
  opts.cuda_graph = so.cuda_graph;
  opts.nan_guard = so.nan_guard;
  opts.refuse_non_finite = false;  // judge() refuses a refit that diverged (refusal 7)
  opts.callbacks = so.callbacks;   // a caller may watch the refit (its data loss per step)
  opts.on_stage_start = so.on_stage_start;
  Result res = Solver(std::move(p), cur, opts).run();
  for (const StageResult& st : res.stages) {
    r.refit_steps += st.steps;
    r.refit_graph_steps += st.graph_steps;
  }
  return res;
}

void judge(const InverseProblem& problem, const std::vector<double>& xs,
           const std::vector<double>& phases, const RefineOptions& o, RefineReport& r) {
  r.chi_refined = chi(problem, r.refined);
  // A refit whose last update diverged (the refit's solve hands it back):
  // NaN passes none of the comparisons below, so it is refused here.
  const std::vector<double> refined = r.refined.to_vector<double>();
  if (!std::isfinite(r.chi_refined) ||
      std::any_of(refined.begin(), refined.end(), [](double v) { return !std::isfinite(v); })) {
    r.reason = "the refit diverged (non-finite values)";
    r.refusal = 7;
    return;
  }
  r.in_band = interface_in_band(xs, phases, problem.domain.shape(), r.thresholds, r.start_levels,
                                o.band_width);
  const double bound =
      o.chi_factor *
      (problem.measurement.noise_std > 0 ? std::max(r.chi_smooth, 1.0) : r.chi_smooth);
  r.support_kept = half_max_support_kept(xs, r.refined.to_vector<double>());
  // The noise test (refine.h): both bounds in units of chi's spread at the noise level.
  const double margin = o.noise_sigmas * r.chi_sigma;
  const bool smooth_at_noise = r.chi_sigma > 0 && r.chi_smooth <= 1.0 + margin;
  const double noise_floor = std::min(r.chi_smooth, 1.0) - margin;
  if (r.chi_refined > bound) {
    r.reason = "chi " + std::to_string(r.chi_refined) + " > " + std::to_string(bound);
    r.refusal = 2;
  } else if (o.noise_sigmas > 0 && smooth_at_noise && r.chi_refined < noise_floor) {
    r.reason = "the refit fits the noise: chi " + std::to_string(r.chi_refined) + " < " +
               std::to_string(noise_floor) + " from a smooth fit at the noise level (chi " +
               std::to_string(r.chi_smooth) + ", sigma " + std::to_string(r.chi_sigma) + ")";
    r.refusal = 5;
  } else if (r.support_kept < o.support_share) {
    r.reason = "the support collapsed: the refined field keeps " + std::to_string(r.support_kept) +
               " of the smooth field's half-max support";
    r.refusal = 3;
  } else if (r.in_band < o.band_fraction) {
    r.reason = "interfaces outside the transition band (" + std::to_string(r.in_band) + ")";
    r.refusal = 4;
  } else {
    r.accepted = true;
    r.field = r.refined;
  }
}

}  // namespace refine_detail

void RefineOptions::validate() const {
  FK_CHECK(mode == "levelset" || mode == "voxels" || mode == "tv_sharpen" || mode == "phasefield",
           "refine option 'mode'", "levelset, voxels, tv_sharpen or phasefield", "'" + mode + "'");
  FK_CHECK(tv_weight >= 0 && std::isfinite(tv_weight), "refine option 'tv_weight'", "a weight >= 0",
           fk::to_text(tv_weight));
  FK_CHECK(tv_eps > 0 && std::isfinite(tv_eps), "refine option 'tv_eps'",
           "a smoothing > 0 (level gaps per cell)", fk::to_text(tv_eps));
  FK_CHECK(well_weight >= 0 && std::isfinite(well_weight), "refine option 'well_weight'",
           "a weight >= 0", fk::to_text(well_weight));
  FK_CHECK(phase_width >= 0 && std::isfinite(phase_width), "refine option 'phase_width'",
           "a width >= 0 (cells)", fk::to_text(phase_width));
  FK_CHECK(boundary_weight >= 0 && std::isfinite(boundary_weight),
           "refine option 'boundary_weight'", "a weight >= 0", fk::to_text(boundary_weight));
  FK_CHECK(boundary_eps > 0 && std::isfinite(boundary_eps), "refine option 'boundary_eps'",
           "a width > 0 (level gaps)", fk::to_text(boundary_eps));
  FK_CHECK(min_chi_smooth >= 0 && std::isfinite(min_chi_smooth), "refine option 'min_chi_smooth'",
           "a chi >= 0 (0: off)", fk::to_text(min_chi_smooth));
  FK_CHECK(noise_sigmas >= 0 && std::isfinite(noise_sigmas), "refine option 'noise_sigmas'",
           "a count of standard deviations >= 0 (0: off)", fk::to_text(noise_sigmas));
  FK_CHECK(!std::isnan(floor) && floor < std::numeric_limits<double>::infinity(),
           "refine option 'floor'", "a lower bound (or -inf)", fk::to_text(floor));
  FK_CHECK(levels == 0 || (levels >= 2 && levels <= 8), "refine option 'levels'",
           "0 (auto) or a phase count in [2, 8]", fk::to_text(levels));
  FK_CHECK(levels_by == "separation" || levels_by == "chi", "refine option 'levels_by'",
           "separation or chi", "'" + levels_by + "'");
  FK_CHECK(max_levels >= 2 && max_levels <= 8, "refine option 'max_levels'", "in [2, 8]",
           fk::to_text(max_levels));
  std::string given;  // "[1, 1]"
  for (double v : start_levels) given += (given.empty() ? "[" : ", ") + fmt::format("{:g}", v);
  given += given.empty() ? "none" : "]";
  FK_CHECK(start_levels.empty() || static_cast<int>(start_levels.size()) == levels,
           "refine option 'start_levels'",
           "none, or one value for each of the " + fk::to_text(levels) + " phases", given);
  FK_CHECK(std::adjacent_find(start_levels.begin(), start_levels.end(), std::greater_equal<>()) ==
               start_levels.end(),
           "refine option 'start_levels'", "strictly ascending values", given);
  FK_CHECK(auto_separation > 0 && auto_separation <= 1, "refine option 'auto_separation'",
           "a fraction in (0, 1]", fk::to_text(auto_separation));
  FK_CHECK(steps >= 1 && steps <= 1000000, "refine option 'steps'", "a step count in [1, 1e6]",
           fk::to_text(steps));
  FK_CHECK(lr > 0 && std::isfinite(lr), "refine option 'lr'", "a finite learning rate > 0",
           fk::to_text(lr));
  FK_CHECK(eps_start > 0 && eps_end > 0 && eps_end <= eps_start,
           "refine options 'eps_start', 'eps_end'", "0 < eps_end <= eps_start",
           fk::to_text(eps_start) + ", " + fk::to_text(eps_end));
  FK_CHECK(chi_factor >= 1, "refine option 'chi_factor'", ">= 1", fk::to_text(chi_factor));
  FK_CHECK(band_width >= 0 && band_width <= 64, "refine option 'band_width'", "cells in [0, 64]",
           fk::to_text(band_width));
  FK_CHECK(band_fraction >= 0 && band_fraction <= 1, "refine option 'band_fraction'",
           "a fraction in [0, 1]", fk::to_text(band_fraction));
  FK_CHECK(support_share >= 0 && support_share <= 1, "refine option 'support_share'",
           "a fraction in [0, 1] (0: off)", fk::to_text(support_share));
}

std::vector<double> multi_otsu(const std::vector<double>& v, int classes, int bins) {
  FK_CHECK(!v.empty(), "nefi::multi_otsu", "values", "none");
  FK_CHECK(classes >= 2 && classes <= bins && bins >= 2, "nefi::multi_otsu", "2 <= classes <= bins",
           fk::to_text(classes) + " classes, " + fk::to_text(bins) + " bins");
  const auto [lo_it, hi_it] = std::minmax_element(v.begin(), v.end());
  const double lo = *lo_it, hi = *hi_it, w = (hi - lo) / bins;
  if (!(w > 0)) return std::vector<double>(classes - 1, lo);
  // Prefix sums of the histogram's counts and first moments (bin centres).
  std::vector<double> n0(bins + 1, 0.0), n1(bins + 1, 0.0);
  for (double x : v) {
    const int b = std::min(bins - 1, static_cast<int>((x - lo) / w));
    n0[b + 1] += 1, n1[b + 1] += lo + (b + 0.5) * w;
  }
  for (int b = 0; b < bins; ++b) n0[b + 1] += n0[b], n1[b + 1] += n1[b];
  auto gain = [&](int i, int j) {  // bins [i, j): count * mean^2
    const double c = n0[j] - n0[i], s = n1[j] - n1[i];
    return c > 0 ? s * s / c : 0.0;
  };
  // best[k][j]: the largest sum of gains of k classes over bins [0, j).
  const double none = -std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(classes + 1, std::vector<double>(bins + 1, none));
  std::vector<std::vector<int>> cut(classes + 1, std::vector<int>(bins + 1, 0));
  best[0][0] = 0;
  for (int k = 1; k <= classes; ++k)
    for (int j = k; j <= bins; ++j)
      for (int i = k - 1; i < j; ++i) {
        if (best[k - 1][i] == none) continue;
        const double g = best[k - 1][i] + gain(i, j);
        if (g > best[k][j]) best[k][j] = g, cut[k][j] = i;
      }
  // A cut inside a run of empty bins splits the data alike anywhere in the
  // run: take the run's middle (between the two modes, not at one's edge).
  auto empty = [&](int b) { return n0[b + 1] == n0[b]; };
  std::vector<double> t(classes - 1);
  for (int k = classes, j = bins; k > 1; --k) {
    j = cut[k][j];
    int a = j, e = j;
    while (a > 0 && empty(a - 1)) --a;
    while (e < bins && empty(e)) ++e;
    t[k - 2] = lo + 0.5 * (a + e) * w;
  }
  return t;
}

double class_separation(const std::vector<double>& v, const std::vector<double>& t) {
  const std::vector<double> m = refine_detail::class_means(v, t);
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double total = 0, between = 0;
  for (double x : v) {
    const size_t k = std::upper_bound(t.begin(), t.end(), x) - t.begin();
    total += (x - mean) * (x - mean);
    between += (m[k] - mean) * (m[k] - mean);
  }
  return total > 0 ? between / total : 1.0;
}

RefineReport refine_levelset(const InverseProblem& problem, const fk::Tensor& smooth,
                             const RefineOptions& o, const SolverOptions& so) {
  using namespace refine_detail;
  const fk::Dims shape = problem.domain.shape();
  const std::vector<double> xs = refit_inputs(problem, smooth, o, "nefi::refine_levelset");
  RefineReport r;
  const double gap = start_phases(problem, smooth, xs, o, r);
  if (!(gap > 0)) return r;
  InverseProblem p = problem;
  const std::string primary = problem.field->primary();
  auto field = std::make_shared<LevelSetField>(primary, shape, xs, r.thresholds, r.start_levels,
                                               o.eps_start * gap, o.eps_end * gap, o.floor);
  p.field = field;
  const Result res = run_refit(std::move(p), o, so, r);
  r.refined = res.fields.at(primary).to(fk::DType::F64);
  r.levels = field->levels();
  judge(problem, xs, field->params().raw(0).to_vector<double>(), o, r);
  return r;
}

namespace {

RefineReport refine_mode(const InverseProblem& problem, const fk::Tensor& smooth,
                         const RefineOptions& o, const SolverOptions& so) {
  if (o.mode == "voxels") return refine_voxels(problem, smooth, o, so);
  if (o.mode == "tv_sharpen") return refine_tv_sharpen(problem, smooth, o, so);
  if (o.mode == "phasefield") return refine_phasefield(problem, smooth, o, so);
  return refine_levelset(problem, smooth, o, so);
}

// levels_by "chi": one refit per K, the accepted one of lowest chi kept.
RefineReport refine_levels_by_chi(const InverseProblem& problem, const fk::Tensor& smooth,
                                  const RefineOptions& o, const SolverOptions& so) {
  std::vector<double> chis;
  RefineReport best;
  bool have = false;
  for (int k = 2; k <= o.max_levels; ++k) {
    RefineOptions ok = o;
    ok.levels = k;
    RefineReport r = refine_mode(problem, smooth, ok, so);
    // Not refitted: at 2 phases (no level structure, or the smooth fit at
    // the noise level) no count refits; at more, two thresholds coincide
    // and that count is skipped, its chi the smooth field's.
    if (r.refusal == 1 && k == 2) return r;
    if (r.refusal == 1) {
      chis.push_back(r.chi_smooth);
      continue;
    }
    chis.push_back(r.chi_refined);
    const bool better = r.accepted != best.accepted ? r.accepted : r.chi_refined < best.chi_refined;
    if (!have || better) best = std::move(r), have = true;
  }
  best.chi_by_levels = std::move(chis);
  return best;
}

}  // namespace

RefineReport refine_edges(const InverseProblem& problem, const fk::Tensor& smooth,
                          const RefineOptions& o, const SolverOptions& so) {
  o.validate();
  if (o.levels == 0 && o.levels_by == "chi") return refine_levels_by_chi(problem, smooth, o, so);
  return refine_mode(problem, smooth, o, so);
}

}  // namespace nefi
