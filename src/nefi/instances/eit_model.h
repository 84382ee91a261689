#pragma once
// The eit instance's measurement model on [−1, 1]², shared by the inversion
// operator and the data generator (which run it at different grids): the
// trigonometric Neumann current patterns and the boundary-voltage
// observable. Conductivity scenes live here too (data side only).
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

struct Inclusion {
  double cx, cy, radius, sigma;
};

// Scenes: single (one disk, contrast from `contrast`), multi (2–3 disjoint
// disks), contrast (one disk, contrast 10–20). Each disk is conductive
// (σ_bg·c) or resistive (σ_bg/c) with equal odds; an unknown class is an
// fk::Error naming the key 'scene'.
std::vector<Inclusion> draw_inclusions(const std::string& scene, double contrast_lo,
                                       double contrast_hi, double sigma_bg, uint64_t seed);

// Cell averages of σ on an m×m grid (sub×sub point samples per cell),
// clamped to [lo, hi].
std::vector<double> render_sigma(const std::vector<Inclusion>& inc, double sigma_bg, int64_t m,
                                 int64_t sub, double lo, double hi);

}  // namespace nefi::eit
