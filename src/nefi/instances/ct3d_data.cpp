#include "nefi/instances/ct3d_data.h"

#include <cmath>
#include <numbers>

#include "fk/error.h"
#include "nefi/instances/numpy_rng.h"

namespace nefi::ct3d {

double Scene::at(const Point& p) const {
  double v = 0;
  for (const Ellipsoid& e : ellipsoids) {
    const double d0 = p[0] - e.c[0], d1 = p[1] - e.c[1], d2 = p[2] - e.c[2];
    const double c = std::cos(e.psi), s = std::sin(e.psi);
    const double q0 = (c * d0 + s * d1) / e.a[0], q1 = (-s * d0 + c * d1) / e.a[1];
    const double q2 = d2 / e.a[2];
    if (q0 * q0 + q1 * q1 + q2 * q2 <= 1) v += e.value;
  }
  for (const Blob& b : blobs) {
    double r2 = 0;
    for (int a = 0; a < 3; ++a) r2 += (p[a] - b.c[a]) * (p[a] - b.c[a]);
    v += b.amplitude * std::exp(-0.5 * r2 / (b.sigma * b.sigma));
  }
  return v;
}

ct::Scene Scene::slice(double z) const {
  ct::Scene s;
  for (const Ellipsoid& e : ellipsoids) {
    const double t = (z - e.c[2]) / e.a[2];
    if (t * t >= 1) continue;
    const double r = std::sqrt(1 - t * t);
    s.ellipses.push_back({e.value, e.c[0], e.c[1], e.a[0] * r, e.a[1] * r, e.psi});
  }
  for (const Blob& b : blobs) {
    const double dz = z - b.c[2];
    s.blobs.push_back(
        {b.amplitude * std::exp(-0.5 * dz * dz / (b.sigma * b.sigma)), b.c[0], b.c[1], b.sigma});
  }
  return s;
}

Scene draw_scene(const std::string& cls, double L, double H, uint64_t seed) {
  Scene sc;
  const double deg = std::numbers::pi / 180;
  // Phantom coordinates (x right, y up, z) on [-1, 1]^3 -> axis 0 = down,
  // axis 1 = right, axis 2 = z (as sparse_view_ct's 2-D phantom).
  auto phantom = [&](double v, double a, double b, double c, double x, double y, double z,
                     double phi_deg) {
    sc.ellipsoids.push_back({v,
                             {(1 - y) * L / 2, (1 + x) * L / 2, (1 + z) * H / 2},
                             {a * L / 2, b * L / 2, c * H / 2},
                             phi_deg * deg + std::numbers::pi / 2});
  };
  if (cls == "ellipsoids") {
    phantom(1.0, 0.69, 0.92, 0.81, 0, 0, 0, 0);
    phantom(-0.8, 0.6624, 0.874, 0.78, 0, -0.0184, 0, 0);
    phantom(-0.2, 0.11, 0.31, 0.22, 0.22, 0, 0, -18);
    phantom(-0.2, 0.16, 0.41, 0.28, -0.22, 0, 0, 18);
    phantom(0.1, 0.21, 0.25, 0.41, 0, 0.35, -0.15, 0);
    phantom(0.1, 0.046, 0.046, 0.05, 0, 0.1, 0.25, 0);
    phantom(0.1, 0.046, 0.046, 0.05, 0, -0.1, 0.25, 0);
    phantom(0.1, 0.046, 0.023, 0.05, -0.08, -0.605, 0, 0);
    phantom(0.1, 0.023, 0.023, 0.02, 0, -0.606, 0, 0);
    phantom(0.1, 0.023, 0.046, 0.02, 0.06, -0.605, 0, 0);
    return sc;
  }
  NumpyRng rng(seed);
  auto centre = [&] {
    const double c0 = rng.uniform(0.3, 0.7) * L, c1 = rng.uniform(0.3, 0.7) * L;
    return Point{c0, c1, rng.uniform(0.3, 0.7) * H};
  };
  if (cls == "blobs") {
    for (int64_t k = rng.integers(3, 7); k > 0; --k) {
      const Point c = centre();
      const double sigma = rng.uniform(0.04, 0.1) * std::min(L, H);
      sc.blobs.push_back({rng.uniform(0.3, 0.8), c, sigma});
    }
  } else if (cls == "piecewise") {
    sc.ellipsoids.push_back({0.2, {L / 2, L / 2, H / 2}, {0.4 * L, 0.4 * L, 0.4 * H}, 0});
    for (int64_t k = rng.integers(2, 5); k > 0; --k) {
      const Point c = centre();
      const double a = rng.uniform(0.05, 0.15) * L, b = rng.uniform(0.05, 0.15) * L;
      const double h = rng.uniform(0.05, 0.15) * H, psi = rng.uniform(0.0, std::numbers::pi);
      sc.ellipsoids.push_back({rng.uniform(0.2, 0.6), c, {a, b, h}, psi});
    }
  } else {
    FK_CHECK(false, "config key 'scene'", "ellipsoids, blobs or piecewise", cls);
  }
  return sc;
}

std::vector<double> render(const Scene& s, int64_t n, int64_t n_z, int64_t sub, double L,
                           double H) {
  std::vector<double> v(n * n * n_z, 0.0);
  const double h = L / static_cast<double>(n * sub), hz = H / static_cast<double>(n_z * sub);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < n_z; ++k) {
        double acc = 0;
        for (int64_t a = 0; a < sub; ++a)
          for (int64_t b = 0; b < sub; ++b)
            for (int64_t c = 0; c < sub; ++c)
              acc += s.at(
                  {(i * sub + a + 0.5) * h, (j * sub + b + 0.5) * h, (k * sub + c + 0.5) * hz});
        v[(i * n + j) * n_z + k] = acc / static_cast<double>(sub * sub * sub);
      }
  return v;
}

std::vector<double> sinogram(const Scene& s, int64_t n_views, double angle_range, int64_t n_det,
                             int64_t rays_per_bin, int64_t n_z, int64_t z_per_row, double L,
                             double H) {
  std::vector<double> y(n_views * n_det * n_z, 0.0);
  const double hz = H / static_cast<double>(n_z);
  for (int64_t k = 0; k < n_z; ++k)
    for (int64_t q = 0; q < z_per_row; ++q) {
      const double z = (k + (q + 0.5) / static_cast<double>(z_per_row)) * hz;
      const std::vector<double> plane =
          ct::sinogram(s.slice(z), n_views, angle_range, n_det, rays_per_bin, L);
      for (int64_t r = 0; r < n_views * n_det; ++r)
        y[r * n_z + k] += plane[r] / static_cast<double>(z_per_row);
    }
  return y;
}

}  // namespace nefi::ct3d
