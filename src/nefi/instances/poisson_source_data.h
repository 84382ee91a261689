#pragma once
// The poisson_source instance's data side, independent of the inversion
// operator (no DST here): analytic source scenes, and a 5-point
// finite-difference Dirichlet solve in f64 by conjugate gradients on a
// finer grid (the reference's tag poisson-fd-2x-float64).
#include <cstdint>
#include <string>
#include <vector>

namespace nefi::poisson {

// An isotropic Gaussian source: amplitude, centre (axis 0, axis 1), std.
struct Source {
  double amplitude, cx, cy, sigma;
};

// Sources of class blobs (2-4 Gaussians of std 0.04-0.08 L), points (3-6
// near-point sources of std point_cells native cells) or smooth (3 broad
// Gaussians), drawn from NumPy's default_rng(seed) stream (numpy_rng.h);
// an unknown class is an fk::Error naming the key 'scene'.
std::vector<Source> draw_sources(const std::string& cls, int64_t n, double L, double point_cells,
                                 uint64_t seed);

// Cell averages of the summed sources on an m x m grid of [0, L]^2 (point
// samples on a sub-grid of `sub` per cell and axis, area-averaged).
std::vector<double> render_sources(const std::vector<Source>& s, int64_t m, int64_t sub, double L);

// Solves -kappa (5-point Laplacian) u = f on an m x m cell-centred grid of
// spacing h with u = 0 half a cell outside (antisymmetric ghost cells), by
// conjugate gradients to a relative residual `tol`. Returns u (C order).
std::vector<double> solve_dirichlet_fd(const std::vector<double>& f, int64_t m, double h,
                                       double kappa, double tol = 1e-12);

}  // namespace nefi::poisson
