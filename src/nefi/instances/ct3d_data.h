#pragma once
// The ct3d instance's data side, independent of the inversion operator: 3-D
// scenes of constant-valued ellipsoids (axis-aligned in z, rotated about z)
// and isotropic Gaussians on [0, L]^2 x [0, H] (axis 2 = z). A plane z = const
// cuts them into the 2-D ellipses and Gaussians of sparse_view_ct_data.h,
// whose parallel-beam line integrals are exact; a detector row averages
// `z_per_row` such planes across its slab and `rays_per_bin` rays across
// each bin.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "nefi/instances/sparse_view_ct_data.h"

namespace nefi::ct3d {

using Point = std::array<double, 3>;

struct Ellipsoid {
  double value;
  Point c, a;  // centre and semi-axes (a[0] along (cos psi, sin psi, 0), a[2] along z)
  double psi;
};
struct Blob {
  double amplitude;
  Point c;
  double sigma;
};
struct Scene {
  std::vector<Ellipsoid> ellipsoids;
  std::vector<Blob> blobs;
  double at(const Point& p) const;
  ct::Scene slice(double z) const;  // the cut by the plane at height z
};

// ellipsoids: the modified 3-D Shepp-Logan phantom (10 ellipsoids, the two
// tilted ones upright), the same for every seed; blobs: 3-6 Gaussians;
// piecewise: a ball of 0.2 with 2-4 ellipsoids of 0.2-0.6 on it. Random
// draws from NumPy's default_rng(seed). An unknown class is an fk::Error
// naming the key 'scene'.
Scene draw_scene(const std::string& cls, double L, double H, uint64_t seed);

// Cell averages on an (n, n, n_z) grid (sub^3 point samples per cell).
std::vector<double> render(const Scene& s, int64_t n, int64_t n_z, int64_t sub, double L, double H);

// Sinogram (n_views, n_det, n_z) C order, as ct::sinogram per plane, averaged
// over z_per_row planes evenly spread in each of the n_z rows.
std::vector<double> sinogram(const Scene& s, int64_t n_views, double angle_range, int64_t n_det,
                             int64_t rays_per_bin, int64_t n_z, int64_t z_per_row, double L,
                             double H);

}  // namespace nefi::ct3d
