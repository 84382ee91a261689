#include "nefi/operators/reaction_diffusion/gray_scott.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/random.h"

namespace {

namespace gs = nefi::gray_scott;

std::vector<double> uniform_values(int64_t n, double lo, double hi, uint64_t seed) {
  fk::Generator gen(seed);
  auto v = fk::rand({n}, {fk::DType::F64}, &gen).to_vector<double>();
  for (double& x : v) x = lo + (hi - lo) * x;
  return v;
}

double sum(const std::vector<double>& a) {
  double s = 0;
  for (double x : a) s += x;
  return s;
}

// With F = k = 0 the reaction only turns u into v and the flux-form
// diffusion only moves mass between cells: sum(u + v) holds to round-off
// for both boundary kinds.
TEST(NefiGrayScott, PureExchangeConservesMass) {
  for (gs::Boundary b : {gs::Boundary::kNeumann, gs::Boundary::kPeriodic}) {
    const gs::Grid g{17, 12, 0.02, 0.03, b};
    const gs::Rates r{0.0, 2e-5, 1e-5};
    auto u = uniform_values(g.size(), 0, 1, 1), v = uniform_values(g.size(), 0, 1, 2);
    const std::vector<double> F(g.size(), 0.0);
    const double before = sum(u) + sum(v);
    gs::Workspace w(g.size());
    const int64_t m = gs::stable_substeps(g, r, 1.0, 0.0);
    for (int s = 0; s < 500 * m; ++s) gs::step(g, r, F.data(), 1.0 / m, u.data(), v.data(), w);
    EXPECT_NEAR(sum(u) + sum(v), before, 1e-13 * before);
    // ... while the reaction did turn u into v.
    EXPECT_GT(std::abs(sum(u) - sum(uniform_values(g.size(), 0, 1, 1))), 1e-3);
  }
}

// Uniform states solve the ODE: (1, 0) always, and for F^2 > 4 F (F + k)^2
// the two roots of (F + k) v^2 - F v + F (F + k) = 0 with u = (F + k) / v.
// A grid one cell wide along axis 1 is refused (the unrolled row ends read
// before the row); two cells agree with the flux-form diffusion at D = 1.
TEST(NefiGrayScott, LaplacianNeedsTwoCellsAlongAxisOne) {
  std::vector<double> x(4, 1.0), y(4);
  EXPECT_THROW(gs::laplacian({4, 1, 0.1, 0.1, gs::Boundary::kNeumann}, x.data(), y.data()),
               fk::Error);
  const gs::Grid g{3, 2, 0.1, 0.2, gs::Boundary::kPeriodic};
  const auto u = uniform_values(g.size(), 0, 1, 4);
  const std::vector<double> D(g.size(), 1.0);
  std::vector<double> a(g.size()), b(g.size());
  gs::laplacian(g, u.data(), a.data());
  gs::diffusion(g, D.data(), u.data(), b.data());
  for (int64_t i = 0; i < g.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12) << i;
}

TEST(NefiGrayScott, HomogeneousSteadyStatesStay) {
  const gs::Grid g{8, 8, 0.02, 0.02, gs::Boundary::kNeumann};
  const double F0 = 0.05, k = 0.05;
  const gs::Rates r{k, 2e-5, 1e-5};
  const double disc = std::sqrt(F0 * F0 - 4 * F0 * (F0 + k) * (F0 + k));
  const std::vector<double> F(g.size(), F0);
  for (double v0 : {0.0, (F0 + disc) / (2 * (F0 + k)), (F0 - disc) / (2 * (F0 + k))}) {
    const double u0 = v0 == 0 ? 1.0 : (F0 + k) / v0;
    std::vector<double> u(g.size(), u0), v(g.size(), v0);
    gs::Workspace w(g.size());
    for (int s = 0; s < 200; ++s) gs::step(g, r, F.data(), 0.5, u.data(), v.data(), w);
    for (int64_t i = 0; i < g.size(); ++i) {
      EXPECT_NEAR(u[i], u0, 1e-11) << v0;
      EXPECT_NEAR(v[i], v0, 1e-11) << v0;
    }
  }
}

// At the stability-derived substep u and v stay in [0, 1] over 2000 time
// units, from the analytic initial condition with a random F field.
TEST(NefiGrayScott, StatesStayInTheUnitInterval) {
  const gs::Grid g{32, 32, 0.02, 0.02, gs::Boundary::kNeumann};
  const gs::Rates r;
  const auto F = uniform_values(g.size(), 0.02, 0.07, 3);
  const int64_t m = gs::stable_substeps(g, r, 1.0, 0.07);
  const double rate = 2e-5 * (4 / (0.02 * 0.02)) + 0.07 + r.k + 1;
  EXPECT_LE(rate / m, 1.0);
  EXPECT_GT(rate / (m - 1), 1.0);
  std::vector<double> u, v;
  gs::initial_condition(g, 2, 3, u, v);
  gs::Workspace w(g.size());
  double lo = 1, hi = 0;
  for (int64_t s = 0; s < 2000 * m; ++s) {
    gs::step(g, r, F.data(), 1.0 / m, u.data(), v.data(), w);
    for (int64_t i = 0; i < g.size(); ++i) {
      lo = std::min({lo, u[i], v[i]});
      hi = std::max({hi, u[i], v[i]});
    }
  }
  EXPECT_GE(lo, 0.0);
  EXPECT_LE(hi, 1.0);
}

// The variable-coefficient diffusion: D lap(x) for a constant D, flux form
// (sums to zero) for any D, symmetric (<L x, y> = <x, L y>), and the
// harmonic face mean, exact for a two-layer medium in series.
TEST(NefiGrayScott, DiffusionWithHarmonicFaces) {
  for (gs::Boundary b : {gs::Boundary::kNeumann, gs::Boundary::kPeriodic}) {
    const gs::Grid g{7, 6, 0.02, 0.03, b};
    const auto x = uniform_values(g.size(), 0, 1, 4), y = uniform_values(g.size(), 0, 1, 5);
    const auto D = uniform_values(g.size(), 1e-5, 4e-5, 6);
    std::vector<double> lx(g.size()), dx(g.size()), dy(g.size());
    gs::laplacian(g, x.data(), lx.data());
    gs::diffusion(g, std::vector<double>(g.size(), 3e-5).data(), x.data(), dx.data());
    for (int64_t i = 0; i < g.size(); ++i) EXPECT_NEAR(dx[i], 3e-5 * lx[i], 1e-15);
    gs::diffusion(g, D.data(), x.data(), dx.data());
    gs::diffusion(g, D.data(), y.data(), dy.data());
    double s = 0, xy = 0, yx = 0, scale = 0;
    for (int64_t i = 0; i < g.size(); ++i) {
      s += dx[i], xy += dx[i] * y[i], yx += x[i] * dy[i], scale += std::abs(dx[i]);
    }
    EXPECT_NEAR(s, 0.0, 1e-14 * scale);
    EXPECT_NEAR(xy, yx, 1e-14 * scale);
  }
  // Two cells of D = 1 and 4: the face carries 2*1*4/5 = 1.6 (x_b - x_a)/h^2.
  const gs::Grid g{2, 1, 1.0, 1.0, gs::Boundary::kNeumann};
  const std::vector<double> D{1, 4}, x{0, 1};
  std::vector<double> y(2);
  gs::diffusion(g, D.data(), x.data(), y.data());
  EXPECT_DOUBLE_EQ(y[0], 1.6);
  EXPECT_DOUBLE_EQ(y[1], -1.6);
}

}  // namespace
