#include "nefi/instances/sparse_view_ct_data.h"

#include <cmath>
#include <numbers>

#include "fk/error.h"
#include "nefi/instances/numpy_rng.h"

namespace nefi::ct {

double Scene::at(double x0, double x1) const {
  double v = 0;
  for (const Ellipse& e : ellipses) {
    const double d0 = x0 - e.c0, d1 = x1 - e.c1;
    const double c = std::cos(e.psi), s = std::sin(e.psi);
    const double q0 = (c * d0 + s * d1) / e.a, q1 = (-s * d0 + c * d1) / e.b;
    if (q0 * q0 + q1 * q1 <= 1) v += e.value;
  }
  for (const Blob& b : blobs) {
    const double r2 = (x0 - b.c0) * (x0 - b.c0) + (x1 - b.c1) * (x1 - b.c1);
    v += b.amplitude * std::exp(-0.5 * r2 / (b.sigma * b.sigma));
  }
  return v;
}

double Scene::line_integral(double th, double s, double L) const {
  const double e0 = std::cos(th), e1 = std::sin(th);
  // A point on the ray and its unit direction e_perp = (-sin, cos).
  const double p0 = L / 2 + s * e0, p1 = L / 2 + s * e1, u0 = -e1, u1 = e0;
  double total = 0;
  for (const Ellipse& e : ellipses) {
    const double c = std::cos(e.psi), sn = std::sin(e.psi);
    const double q0 = c * (p0 - e.c0) + sn * (p1 - e.c1), q1 = -sn * (p0 - e.c0) + c * (p1 - e.c1);
    const double d0 = c * u0 + sn * u1, d1 = -sn * u0 + c * u1;
    const double A = d0 * d0 / (e.a * e.a) + d1 * d1 / (e.b * e.b);
    const double B = 2 * (q0 * d0 / (e.a * e.a) + q1 * d1 / (e.b * e.b));
    const double C = q0 * q0 / (e.a * e.a) + q1 * q1 / (e.b * e.b) - 1;
    const double disc = B * B - 4 * A * C;
    if (disc > 0) total += e.value * std::sqrt(disc) / A;  // chord length |t1 - t2|
  }
  for (const Blob& b : blobs) {
    const double d = (b.c0 - L / 2) * e0 + (b.c1 - L / 2) * e1 - s;  // distance to the ray
    total += b.amplitude * std::sqrt(2 * std::numbers::pi) * b.sigma *
             std::exp(-0.5 * d * d / (b.sigma * b.sigma));
  }
  return total;
}

Scene draw_scene(const std::string& cls, double L, uint64_t seed) {
  Scene sc;
  const double deg = std::numbers::pi / 180;
  // Phantom coordinates (x right, y up) on [-1, 1]^2 -> axis 0 = down, axis 1 = right.
  auto phantom = [&](double v, double a, double b, double x, double y, double phi_deg) {
    sc.ellipses.push_back({v, (1 - y) * L / 2, (1 + x) * L / 2, a * L / 2, b * L / 2,
                           phi_deg * deg + std::numbers::pi / 2});
  };
  if (cls == "shepp") {
    phantom(1.0, 0.69, 0.92, 0, 0, 0);
    phantom(-0.8, 0.6624, 0.874, 0, -0.0184, 0);
    phantom(-0.2, 0.11, 0.31, 0.22, 0, -18);
    phantom(-0.2, 0.16, 0.41, -0.22, 0, 18);
    phantom(0.1, 0.21, 0.25, 0, 0.35, 0);
    phantom(0.1, 0.046, 0.046, 0, 0.1, 0);
    phantom(0.1, 0.046, 0.046, 0, -0.1, 0);
    phantom(0.1, 0.046, 0.023, -0.08, -0.605, 0);
    phantom(0.1, 0.023, 0.023, 0, -0.606, 0);
    phantom(0.1, 0.023, 0.046, 0.06, -0.605, 0);
    return sc;
  }
  NumpyRng rng(seed);
  if (cls == "blobs") {
    for (int64_t k = rng.integers(3, 7); k > 0; --k) {
      const double c0 = rng.uniform(0.3, 0.7) * L, c1 = rng.uniform(0.3, 0.7) * L;
      const double sigma = rng.uniform(0.04, 0.1) * L;
      sc.blobs.push_back({rng.uniform(0.3, 0.8), c0, c1, sigma});
    }
  } else if (cls == "piecewise") {
    sc.ellipses.push_back({0.2, L / 2, L / 2, 0.4 * L, 0.4 * L, 0});
    for (int64_t k = rng.integers(2, 5); k > 0; --k) {
      const double c0 = rng.uniform(0.3, 0.7) * L, c1 = rng.uniform(0.3, 0.7) * L;
      const double a = rng.uniform(0.05, 0.15) * L, b = rng.uniform(0.05, 0.15) * L;
      const double psi = rng.uniform(0.0, std::numbers::pi);
      sc.ellipses.push_back({rng.uniform(0.2, 0.6), c0, c1, a, b, psi});
    }
  } else {
    FK_CHECK(false, "config key 'scene'", "shepp, blobs or piecewise", cls);
  }
  return sc;
}

std::vector<double> render(const Scene& s, int64_t m, int64_t sub, double L) {
  std::vector<double> v(m * m, 0.0);
  const double h = L / static_cast<double>(m * sub);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double acc = 0;
      for (int64_t a = 0; a < sub; ++a)
        for (int64_t b = 0; b < sub; ++b)
          acc += s.at((i * sub + a + 0.5) * h, (j * sub + b + 0.5) * h);
      v[i * m + j] = acc / static_cast<double>(sub * sub);
    }
  return v;
}

std::vector<double> sinogram(const Scene& s, int64_t n_views, double angle_range, int64_t n_det,
                             int64_t rays_per_bin, double L) {
  std::vector<double> y(n_views * n_det, 0.0);
  const double ds = L / static_cast<double>(n_det);
  for (int64_t v = 0; v < n_views; ++v) {
    const double th = angle_range * static_cast<double>(v) / n_views;
    for (int64_t j = 0; j < n_det; ++j) {
      double acc = 0;
      for (int64_t r = 0; r < rays_per_bin; ++r)
        acc += s.line_integral(th, j * ds + (r + 0.5) * ds / rays_per_bin - L / 2, L);
      y[v * n_det + j] = acc / static_cast<double>(rays_per_bin);
    }
  }
  return y;
}

}  // namespace nefi::ct
