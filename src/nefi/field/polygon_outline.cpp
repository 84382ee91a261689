#include "nefi/field/polygon_outline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace nefi {

double polygon_log_radius(int vertices, const double* u, const double* c, double* dh_du, int* first,
                          double* dh_dc) {
  const double s2 = u[0] * u[0] + u[1] * u[1];
  *first = 0;
  dh_dc[0] = dh_dc[1] = 0;
  if (dh_du != nullptr) dh_du[0] = dh_du[1] = 0;
  if (s2 == 0) return 0;
  // A diverged shape: NaN flows on (as through a star) and no sector is read.
  if (!std::isfinite(s2)) return std::numeric_limits<double>::quiet_NaN();
  const double step = 2 * std::numbers::pi / vertices;
  double theta = std::atan2(u[1], u[0]);
  if (theta < 0) theta += 2 * std::numbers::pi;
  const int j = std::min(static_cast<int>(theta / step), vertices - 1);
  const int k = (j + 1) % vertices;
  const double phi = theta - j * step;
  const double rj = std::exp(c[j]), rk = std::exp(c[k]);
  const double a = rj * std::sin(phi), b = rk * std::sin(step - phi);
  const double den = a + b;  // > 0: the sector is under pi wide
  *first = j;
  dh_dc[0] = b / den;  // d h / d c_j = 1 - a / den
  dh_dc[1] = a / den;
  if (dh_du != nullptr) {
    // d h / d theta, times d theta / d u = (-u_y, u_x) / |u|^2.
    const double dh = -(rj * std::cos(phi) - rk * std::cos(step - phi)) / den;
    dh_du[0] = -dh * u[1] / s2;
    dh_du[1] = dh * u[0] / s2;
  }
  return c[j] + c[k] + std::log(std::sin(step)) - std::log(den);
}

double polygon_start_log_radius(int vertices) {
  const double step = 2 * std::numbers::pi / vertices;
  return 0.5 * std::log(step / std::sin(step));
}

double polygon_gate(double progress) {
  const double t = std::clamp(2 * progress, 0.0, 1.0);
  return 0.5 - 0.5 * std::cos(std::numbers::pi * t);
}

}  // namespace nefi
