#include "nefi/operators/elliptic/elliptic_grid.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/operators/elliptic/elliptic_cg.h"

namespace {

using nefi::elliptic::Boundary;
using nefi::elliptic::EllipticGrid;
using nefi::elliptic::FaceMean;
constexpr double kPi = std::numbers::pi;

EllipticGrid box(fk::Dims shape, const std::string& bc, double len = 1.0) {
  EllipticGrid g;
  g.shape = shape;
  for (int64_t n : shape) g.spacing.push_back(len / static_cast<double>(n));
  g.boundary = nefi::elliptic::parse_boundary(bc, static_cast<int>(shape.size()));
  return g;
}

// Solves A u = f to 1e-13 in f64.
std::vector<double> solve(const EllipticGrid& g, const std::vector<double>& sigma,
                          const std::vector<double>& f, const std::vector<double>* kappa) {
  const auto sys = nefi::elliptic::build_face_system<double>(
      g, 1, sigma.data(), false, kappa ? kappa->data() : nullptr, false);
  std::vector<double> u(f.size());
  nefi::elliptic::CgOptions o;
  o.tol = 1e-13;
  o.project = !g.has_dirichlet() && !kappa;
  const auto st = nefi::elliptic::pcg_solve<double>(g, sys, f.data(), u.data(), 1, false, o);
  EXPECT_EQ(st.unconverged, 0);
  return u;
}

TEST(NefiEllipticGrid, ParsesBoundariesAndRejectsBadOnes) {
  const auto b = nefi::elliptic::parse_boundary("dirichlet:neumann,periodic", 2);
  EXPECT_EQ(b[0][0], Boundary::kDirichlet);
  EXPECT_EQ(b[0][1], Boundary::kNeumann);
  EXPECT_EQ(b[1][0], Boundary::kPeriodic);
  EXPECT_EQ(nefi::elliptic::parse_boundary("neumann", 3).size(), 3u);
  EXPECT_THROW(nefi::elliptic::parse_boundary("robin", 2), fk::Error);
  EXPECT_THROW(nefi::elliptic::parse_boundary("dirichlet,neumann", 3), fk::Error);
  EXPECT_THROW(nefi::elliptic::parse_boundary("periodic:neumann", 1), fk::Error);
  EXPECT_THROW(nefi::elliptic::parse_boundary("dirichlet:neumann:neumann", 1), fk::Error);
  EllipticGrid g = box({4, 4, 4, 4}, "neumann");
  EXPECT_THROW(g.validate(), fk::Error);
  g = box({4, 4}, "neumann");
  g.spacing[1] = 0;
  EXPECT_THROW(g.validate(), fk::Error);
  g = box({4}, "neumann");
  std::vector<double> sigma{1, 1, -1, 1};
  EXPECT_THROW(nefi::elliptic::build_face_system<double>(g, 1, sigma.data(), false, nullptr, false),
               fk::Error);
}

// ⟨A x, y⟩ = ⟨x, A y⟩ to round-off on a 3-D grid with every boundary kind,
// and A is the plainly written 3-point operator in 1-D.
TEST(NefiEllipticGrid, OperatorIsSymmetricAndMatchesThePlainStencil) {
  const EllipticGrid g = box({5, 4, 3}, "dirichlet:neumann,periodic,neumann:dirichlet");
  fk::Generator gen(3);
  const auto sigma = fk::rand({g.numel()}, {fk::DType::F64}, &gen).to_vector<double>();
  std::vector<double> s(sigma), kappa(g.numel());
  for (auto& v : s) v += 0.2;
  for (auto& v : kappa) v = 0.3;
  const auto sys =
      nefi::elliptic::build_face_system<double>(g, 1, s.data(), false, kappa.data(), false);
  const auto x = fk::randn({g.numel()}, {fk::DType::F64}, &gen).to_vector<double>();
  const auto y = fk::randn({g.numel()}, {fk::DType::F64}, &gen).to_vector<double>();
  std::vector<double> ax(x.size()), ay(y.size());
  nefi::elliptic::apply_face_system<double>(g, sys, 0, x.data(), ax.data());
  nefi::elliptic::apply_face_system<double>(g, sys, 0, y.data(), ay.data());
  double l = 0, r = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    l += ax[i] * y[i], r += x[i] * ay[i];
    scale += std::abs(ax[i] * y[i]);
  }
  EXPECT_NEAR(l, r, 1e-14 * scale);

  const EllipticGrid g1 = box({4}, "dirichlet:neumann", 2.0);
  const std::vector<double> s1{1, 2, 4, 3}, u{0.5, -1, 2, 1};
  const auto sys1 =
      nefi::elliptic::build_face_system<double>(g1, 1, s1.data(), false, nullptr, false);
  std::vector<double> q(4);
  nefi::elliptic::apply_face_system<double>(g1, sys1, 0, u.data(), q.data());
  const double h2 = 0.25;
  auto k = [&](int i, int j) { return 2 * s1[i] * s1[j] / (s1[i] + s1[j]) / h2; };
  const std::vector<double> want{2 * s1[0] / h2 * u[0] + k(0, 1) * (u[0] - u[1]),
                                 k(0, 1) * (u[1] - u[0]) + k(1, 2) * (u[1] - u[2]),
                                 k(1, 2) * (u[2] - u[1]) + k(2, 3) * (u[2] - u[3]),
                                 k(2, 3) * (u[3] - u[2])};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(q[i], want[i], 1e-13) << i;
}

// u = sin(πx) sin(πy), σ = 1 + ½ sin(πx) sin(πy), κ = 1, Dirichlet: the max
// error falls 4× per refinement (second order) once in the asymptotic range.
TEST(NefiEllipticGrid, ManufacturedSolutionConvergesAtSecondOrder) {
  std::vector<double> err;
  for (int64_t n : {16, 32, 64, 128}) {
    const EllipticGrid g = box({n, n}, "dirichlet");
    std::vector<double> sigma(n * n), f(n * n), exact(n * n), kappa(n * n, 1.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const double x = (i + 0.5) / n, y = (j + 0.5) / n;
        const double sx = std::sin(kPi * x), sy = std::sin(kPi * y);
        const double cx = std::cos(kPi * x), cy = std::cos(kPi * y);
        const double s = 1 + 0.5 * sx * sy;
        sigma[i * n + j] = s;
        exact[i * n + j] = sx * sy;
        f[i * n + j] = s * 2 * kPi * kPi * sx * sy -
                       0.5 * kPi * kPi * (cx * cx * sy * sy + sx * sx * cy * cy) + sx * sy;
      }
    const auto u = solve(g, sigma, f, &kappa);
    double e = 0;
    for (size_t i = 0; i < u.size(); ++i) e = std::max(e, std::abs(u[i] - exact[i]));
    err.push_back(e);
  }
  // Pre-asymptotic at 16 (ratios 3.57, 3.79, ...): rising towards 4.
  for (int k = 0; k + 1 < 4; ++k) {
    EXPECT_GT(err[k] / err[k + 1], 3.5) << k;
    EXPECT_LT(err[k] / err[k + 1], 4.2) << k;
  }
  EXPECT_GT(err[2] / err[3], 3.88);
}

// 3-D with Dirichlet x, periodic y, Neumann z: u = sin(πx) cos(2πy) cos(πz),
// σ = 2, κ = 1.
TEST(NefiEllipticGrid, MixedBoundaries3DConvergeAtSecondOrder) {
  std::vector<double> err;
  for (int64_t n : {8, 16}) {
    const EllipticGrid g = box({n, n, n}, "dirichlet,periodic,neumann");
    std::vector<double> sigma(g.numel(), 2.0), kappa(g.numel(), 1.0), f(g.numel()), ex(g.numel());
    for (int64_t i = 0; i < g.numel(); ++i) {
      const double x = (i / (n * n) + 0.5) / n, y = ((i / n) % n + 0.5) / n, z = (i % n + 0.5) / n;
      ex[i] = std::sin(kPi * x) * std::cos(2 * kPi * y) * std::cos(kPi * z);
      f[i] = (2 * kPi * kPi * 6 + 1) * ex[i];
    }
    const auto u = solve(g, sigma, f, &kappa);
    double e = 0;
    for (size_t i = 0; i < u.size(); ++i) e = std::max(e, std::abs(u[i] - ex[i]));
    err.push_back(e);
  }
  EXPECT_GT(err[0] / err[1], 3.5);
  EXPECT_LT(err[0] / err[1], 4.5);
}

// Layers in series: a flux j enters at x = 0 (a Neumann side, the source j/h
// in the first cell) and leaves through u = 0 at x = 1. Then σu' = −j
// everywhere, so at the centres u_i = j (h/(2σ_i) + Σ_{k>i} h/σ_k): the
// harmonic mean reproduces it to round-off; the arithmetic mean
// under-estimates the resistance (by > 20 % at a 1:100 contrast).
TEST(NefiEllipticGrid, HarmonicMeanIsExactForLayersInSeries) {
  const int64_t n = 12;
  const EllipticGrid g = box({n}, "neumann:dirichlet");
  const double h = 1.0 / n, j = 1.5;
  std::vector<double> sigma(n), f(n, 0.0), exact(n);
  for (int64_t i = 0; i < n; ++i) sigma[i] = (i / 3) % 2 ? 100.0 : 1.0 + 0.1 * i;
  f[0] = j / h;
  for (int64_t i = 0; i < n; ++i) {
    exact[i] = j * h / (2 * sigma[i]);
    for (int64_t k = i + 1; k < n; ++k) exact[i] += j * h / sigma[k];
  }
  const auto u = solve(g, sigma, f, nullptr);
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(u[i], exact[i], 1e-12 * exact[0]) << i;
  EllipticGrid ga = g;
  ga.face_mean = FaceMean::kArithmetic;
  const auto ua = solve(ga, sigma, f, nullptr);
  EXPECT_LT(ua[0], 0.8 * exact[0]);
}

}  // namespace
