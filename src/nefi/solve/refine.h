#pragma once
// Post-solve edge refinement (the reference's "refined IoU" stage): a smooth
// reconstruction x_s of a piecewise-constant object is re-fitted to the same
// data as a K-phase field over one level set phi,
//   u = c_0 + sum_{k>=1} (c_k - c_{k-1}) sigmoid((phi - t_k) / eps),
// with phi started at x_s, the thresholds t_k and starting levels c_k from
// multi-level Otsu on x_s, and eps shrinking geometrically from eps_start to
// eps_end (fractions of the smallest level gap) over the refinement stage.
// phi and the levels are fitted by Adam under the problem's own losses, so
// the data term decides where the interfaces go; the sharp field is then
// only accepted when
//   chi_refined <= chi_factor * max(chi_smooth, 1)   (chi = masked mean
//     squared residual / noise_std^2; without a known noise level the
//     plain mean square, and the bound is chi_factor * chi_smooth), and
//   at least band_fraction of the refined interface cells lie in the smooth
//     field's transition band (cells whose smooth value is strictly between
//     the two starting levels of that interface, grown by band_width cells),
//   and, with a known noise level, the refit does not fit the noise: when
//     the smooth fit is at the noise level already (chi_smooth <= 1 +
//     noise_sigmas * sigma_chi) the refit may not fit the data closer than
//     min(chi_smooth, 1) - noise_sigmas * sigma_chi, where sigma_chi is
//     chi's spread over the noise: the standard error of chi_smooth as a
//     mean of its per-datum terms (sqrt(2 / N) for N data of Gaussian
//     noise; it also follows noise whose variance varies, as photon
//     counts'). A fit with p effective parameters free to follow the
//     noise ends near chi = 1 - p / N, so a drop that far below both is
//     the noise taken into the image, not signal (the data had none left
//     to give),
//   and the refined field keeps at least support_share of the smooth
//     field's support, the cells above half the smooth peak, above that
//     same level (when support_share > 0 and the smooth peak is > 0):
//     sharpening keeps or raises the cores the smooth fit shows; a refit
//     that drops them has spread its objects out instead (sparse dots of
//     several amplitudes under two phases: the data fix each dot's blurred
//     mass, not its height, and the one "on" level takes the mean of the
//     dots and their flanks),
// else the smooth field is kept: refinement may sharpen what the data
// support, never invent an edge the data or the smooth fit do not show.
//
// Mode "voxels" keeps a free value per cell instead (started at x_s, held
// above `floor`), refitted under the problem's losses plus
// boundary_weight * the smoothed perimeter of the phases,
//   P(u) = sum_k mean_cells |grad_h sigmoid((u - t_k) / eps)|,
//   eps = boundary_eps * the smallest level gap,
// the area of the interfaces {u = t_k} per unit volume: it shortens and
// straightens the interfaces where the data leave them free, and, unlike a
// staircase of K levels, leaves the values inside each phase to the data
// (objects of different strengths keep them). The same acceptance test.
//
// Mode "tv_sharpen" keeps a free value per cell too (refine_tv_sharpen.cpp),
// refitted under the problem's losses plus tv_weight * the isotropic TV
// with the small smoothing tv_eps (of a one-gap step across one cell): a
// strong TV prefers steps to ramps and leaves the values free.
//
// Mode "phasefield" fits a per-cell phase s in [0, K - 1] read through the
// fitted levels, under a double well that drives s onto the phases and a
// gradient energy that sets the interface width (refine_phasefield.cpp).
// Both are judged by the same acceptance test.
#include <limits>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "nefi/solve/problem.h"
#include "nefi/solve/solver.h"

namespace nefi {

struct RefineOptions {
  std::string mode = "levelset";  // levelset | voxels | tv_sharpen | phasefield
  int levels = 0;                 // phases K >= 2; 0: the smallest K in [2, max_levels] with
                                  // between-class variance >= auto_separation of the total
  int max_levels = 4;             // <= 8
  // How `levels` 0 picks K: "separation" (the rule above, from the smooth
  // field's histogram alone) or "chi" (refit every K in [2, max_levels] and
  // keep the accepted refit with the lowest chi; none accepted: the lowest
  // chi's refusal). The histogram's variance is the high-contrast phases':
  // a small class of low contrast (ct3d's 0.3 features beside its 0.2
  // brain, the class its IoU threshold 0.25 separates) adds little to it,
  // so "separation" stops at 3 phases and the staircase merges that class
  // away, while the data still see it: chi falls with every level up to
  // the band test's limit (docs/performance.md, session 14).
  std::string levels_by = "separation";
  // Two given starting phase values {c0 < c1} (`levels` must be 2): a known
  // background and inclusion value where the smooth fit under-recovers the
  // contrast. The threshold is then mass-matched: the c1 phase takes the
  // share (mean(x_s) − c0)/(c1 − c0) of the cells with the largest smooth
  // values, so the two-phase start keeps the smooth field's integral (what
  // smoothing forward maps determine best). Empty: Otsu and its class means.
  std::vector<double> start_levels;
  double auto_separation = 0.9;
  int steps = 200;
  double lr = 1e-2;
  double eps_start = 0.3, eps_end = 0.1;
  double chi_factor = 1.1;
  // The noise-fitting test above, in standard deviations of chi at the
  // noise level (0: off). It bites only where the smooth fit leaves no
  // significant signal in the residual, so refits that lower a chi well
  // above 1 (into the noise or not) and refits that raise chi within
  // chi_factor are judged as before (docs/performance.md, session 16).
  double noise_sigmas = 3;
  // With a known noise level, no refit when chi_smooth <= this (0: off): a
  // smooth fit that already explains the data to the noise leaves a refit
  // nothing but the noise to fit.
  double min_chi_smooth = 0;
  double band_fraction = 0.9;
  int band_width = 2;
  // Refuse a refined field that keeps less than this share of the smooth
  // field's half-max support (0: off; in [0, 1]).
  double support_share = 0;
  // voxels mode only:
  double boundary_weight = 1e-3;
  double boundary_eps = 0.1;
  // A value prior's low bound (e.g. p0 >= 0): voxels and tv_sharpen cells,
  // and levelset levels, below it read as it.
  double floor = -std::numeric_limits<double>::infinity();
  // tv_sharpen and phasefield weights are in loss units, like
  // boundary_weight: against deconvolution3d's data term (chi x 7.4e-6) the
  // defaults 1e-3 outweigh it and both refits are refused; 1e-4 to 1e-6 are
  // accepted there (docs/performance.md, session 11).
  // tv_sharpen only: the TV's weight and its smoothing (level gaps per cell).
  double tv_weight = 1e-3;
  double tv_eps = 1e-2;
  // phasefield only: the weight of the well + gradient energy, and the
  // interface width (cells) their balance sets. The phase is fitted in the
  // field's units (s times the smallest level gap), so `lr` moves its
  // interfaces as far a step as it moves the levels and the other modes'
  // parameters (refine_phasefield.cpp).
  double well_weight = 1e-3;
  double phase_width = 1.0;
  void validate() const;  // throws fk::Error naming the bad option
};

struct RefineReport {
  bool accepted = false;
  std::string reason;  // why it was refused (empty when accepted)
  // The same as a code (what metrics record): 0 accepted, 1 not refitted (no
  // level structure, or at the noise level), 2 chi, 3 support lost, 4
  // interfaces outside the transition band, 5 the refit fits the noise (6,
  // byop/refine_fit.h: the refit leaves the prior's range), 7 the refit
  // diverged (non-finite values).
  int refusal = 0;
  std::vector<double> thresholds, start_levels;
  // levels_by "chi": each refit's chi, for K = 2, 3, ..., max_levels (empty otherwise).
  std::vector<double> chi_by_levels;
  std::vector<double> levels;  // levelset: the fitted levels; voxels: the refined class means
  double chi_smooth = 0, chi_refined = 0, in_band = 0;
  // chi's spread over the noise: chi_smooth's standard error as a mean of
  // its per-datum terms (0 without a known noise level).
  double chi_sigma = 0;
  // The refit's steps, and how many of them replayed a captured CUDA graph
  // (a device refit; 0 on the CPU).
  int refit_steps = 0;
  int64_t refit_graph_steps = 0;
  // The share of the smooth field's half-max support the refined field keeps.
  double support_kept = 1;
  fk::Tensor refined;  // the refined field (f64), also when refused
  fk::Tensor field;    // what to use: `refined` when accepted, else the smooth field
};

// `problem` supplies the operator (at the domain's grid), the measurement and
// the losses on field `problem.field->primary()` (its field is not used);
// `smooth` is that field at the domain's grid.
RefineReport refine_levelset(const InverseProblem& problem, const fk::Tensor& smooth,
                             const RefineOptions& options, const SolverOptions& solver = {});

RefineReport refine_voxels(const InverseProblem& problem, const fk::Tensor& smooth,
                           const RefineOptions& options, const SolverOptions& solver = {});
RefineReport refine_tv_sharpen(const InverseProblem& problem, const fk::Tensor& smooth,
                               const RefineOptions& options, const SolverOptions& solver = {});

RefineReport refine_phasefield(const InverseProblem& problem, const fk::Tensor& smooth,
                               const RefineOptions& options, const SolverOptions& solver = {});
// The mode options.mode names, at the level count options.levels_by picks.
RefineReport refine_edges(const InverseProblem& problem, const fk::Tensor& smooth,
                          const RefineOptions& options, const SolverOptions& solver = {});

// P(u) above for thresholds t (ascending) at width eps > 0 and grid spacing
// h (one per axis of u); differentiable in u.
fk::Tensor phase_perimeter(const fk::Tensor& u, const std::vector<double>& t, double eps,
                           const std::vector<double>& h);

// The phase field's energy for `phases` K >= 2 at interface width `width`
// (cells, >= 0) and spacing h: mean_cells [W(s) + (width h_max)^2 |grad s|^2]
// (refine_phasefield.cpp; forward differences, 0 past the last cell);
// differentiable in s.
fk::Tensor phase_energy(const fk::Tensor& s, int phases, double width,
                        const std::vector<double>& h);

// Multi-level Otsu on a `bins`-bin histogram over [min, max] of v: the
// classes - 1 thresholds (bin edges, ascending) that maximise the
// between-class variance (dynamic programming over contiguous bin ranges);
// a cut inside empty bins sits in the middle of the empty run.
std::vector<double> multi_otsu(const std::vector<double>& v, int classes, int bins = 256);
// Between-class over total variance of v split at `thresholds` (1 for constant v).
double class_separation(const std::vector<double>& v, const std::vector<double>& thresholds);

}  // namespace nefi
