#pragma once
// The deconvolution3d instance's data side, independent of the inversion
// operator (no FFT): analytic fluorescence scenes in physical units (um) on
// a box (axis 0 = x, 1 = y, 2 = z), point-sampled on a grid, a separable
// direct Gaussian blur (zero outside the box) in f64, photon counts, and the
// sampled PSF array the inversion's FFT convolution is built from.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "nefi/instances/numpy_rng.h"

namespace nefi::deconv3d {

using Point = std::array<double, 3>;

// A tube of Gaussian cross-section (std radius) along a quadratic Bezier
// curve, a Gaussian punctum, an ellipsoidal cell (a bright rim of width
// `radius` on a dim interior), or a tube of one uniform intensity inside
// `radius` of a polyline `path` (a hard edge: partial volumes come only from
// the area averaging onto coarser grids).
struct Object {
  enum Kind { kFilament, kPunctum, kCell, kUniformTube } kind;
  double amplitude;
  Point a, b, c;  // filament: Bezier control points; punctum/cell: a = centre, b = semi-axes
  double radius;
  std::vector<Point> path;  // uniform tube: polyline vertices
};

// filaments: 9-15 curved tubes of std 0.07-0.12 um; puncta: 14-35 dots of
// std 0.06-0.12 um; cells: 2-4 ellipsoids with rims of std 0.05-0.08 um;
// uniform_filaments: 3-6 tubes of intensity 1 and radius 0.10-0.15 um along
// persistent random walks that run mostly in-plane (the reference's
// filament paths, with a two-phase cross-section instead of its Gaussian).
// Random draws from NumPy's default_rng(seed) (numpy_rng.h); an unknown class
// is an fk::Error naming the key 'scene'. `box` is the physical size (um).
std::vector<Object> draw_scene(const std::string& cls, const Point& box, uint64_t seed);

// A persistent random walk of n_steps steps of length `step` from `start`:
// d <- normalize(persistence d + (1 - persistence) xi), xi uniform on the
// sphere; a step that would leave [lo, hi] reverses that component of d.
// Returns the n_steps + 1 vertices.
std::vector<Point> persistent_walk(NumpyRng& rng, Point start, Point direction, int64_t n_steps,
                                   double step, double persistence, const Point& lo,
                                   const Point& hi);

// Point samples at the cell centres of `shape` cells over `box`, clamped to [0, 1].
std::vector<double> render(const std::vector<Object>& s, const std::array<int64_t, 3>& shape,
                           const Point& box);

// Direct separable convolution with a Gaussian of std sigma[a] (physical) at
// spacing h[a], truncated at 4 sigma, unit sum per axis; zero outside.
std::vector<double> gaussian_blur(const std::vector<double>& v, const std::array<int64_t, 3>& shape,
                                  const Point& h, const Point& sigma);

// Photon counts: y_i ~ Poisson(peak * clean_i + background) (clean clamped
// at 0), drawn from datagen::Rng(seed). Negative peak or background is an
// fk::Error naming 'peak_counts' / 'background_counts'.
std::vector<double> poisson_counts(const std::vector<double>& clean, double peak, double background,
                                   uint64_t seed);

// The extent of the sampled PSF array per axis, for a grid of n cells:
// full = 2n - 1 cells (every shift between two cells of the box, so the
// zero-padded convolution is exactly the box-restricted one and its adjoint
// the correlation); same = the largest odd count <= n (centred, so the FFT
// grid is ~2n instead of ~3n per axis: 3-4x cheaper in 3-D, dropping the
// PSF tails beyond n/2 cells). Unknown names are an fk::Error naming
// 'psf_extent'.
enum class PsfExtent { kFull, kSame };
PsfExtent psf_extent_from(const std::string& name);

// A separable Gaussian of std sigma[a] (physical) sampled at the offsets
// t * h[a] of the cells of a `cells[a]`-cell grid over the given extent
// (see PsfExtent), normalised to unit sum, C order; `shape` gets its size.
std::vector<double> gaussian_psf(const Point& sigma, const Point& h,
                                 const std::array<int64_t, 3>& cells, PsfExtent extent,
                                 std::array<int64_t, 3>& shape);

}  // namespace nefi::deconv3d
