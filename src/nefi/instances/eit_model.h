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

// Pattern p injects j(s) = A cos(2π k s) (p even) or A sin(2π k s) (p odd),
// k = p/2 + 1, through the boundary faces; on the cell-centred n×n grid the
// flux of a boundary face enters its cell as the volume source j/h.
// Returns (n_patterns, n, n), C order.
std::vector<double> current_patterns(int64_t n, int64_t n_patterns, double amplitude);

// The (4 native, n·n) matrix from a solution on the n×n grid to the
// boundary voltages on the native grid's 4·native boundary faces: each face
// value is the second-order extrapolation 1.5 u_cell − 0.5 u_inner, each
// side's n faces are area-averaged onto its native faces, and the result is
// referenced to its mean over the whole boundary.
std::vector<double> trace_matrix(int64_t n, int64_t native);

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
