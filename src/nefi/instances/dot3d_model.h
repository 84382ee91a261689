#pragma once
// The dot3d instance's measurement model (nefi.md §4.16), shared by the
// inversion operator and the data generator (which run it at different
// grids): a slab [0, Lx]×[0, Ly]×[0, Lz] in mm, z = 0 the top face, with
// reduced scattering μ_s′ (D = 1/(3μ_s′)) and refractive index n.
//
// Robin boundaries Φ + 2AD∂_nΦ = 0 on all six faces (A from Groenhuis'
// R_eff, 3.25 at n = 1.4) enter the cell-centred FV system as a sink: a
// boundary cell's face leaks the outward flux K_b Φ_i with K_b = 1/(2A +
// h/(2D)) (the Robin condition solved for the face value from the half-cell
// gradient, so exact for the FV scheme), i.e. κ_b = K_b/h per boundary face,
// on a grid whose own boundary is then Neumann.
//
// Sources: an n_sources² lattice spanning source_span of the top face (end
// sources at the span's ends), one transport mean free path (1/μ_s′) below
// it, spread cloud-in-cell.
// Detectors: n_detectors² square pixels tiling the central detector_span of
// the top face, as a camera's pixels tile its sensor (the reference's layout,
// nefi.md §4.16 "detectors 12×12 over span 0.85"): the span covers
// [L(1 − span)/2, L(1 + span)/2] (3–37 mm for L = 40, span 0.85), the pitch
// and the footprint side are span·L/n (3.4 mm at n = 10, 2.83 at 12) and
// the centres sit at the pixels' middles, half a pitch inside the span.
// Each reads the mean exitance K_b Φ over its footprint (sampled
// detector_samples² times, bilinear in the top cells). A source–detector
// pair closer than min_separation laterally (in the face's plane, as the
// reference masks) is masked.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "fk/shape.h"
#include "nefi/operators/elliptic/elliptic_grid.h"
#include "nefi/operators/elliptic/point_sources.h"

namespace nefi::dot {

struct Geometry {
  std::array<double, 3> extent{40, 40, 20};
  double mus_prime = 1, refractive_index = 1.4;
  int64_t n_sources = 3, n_detectors = 12, detector_samples = 3;
  double source_span = 0.6, detector_span = 0.85, min_separation = 6;

  double diffusion() const { return 1.0 / (3.0 * mus_prime); }
  // A = (1 + R_eff)/(1 − R_eff), R_eff = −1.440/n² + 0.710/n + 0.668 + 0.0636 n.
  double robin_a() const;
  // The exitance per unit Φ of a boundary cell of width h: 1/(2A + h/(2D)).
  double boundary_conductance(double h) const;
  // The square detector footprint's side: the pitch, the smaller of the
  // two axes' when the face is not square.
  double detector_size() const;
  int64_t sources() const { return n_sources * n_sources; }
  int64_t detectors() const { return n_detectors * n_detectors; }
};

// The pitch of n pixels tiling `span` of a face side `length`: span·length/n.
double detector_pitch_along(int64_t n, double span, double length);

std::vector<elliptic::PointSource> source_positions(const Geometry& g);
// Detector centres (x, y) on the top face.
std::vector<std::array<double, 2>> detector_positions(const Geometry& g);
// (sources, detectors): 0 where the pair is laterally closer than min_separation.
std::vector<double> pair_mask(const Geometry& g);

// The Neumann FV grid of `shape` (3 axes) over the slab.
elliptic::EllipticGrid slab_grid(const Geometry& g, const fk::Dims& shape);
// (sources, numel) right-hand sides.
std::vector<double> source_rhs(const Geometry& g, const fk::Dims& shape);
// (numel) the Robin sink Σ_{boundary faces of the cell} K_b(h_a)/h_a.
std::vector<double> robin_sink(const Geometry& g, const fk::Dims& shape);
// (detectors, numel): a detector's mean exitance as a row acting on Φ.
std::vector<double> detector_matrix(const Geometry& g, const fk::Dims& shape);

// μ_a scenes (data side only): a background with spherical absorbers of
// radius 3–5 mm and μ_a background × [3, 5], centred laterally within the
// central half of the top face:
//   single  one absorber, centre 5–8 mm deep
//   multi   2–3 absorbers, centres 4–11 mm deep, laterally apart by at
//           least the sum of their radii + 2 mm (50 tries each)
//   deep    one absorber, centre 10–13 mm deep
// A centre stays at least radius + margin (one inversion cell) from the top
// and bottom faces. These are the reference's own class ranges (its
// DOT3DScenes defaults and dot3d config: the inclusion μ_a 0.03–0.05 at
// μ_bg 0.01, radius 3–5, lateral span 0.5); session 11 adopted them after
// the smoke baselines on the older, larger and deeper draws (radius 4–6,
// single 5–9 mm) sat off the reference's figures (docs/performance.md,
// "dot3d scenes against the reference's classes, and seed 0 (session
// 11)"). Drawn from the seed; an unknown class is an fk::Error naming
// 'scene'. `margin` is the inversion grid's cell depth (mm).
class Absorbers {
 public:
  struct Sphere {
    std::array<double, 3> centre;  // (x, y, depth) mm
    double radius, value;
  };
  Absorbers(const std::string& scene, const Geometry& g, double background, double margin,
            uint64_t seed);
  double operator()(double x, double y, double z) const;
  // Cell averages on `shape` (sub³ samples per cell).
  std::vector<double> render(const fk::Dims& shape, int64_t sub) const;
  const std::vector<Sphere>& spheres() const { return spheres_; }

 private:
  std::array<double, 3> extent_;
  double background_;
  std::vector<Sphere> spheres_;
};

}  // namespace nefi::dot
