#pragma once
// The eit instance's measurement model on [−1, 1]², shared by the inversion
// operator and the data generator (which run it at different grids): the
// trigonometric Neumann current patterns and the boundary-voltage
// observable. The conductivity scenes (data side only) and the inclusion
// IoU metric live here too.
//
// The boundary is walked counter-clockwise from (−1, −1) with the perimeter
// fraction s ∈ [0, 1): side 0 along y = −1 (x rising), side 1 along x = 1,
// side 2 along y = 1, side 3 along x = −1; axis 0 is x, axis 1 is y.
#include <cstdint>
#include <string>
#include <vector>

namespace nefi::eit {

// A stretch [s0, s1) of the boundary in perimeter fractions (0 <= s0 < s1
// <= 1): a native boundary face, or an electrode.
struct Segment {
  double s0, s1;
};

// The electrode model. count 0: the continuum model, current enters along
// the whole boundary and the voltage is read on each of the 4·native native
// faces. count L > 0: Somersalo's gap model with L electrodes of equal
// width `coverage`/L centred at s = (e + 0.5)/L; current enters only under
// an electrode, at the uniform density I_e/|e|, and each electrode reads
// the mean of the boundary voltage under it. Both are face-averaged: a
// grid face takes the mean current density over its extent, so any grid
// injects the same current into every stretch of boundary.
struct Electrodes {
  int64_t count = 0;
  double coverage = 0.5;
};
// Throws fk::Error (naming the keys 'electrodes', 'electrode_coverage' and
// 'n_patterns') unless 0 < coverage <= 1 and, with electrodes, the highest
// frequency ceil(n_patterns / 2) is below count / 2 (so every pattern is a
// distinct, current-conserving set of electrode currents).
void check_electrodes(const Electrodes& e, int64_t n_patterns);
// The observed segments: the 4·native native faces, or the electrodes.
std::vector<Segment> observed_segments(int64_t native, const Electrodes& e);

// Currents I_k entering uniformly over segment k, as cell sources on the
// n×n grid: face f takes Σ_k I_k |f ∩ k| / |k| amperes, the boundary cell
// behind it that over its area h² (A/m², the finite-volume Neumann source).
// Returns n·n values, C order.
std::vector<double> inject(int64_t n, const std::vector<Segment>& segments,
                           const std::vector<double>& currents);
// The adjoint of inject under the plain dot products of cells and segments:
// per segment Σ_f |f ∩ k| / |k| · u(cell behind f) / h².
std::vector<double> inject_adjoint(int64_t n, const std::vector<Segment>& segments,
                                   const std::vector<double>& u);

// Pattern p (k = p/2 + 1) drives the current density j(s) = A cos(2π k s)
// (p even) or A sin(2π k s) (p odd) in A per metre of boundary: along the
// whole boundary, each grid face taking its exact mean over the face
// (continuum), or as the electrode currents I_e = j(centre of e)·|e|
// (gap model). Returns (n_patterns, n, n), C order; every pattern's sum is
// zero (compatible with the pure-Neumann problem).
std::vector<double> current_patterns(int64_t n, int64_t n_patterns, double amplitude,
                                     const Electrodes& electrodes = {});

// The (M, n·n) matrix from a solution on the n×n grid to the voltages on
// the M segments: each grid face's value is the second-order extrapolation
// 1.5 u_cell − 0.5 u_inner (the reference's trace; with extrapolate false
// the boundary cell's u_cell alone), each segment the length-weighted mean
// of the faces it overlaps, and the result is referenced to its mean over
// the segments.
std::vector<double> trace_matrix(int64_t n, const std::vector<Segment>& segments,
                                 bool extrapolate = true);
// The continuum model's: the 4·native native faces.
std::vector<double> trace_matrix(int64_t n, int64_t native);

// The flux trace's second term (config key trace: flux). A face's voltage
// is its boundary cell's plus half a cell of the known Neumann flux,
// u_cell + (h/2) j/σ_cell: second order like the extrapolation, with a
// third of its error term (h²/8 u'' against 3h²/8). Returns (n_patterns, M,
// n·n) C with the voltages trace_matrix(n, segments, false) u_p + C_p (1/σ):
// per segment the length-weighted mean over the face pieces under it of
// (h/2) times the mean current density there (the pattern's exact mean
// along the boundary, or the electrode's density), referenced to the mean
// over the segments.
std::vector<double> flux_trace_matrix(int64_t n, const std::vector<Segment>& segments,
                                      int64_t n_patterns, double amplitude,
                                      const Electrodes& electrodes);

// An elliptical inclusion: centre, semi-axes a (along `angle`) and b, and
// its conductivity.
struct Inclusion {
  double cx, cy, a, b, angle, sigma;
};

// The reference's scene draw (nefi.md §4.7), from NumPy's default_rng(seed)
// (numpy_rng.h) in the reference's order, so seed N is the reference's
// scene N: per inclusion, semi-axes a, b ~ U(0.2, 0.4), angle ~ U(0, π),
// centre at radius 0.5·sqrt(U) and angle U(0, 2π) (up to 200 tries to keep
// 0.1 clear of the earlier ones, the last try kept), then the contrast c ~
// U(contrast) and conductive (σ_bg·c) or resistive (σ_bg/c) with equal odds.
// Scenes: single (one), multi (2–3), contrast (one, c ~ U(10, 20)); an
// unknown class is an fk::Error naming the key 'scene'.
std::vector<Inclusion> draw_inclusions(const std::string& scene, double contrast_lo,
                                       double contrast_hi, double sigma_bg, uint64_t seed);

// Cell averages of σ on an m×m grid: σ_bg plus (σ_i − σ_bg) times each
// inclusion's area fraction (sub×sub point samples per cell), clamped to
// [lo, hi].
std::vector<double> render_sigma(const std::vector<Inclusion>& inc, double sigma_bg, int64_t m,
                                 int64_t sub, double lo, double hi);

// The reference's inclusion IoU: each map is thresholded at half its own
// peak |log(σ/σ_bg)|, conductive (log > t) and resistive (log < −t) supports
// matched separately; a truth without inclusions scores 1 when the
// reconstruction is flat too (peak ≤ 1e-6), else 0.
double inclusion_iou(const std::vector<double>& pred, const std::vector<double>& gt,
                     double sigma_bg);

}  // namespace nefi::eit
