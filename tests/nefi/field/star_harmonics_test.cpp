// star_harmonics: the basis is the written-out low-degree harmonics and is
// orthonormal (mean square 1) over the circle and the sphere by quadrature,
// the gradient in u matches central differences, h is 0-homogeneous in u,
// and the degree gates open one after another.
#include "nefi/field/star_harmonics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

namespace {

constexpr double kPi = std::numbers::pi;

// The basis at direction u (no gates read: all coefficients 0).
std::vector<double> basis_at(int d, int L, const std::vector<double>& u) {
  const int n = nefi::star_harmonic_count(d, L);
  std::vector<double> c(n, 0.0), gates(L - 2, 1.0), y(n);
  double g[3];
  nefi::star_log_radius(d, L, u.data(), c.data(), gates.data(), g, y.data());
  return y;
}

TEST(NefiStarHarmonics, CountsAndDegrees) {
  EXPECT_EQ(nefi::star_harmonic_count(1, 6), 0);
  EXPECT_EQ(nefi::star_harmonic_count(2, 2), 0);
  EXPECT_EQ(nefi::star_harmonic_count(2, 6), 8);
  EXPECT_EQ(nefi::star_harmonic_count(3, 3), 7);
  EXPECT_EQ(nefi::star_harmonic_count(3, 4), 16);
  EXPECT_EQ(nefi::star_harmonic_degree(2, 0), 3);
  EXPECT_EQ(nefi::star_harmonic_degree(2, 5), 5);
  EXPECT_EQ(nefi::star_harmonic_degree(3, 6), 3);
  EXPECT_EQ(nefi::star_harmonic_degree(3, 7), 4);
  EXPECT_EQ(nefi::star_harmonic_degree(3, 15), 4);
}

TEST(NefiStarHarmonics, TheLowestDegreesAreTheWrittenOutHarmonics) {
  const double th = 0.7;
  const auto y2 = basis_at(2, 4, {2 * std::cos(th), 2 * std::sin(th)});  // |u| = 2
  EXPECT_NEAR(y2[0], std::sqrt(2.0) * std::cos(3 * th), 1e-14);
  EXPECT_NEAR(y2[1], std::sqrt(2.0) * std::sin(3 * th), 1e-14);
  EXPECT_NEAR(y2[3], std::sqrt(2.0) * std::sin(4 * th), 1e-14);
  const double x = 0.36, y = -0.48, z = 0.8;  // a unit vector, scaled by 3
  const auto y3 = basis_at(3, 3, {3 * x, 3 * y, 3 * z});
  // Degree 3, m = 0, 1 (cos), 3 (cos, sin), RMS 1 over the sphere.
  EXPECT_NEAR(y3[0], std::sqrt(7.0) * (5 * z * z * z - 3 * z) / 2, 1e-14);
  EXPECT_NEAR(y3[1], std::sqrt(21.0 / 8) * x * (5 * z * z - 1), 1e-14);
  EXPECT_NEAR(y3[5], std::sqrt(35.0 / 8) * (x * x * x - 3 * x * y * y), 1e-14);
  EXPECT_NEAR(y3[6], std::sqrt(35.0 / 8) * (3 * x * x * y - y * y * y), 1e-14);
}

// Mean of Y_i Y_j over the circle (uniform angles: exact for these
// trigonometric polynomials) and over the sphere (a midpoint rule in z and
// uniform azimuths): the identity.
TEST(NefiStarHarmonics, TheBasisIsOrthonormalOverTheCircleAndTheSphere) {
  for (int d = 2; d <= 3; ++d) {
    const int L = d == 2 ? 8 : 5, n = nefi::star_harmonic_count(d, L);
    std::vector<double> gram(n * n, 0.0);
    double weight = 0;
    const int nz = d == 2 ? 1 : 2000, nphi = 64;
    for (int a = 0; a < nz; ++a)
      for (int b = 0; b < nphi; ++b) {
        const double phi = 2 * kPi * (b + 0.3) / nphi;
        std::vector<double> u = {std::cos(phi), std::sin(phi)};
        if (d == 3) {
          const double z = -1 + 2 * (a + 0.5) / nz, r = std::sqrt(1 - z * z);
          u = {r * std::cos(phi), r * std::sin(phi), z};
        }
        const auto y = basis_at(d, L, u);
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j) gram[i * n + j] += y[i] * y[j];
        weight += 1;
      }
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        EXPECT_NEAR(gram[i * n + j] / weight, i == j ? 1.0 : 0.0, d == 2 ? 1e-12 : 1e-4)
            << d << "-D " << i << " " << j;
  }
}

TEST(NefiStarHarmonics, TheGradientInUMatchesCentralDifferences) {
  for (int d = 2; d <= 3; ++d) {
    const int L = 6, n = nefi::star_harmonic_count(d, L);
    std::vector<double> c(n), gates = {1.0, 0.8, 0.5, 0.2};
    for (int j = 0; j < n; ++j) c[j] = 0.3 * std::sin(1.7 * j + 0.4);
    std::vector<double> u = {0.4, -0.7, 0.25};
    u.resize(d);
    std::vector<double> y(n);
    double g[3], dummy[3];
    const double h0 = nefi::star_log_radius(d, L, u.data(), c.data(), gates.data(), g, y.data());
    // The value alone (no gradient asked) is the same value and basis.
    std::vector<double> y_alone(n);
    EXPECT_NEAR(
        nefi::star_log_radius(d, L, u.data(), c.data(), gates.data(), nullptr, y_alone.data()), h0,
        1e-15);
    for (int j = 0; j < n; ++j) EXPECT_NEAR(y_alone[j], y[j], 1e-15) << j;
    for (int a = 0; a < d; ++a) {
      std::vector<double> up = u, down = u;
      up[a] += 1e-6;
      down[a] -= 1e-6;
      const double fd =
          (nefi::star_log_radius(d, L, up.data(), c.data(), gates.data(), dummy, y.data()) -
           nefi::star_log_radius(d, L, down.data(), c.data(), gates.data(), dummy, y.data())) /
          2e-6;
      EXPECT_NEAR(g[a], fd, 1e-7) << d << "-D axis " << a;
    }
    // h reads only the direction: 0-homogeneous, so u . grad h = 0.
    std::vector<double> far = u;
    for (double& e : far) e *= 3.5;
    EXPECT_NEAR(nefi::star_log_radius(d, L, far.data(), c.data(), gates.data(), dummy, y.data()),
                h0, 1e-13);
    double radial = 0;
    for (int a = 0; a < d; ++a) radial += u[a] * g[a];
    EXPECT_NEAR(radial, 0.0, 1e-13);
    // At the centre nothing is defined and everything reads 0.
    const std::vector<double> zero(d, 0.0);
    EXPECT_EQ(nefi::star_log_radius(d, L, zero.data(), c.data(), gates.data(), g, y.data()), 0.0);
    for (int a = 0; a < d; ++a) EXPECT_EQ(g[a], 0.0);
  }
}

TEST(NefiStarHarmonics, TheDegreesOpenOneAfterAnother) {
  double g[4];  // degrees 3..6
  nefi::star_degree_gates(6, 0.0, g);
  for (double e : g) EXPECT_EQ(e, 0.0);
  nefi::star_degree_gates(6, 0.375, g);  // degree 3 open, 4 half, 5 and 6 shut
  EXPECT_DOUBLE_EQ(g[0], 1.0);
  EXPECT_NEAR(g[1], 0.5, 1e-15);
  EXPECT_EQ(g[2], 0.0);
  EXPECT_EQ(g[3], 0.0);
  nefi::star_degree_gates(6, 1.0, g);
  for (double e : g) EXPECT_DOUBLE_EQ(e, 1.0);
}

}  // namespace
