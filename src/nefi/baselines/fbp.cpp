#include "nefi/baselines/fbp.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "fk/error.h"

namespace nefi {
namespace {

// One projection convolved with the Kak-Slaney ramp, times ds.
std::vector<double> ramp_filter(const double* p, int64_t nd, double ds) {
  std::vector<double> q(nd, 0.0);
  const double pi2 = std::numbers::pi * std::numbers::pi;
  for (int64_t j = 0; j < nd; ++j) {
    double acc = 0;
    for (int64_t i = 0; i < nd; ++i) {
      const int64_t k = j - i;
      double h = 0;
      if (k == 0) {
        h = 1.0 / (4 * ds * ds);
      } else if (k % 2 != 0) {
        h = -1.0 / (pi2 * static_cast<double>(k * k) * ds * ds);
      }
      acc += h * p[i];
    }
    q[j] = acc * ds;
  }
  return q;
}

// How many views of a range [0, range) see the lines of direction th: a view
// and its opposite one (th + pi) measure the same lines, so over 2 pi each is
// seen twice, over 3 pi / 2 the first quarter turn twice and the rest once.
double direction_multiplicity(double th, double range) {
  // th's offset past the last multiple of pi, with th a hair under a multiple
  // (range v / n rounded down) taken as on it: fmod gave pi - 1 ulp there, one
  // view too few, and that view twice the weight of the others.
  const double pi = std::numbers::pi;
  const double c = std::max(0.0, th - pi * std::floor(th / pi + 1e-9));
  return std::max(1.0, std::ceil((range - c) / pi - 1e-9));
}

}  // namespace

std::vector<double> filtered_back_projection(const std::vector<double>& sinogram, int64_t n_views,
                                             int64_t n_det, double angle_range, int64_t n,
                                             double L) {
  FK_CHECK(static_cast<int64_t>(sinogram.size()) == n_views * n_det, "nefi::fbp",
           fk::to_text(n_views * n_det) + " sinogram values", fk::to_text(sinogram.size()));
  const double ds = L / n_det, h = L / n;
  std::vector<double> img(n * n, 0.0);
  for (int64_t v = 0; v < n_views; ++v) {
    const double th = angle_range * static_cast<double>(v) / n_views;
    const double c = std::cos(th), s = std::sin(th);
    // dth = angle_range / n_views, shared among the views seeing the same lines.
    const double weight =
        angle_range / static_cast<double>(n_views) / direction_multiplicity(th, angle_range);
    auto q = ramp_filter(sinogram.data() + v * n_det, n_det, ds);
    for (double& x : q) x *= weight;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const double x0 = (i + 0.5) * h - L / 2, x1 = (j + 0.5) * h - L / 2;
        const double u = (x0 * c + x1 * s + L / 2) / ds - 0.5;  // detector bin coordinate
        const double fu = std::floor(u);
        const int64_t b = static_cast<int64_t>(fu);
        const double a = u - fu;
        double val = 0;
        if (b >= 0 && b < n_det) val += (1 - a) * q[b];
        if (b + 1 >= 0 && b + 1 < n_det) val += a * q[b + 1];
        img[i * n + j] += val;
      }
  }
  return img;
}

std::vector<double> filtered_back_projection_slices(const std::vector<double>& sinogram,
                                                    int64_t n_views, int64_t n_det, int64_t n_z,
                                                    double angle_range, int64_t n, double L) {
  FK_CHECK(n_z >= 1 && static_cast<int64_t>(sinogram.size()) == n_views * n_det * n_z, "nefi::fbp",
           fk::to_text(n_views * n_det * n_z) + " sinogram values", fk::to_text(sinogram.size()));
  std::vector<double> vol(n * n * n_z), plane(n_views * n_det);
  for (int64_t k = 0; k < n_z; ++k) {
    for (int64_t r = 0; r < n_views * n_det; ++r) plane[r] = sinogram[r * n_z + k];
    const std::vector<double> img =
        filtered_back_projection(plane, n_views, n_det, angle_range, n, L);
    for (int64_t p = 0; p < n * n; ++p) vol[p * n_z + k] = img[p];
  }
  return vol;
}

}  // namespace nefi
