#include "nefi/field/star_harmonics.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "fk/error.h"
#include "nefi/cuda/parametric_cells.h"

namespace nefi {

int star_harmonic_count(int ndim, int degree) {
  if (ndim < 2 || degree < kStarMinDegree) return 0;
  return cuda::star_entries_through(ndim, degree) -
         cuda::star_entries_through(ndim, kStarMinDegree - 1);
}

int star_harmonic_degree(int ndim, int j) {
  FK_CHECK((ndim == 2 || ndim == 3) && j >= 0 && j < star_harmonic_count(ndim, kStarMaxDegree),
           "nefi::star_harmonic_degree",
           "a coefficient of a 2- or 3-D outline of degree <= " + fk::to_text(kStarMaxDegree),
           fk::to_text(j) + " in " + fk::to_text(ndim) + "-D");
  int l = kStarMinDegree;
  while (star_harmonic_count(ndim, l) <= j) ++l;
  return l;
}

void star_degree_gates(int degree, double progress, double* gates) {
  const int n = degree - kStarMinDegree + 1;
  for (int i = 0; i < n; ++i) {
    const double t = std::clamp(progress * n - i, 0.0, 1.0);
    gates[i] = 0.5 * (1 - std::cos(std::numbers::pi * t));
  }
}

double star_log_radius(int ndim, int degree, const double* u, const double* c, const double* gates,
                       double* dh_du, double* basis) {
  const int count = star_harmonic_count(ndim, degree);
  FK_CHECK(ndim >= 1 && ndim <= 3 && degree <= kStarMaxDegree && (count == 0 || basis),
           "nefi::star_log_radius",
           "1-3 axes, a degree <= " + fk::to_text(kStarMaxDegree) + " and a basis buffer",
           fk::to_text(ndim) + " axes, degree " + fk::to_text(degree));
  return cuda::star_log_radius_at(ndim, degree, u, c, gates, dh_du, basis);
}

}  // namespace nefi
