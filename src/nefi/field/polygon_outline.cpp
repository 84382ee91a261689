#include "nefi/field/polygon_outline.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "nefi/cuda/parametric_cells.h"

namespace nefi {

double polygon_log_radius(int vertices, const double* u, const double* c, double* dh_du, int* first,
                          double* dh_dc) {
  return cuda::polygon_log_radius_at(vertices, u, c, dh_du, first, dh_dc);
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
