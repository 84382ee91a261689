#include "nefi/field/star_harmonics.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <type_traits>

#include "fk/error.h"

namespace nefi {
namespace {

// A value with its gradient in u (up to 3 entries).
struct Dual {
  double v = 0, g[3] = {0, 0, 0};
};

Dual operator*(const Dual& a, const Dual& b) {
  Dual r;
  r.v = a.v * b.v;
  for (int k = 0; k < 3; ++k) r.g[k] = a.g[k] * b.v + a.v * b.g[k];
  return r;
}
Dual operator*(double s, const Dual& a) {
  Dual r;
  r.v = s * a.v;
  for (int k = 0; k < 3; ++k) r.g[k] = s * a.g[k];
  return r;
}
Dual operator+(const Dual& a, const Dual& b) {
  Dual r;
  r.v = a.v + b.v;
  for (int k = 0; k < 3; ++k) r.g[k] = a.g[k] + b.g[k];
  return r;
}
Dual operator-(const Dual& a, const Dual& b) {
  return a + (-1.0) * b;
}

}  // namespace

namespace {
// Entries of degrees 1..l.
int entries_through(int ndim, int l) {
  return ndim == 2 ? 2 * l : (l + 1) * (l + 1) - 1;
}
}  // namespace

int star_harmonic_count(int ndim, int degree) {
  if (ndim < 2 || degree < kStarMinDegree) return 0;
  return entries_through(ndim, degree) - entries_through(ndim, kStarMinDegree - 1);
}

int star_harmonic_degree(int ndim, int j) {
  FK_CHECK((ndim == 2 || ndim == 3) && j >= 0 && j < star_harmonic_count(ndim, kStarMaxDegree),
           "nefi::star_harmonic_degree",
           "a coefficient of a 2- or 3-D outline of degree <= " + std::to_string(kStarMaxDegree),
           std::to_string(j) + " in " + std::to_string(ndim) + "-D");
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

namespace {

template <class T>
T constant(double v) {
  if constexpr (std::is_same_v<T, double>)
    return v;
  else {
    T r;
    r.v = v;
    return r;
  }
}

// The harmonics of degrees 1..L at the unit vector n (ndim entries): y gets
// entries_through(ndim, L) values, in doubles or carrying their gradient.
template <class T>
void harmonics_at(int ndim, int degree, const T* n, T* y) {
  // (n_x + i n_y)^m: cos and sin of m times the azimuth, times sin^m of the
  // polar angle in 3-D.
  T re[kStarMaxDegree + 1], im[kStarMaxDegree + 1];
  re[0] = constant<T>(1);
  im[0] = constant<T>(0);
  for (int m = 1; m <= degree; ++m) {
    re[m] = re[m - 1] * n[0] - im[m - 1] * n[1];
    im[m] = re[m - 1] * n[1] + im[m - 1] * n[0];
  }
  if (ndim == 2) {
    for (int l = 1; l <= degree; ++l) {
      y[2 * (l - 1)] = std::numbers::sqrt2 * re[l];
      y[2 * (l - 1) + 1] = std::numbers::sqrt2 * im[l];
    }
    return;
  }
  // p[l][m] = P_l^m(z) / (1 - z^2)^(m / 2), a polynomial in z = n_z.
  T p[kStarMaxDegree + 1][kStarMaxDegree + 1];
  const T& z = n[2];
  double odd_factorial = 1;  // (2m - 1)!!
  for (int m = 0; m <= degree; ++m) {
    if (m > 0) odd_factorial *= 2 * m - 1;
    p[m][m] = constant<T>(odd_factorial);
    if (m + 1 <= degree) p[m + 1][m] = (2.0 * m + 1) * (z * p[m][m]);
    for (int l = m + 2; l <= degree; ++l)
      p[l][m] = (1.0 / (l - m)) * ((2.0 * l - 1) * (z * p[l - 1][m]) - (l + m - 1.0) * p[l - 2][m]);
  }
  for (int l = 1; l <= degree; ++l) {
    const int at = l * l - 1;
    y[at] = std::sqrt(2.0 * l + 1) * p[l][0];
    double ratio = 1;  // (l - m)! / (l + m)!
    for (int m = 1; m <= l; ++m) {
      ratio /= static_cast<double>(l + m) * (l - m + 1);
      const double norm = std::sqrt(2.0 * (2 * l + 1) * ratio);
      y[at + 2 * m - 1] = norm * (p[l][m] * re[m]);
      y[at + 2 * m] = norm * (p[l][m] * im[m]);
    }
  }
}

// h = sum_j c_j g_l(j) Y_j over degrees 3..L; basis gets the Y_j's values.
template <class T>
T gated_sum(int ndim, int degree, const T* y, const double* c, const double* gates, double* basis) {
  T h = constant<T>(0);
  const int skip = entries_through(ndim, kStarMinDegree - 1);
  for (int l = kStarMinDegree, j = 0; l <= degree; ++l)
    for (int e = 0; e < (ndim == 2 ? 2 : 2 * l + 1); ++e, ++j) {
      const T& v = y[skip + j];
      if constexpr (std::is_same_v<T, double>)
        basis[j] = v;
      else
        basis[j] = v.v;
      h = h + (c[j] * gates[l - kStarMinDegree]) * v;
    }
  return h;
}

}  // namespace

double star_log_radius(int ndim, int degree, const double* u, const double* c, const double* gates,
                       double* dh_du, double* basis) {
  const int count = star_harmonic_count(ndim, degree);
  FK_CHECK(ndim >= 1 && ndim <= 3 && degree <= kStarMaxDegree && (count == 0 || basis),
           "nefi::star_log_radius",
           "1-3 axes, a degree <= " + std::to_string(kStarMaxDegree) + " and a basis buffer",
           std::to_string(ndim) + " axes, degree " + std::to_string(degree));
  if (dh_du)
    for (int a = 0; a < ndim; ++a) dh_du[a] = 0;
  std::fill(basis, basis + count, 0.0);
  double s2 = 0;
  for (int a = 0; a < ndim; ++a) s2 += u[a] * u[a];
  if (count == 0 || s2 == 0) return 0;
  const double s = std::sqrt(s2);
  if (!dh_du) {  // the value alone: plain doubles
    double n[3], y[(kStarMaxDegree + 1) * (kStarMaxDegree + 1)];
    for (int i = 0; i < ndim; ++i) n[i] = u[i] / s;
    harmonics_at(ndim, degree, n, y);
    return gated_sum(ndim, degree, y, c, gates, basis);
  }
  // n = u / |u|, with dn_i / du_k = (delta_ik - n_i n_k) / |u|.
  Dual n[3];
  for (int i = 0; i < ndim; ++i) {
    n[i].v = u[i] / s;
    for (int k = 0; k < ndim; ++k) n[i].g[k] = ((i == k ? 1.0 : 0.0) - u[i] * u[k] / s2) / s;
  }
  Dual y[(kStarMaxDegree + 1) * (kStarMaxDegree + 1)];
  harmonics_at(ndim, degree, n, y);
  const Dual h = gated_sum(ndim, degree, y, c, gates, basis);
  for (int a = 0; a < ndim; ++a) dh_du[a] = h.g[a];
  return h.v;
}

}  // namespace nefi
