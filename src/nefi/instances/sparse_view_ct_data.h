#pragma once
// The sparse_view_ct instance's data side, independent of the inversion
// operator (no sampling grid): scenes are sums of ellipses of constant value
// and isotropic Gaussians in physical coordinates on [0, L]^2 (axis 0,
// axis 1), whose parallel-beam line integrals are exact in closed form
// (chord length times value; sqrt(2 pi) sigma a exp(-d^2 / 2 sigma^2)). The
// measurement averages `rays_per_bin` exact rays across each detector bin.
#include <cstdint>
#include <string>
#include <vector>

namespace nefi::ct {

struct Ellipse {
  double value, c0, c1, a, b, psi;  // a along (cos psi, sin psi) in (axis 0, axis 1)
};
struct Blob {
  double amplitude, c0, c1, sigma;
};
struct Scene {
  std::vector<Ellipse> ellipses;
  std::vector<Blob> blobs;
  double at(double x0, double x1) const;
  // The line integral along {c + s e + t e_perp}, e = (cos th, sin th), c the box centre.
  double line_integral(double th, double s, double L) const;
};

// shepp: the modified Shepp-Logan phantom (Toft), values in [0, 1], the same
// for every seed; blobs: 3-6 Gaussians; piecewise: a disk of 0.2 with 2-4
// ellipses of value 0.2-0.6 on it. Random draws from NumPy's default_rng(seed)
// (numpy_rng.h). An unknown class is an fk::Error naming the key 'scene'.
Scene draw_scene(const std::string& cls, double L, uint64_t seed);

// Cell averages on an m x m grid (sub x sub point samples per cell).
std::vector<double> render(const Scene& s, int64_t m, int64_t sub, double L);

// Sinogram (n_views, n_det): bin averages of rays_per_bin exact rays, views
// th_v = v angle_range / n_views, bins centred on (j + 1/2) L/n_det - L/2.
std::vector<double> sinogram(const Scene& s, int64_t n_views, double angle_range, int64_t n_det,
                             int64_t rays_per_bin, double L);

}  // namespace nefi::ct
