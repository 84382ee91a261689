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

// A tube of Gaussian cross-section (std `radius`) around the polyline
// `path`, a Gaussian punctum (std `radius` about `a`; rendered as its exact
// mean over each cell, erf per axis, since a dot may be smaller than a
// cell), an ellipsoidal cell (a bright rim of width
// `radius` on a dim interior), or a tube of one uniform intensity inside
// `radius` of `path` (a hard edge: partial volumes come only from the area
// averaging onto coarser grids).
struct Object {
  enum Kind { kFilament, kPunctum, kCell, kUniformTube } kind;
  double amplitude;
  Point a, b, c;  // punctum/cell: a = centre, b = semi-axes; walks: a = start
  double radius;
  std::vector<Point> path;  // filament / uniform tube: polyline vertices
};

// A scene: its objects summed over a constant background, each point sample
// then clamped to [0, ceiling].
struct Scene {
  std::vector<Object> objects;
  double background = 0;
  double ceiling = 1;
};

// filaments: the reference's class (nefi.md 4.15; its scene generator's
// description): a background uniform in [0, 0.02], then 3-6 tubes of
// Gaussian cross-section, std 0.06-0.09 um, amplitude 0.5-1, along
// persistent random walks of 10-17 steps of 0.09 x the box width,
// persistence 0.85, mostly in-plane; overlaps add up (no ceiling). Drawn
// in the reference's order from NumPy's stream, so seed s is the
// reference's seed-s scene. bezier_filaments: 9-15 curved tubes of std
// 0.07-0.12 um on quadratic Bezier paths, amplitudes 0.5-1 (session 10's
// denser stand-in, kept for comparison). puncta, the reference's class:
// 12-29 dots of std 0.04-0.07 um and amplitude 0.8-1.6 with centres 6 %
// inside the box over a background in [0, 0.02], no ceiling, in its draw
// order; cells: 2-4 ellipsoids with rims of std 0.05-0.08 um;
// uniform_filaments: 3-6 tubes of intensity 1 and radius 0.10-0.15 um
// along the filaments' kind of walk (a two-phase cross-section). An
// unknown class is an fk::Error naming the key 'scene'. `box` is the
// physical size (um). The draws come from `rng`, which is left after them.
Scene draw_scene(const std::string& cls, const Point& box, NumpyRng& rng);
// The same from NumPy's default_rng(seed).
Scene draw_scene(const std::string& cls, const Point& box, uint64_t seed);

// A direction uniform on the sphere from two draws: z uniform in [-1, 1],
// then the azimuth.
Point uniform_direction(NumpyRng& rng);
// A direction uniform on the sphere from three standard normals, normalised
// (NumPy's standard_normal(3) / norm, as the reference draws them).
Point normal_direction(NumpyRng& rng);

// A persistent random walk of n_steps steps of length `step` from `start`:
// d <- normalize(persistence d + (1 - persistence) xi), xi drawn by
// `draw_direction`; a step that would leave [lo, hi] reverses that
// component of d. Returns the n_steps + 1 vertices.
std::vector<Point> persistent_walk(NumpyRng& rng, Point start, Point direction, int64_t n_steps,
                                   double step, double persistence, const Point& lo,
                                   const Point& hi,
                                   Point (*draw_direction)(NumpyRng&) = uniform_direction);

// The scene on `shape` cells over `box`: the background plus every object
// (point samples at the cell centres; puncta as their cell means), clamped
// to [0, ceiling].
std::vector<double> render(const Scene& s, const std::array<int64_t, 3>& shape, const Point& box);

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
