#include "nefi/baselines/fbp.h"

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

}  // namespace

std::vector<double> filtered_back_projection(const std::vector<double>& sinogram, int64_t n_views,
                                             int64_t n_det, double angle_range, int64_t n,
                                             double L) {
  FK_CHECK(static_cast<int64_t>(sinogram.size()) == n_views * n_det, "nefi::fbp",
           std::to_string(n_views * n_det) + " sinogram values", std::to_string(sinogram.size()));
  const double ds = L / n_det, h = L / n;
  std::vector<double> img(n * n, 0.0);
  for (int64_t v = 0; v < n_views; ++v) {
    const double th = angle_range * static_cast<double>(v) / n_views;
    const double c = std::cos(th), s = std::sin(th);
    const auto q = ramp_filter(sinogram.data() + v * n_det, n_det, ds);
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
  for (double& x : img) x *= angle_range / static_cast<double>(n_views);
  return img;
}

std::vector<double> filtered_back_projection_slices(const std::vector<double>& sinogram,
                                                    int64_t n_views, int64_t n_det, int64_t n_z,
                                                    double angle_range, int64_t n, double L) {
  FK_CHECK(n_z >= 1 && static_cast<int64_t>(sinogram.size()) == n_views * n_det * n_z, "nefi::fbp",
           std::to_string(n_views * n_det * n_z) + " sinogram values",
           std::to_string(sinogram.size()));
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
