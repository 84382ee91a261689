#include "nefi/solve/lbfgs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "fk/error.h"

namespace {

using Vec = std::vector<double>;

double rosenbrock(const Vec& x, Vec& g) {
  const double a = 1 - x[0], b = x[1] - x[0] * x[0];
  g = {-2 * a - 400 * x[0] * b, 200 * b};
  return a * a + 100 * b * b;
}

// ½ xᵀAx − bᵀx with A = tridiag(−1, 2.5, −1) (SPD, condition ≈ 9) and b = A x*.
struct Quadratic {
  int n;
  Vec xstar, b;
  explicit Quadratic(int n_) : n(n_), xstar(n_), b(n_) {
    for (int i = 0; i < n; ++i) xstar[i] = std::sin(1.0 + i);
    b = apply(xstar);
  }
  Vec apply(const Vec& x) const {
    Vec y(n);
    for (int i = 0; i < n; ++i)
      y[i] = 2.5 * x[i] - (i > 0 ? x[i - 1] : 0) - (i + 1 < n ? x[i + 1] : 0);
    return y;
  }
  double operator()(const Vec& x, Vec& g) const {
    const Vec ax = apply(x);
    double f = 0;
    g.resize(n);
    for (int i = 0; i < n; ++i) {
      g[i] = ax[i] - b[i];
      f += 0.5 * x[i] * ax[i] - b[i] * x[i];
    }
    return f;
  }
};

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// The accepted step meets both strong Wolfe conditions, and the returned
// value and gradient are those at x0 + t d — from trial steps far too short
// (bracketing grows them) and far too long (zoom shrinks them).
TEST(NefiLbfgs, StrongWolfeConditionsHoldAtTheAcceptedStep) {
  const Vec x0{-1.2, 1.0};
  Vec g0;
  const double f0 = rosenbrock(x0, g0);
  const Vec d{-g0[0], -g0[1]};
  const double gtd0 = dot(g0, d);
  for (double trial : {1e-6, 1e-4, 1e-3, 1.0, 10.0}) {
    auto phi = [&](double t, Vec& g) {
      return rosenbrock({x0[0] + t * d[0], x0[1] + t * d[1]}, g);
    };
    const nefi::LineSearchResult r = nefi::strong_wolfe(phi, f0, g0, d, trial, gtd0);
    EXPECT_LE(r.f, f0 + 1e-4 * r.t * gtd0) << trial;
    EXPECT_LE(std::abs(dot(r.g, d)), 0.9 * std::abs(gtd0)) << trial;
    Vec g;
    EXPECT_DOUBLE_EQ(r.f, phi(r.t, g)) << trial;
    EXPECT_EQ(r.g, g) << trial;
    EXPECT_GE(r.evals, 1);
    EXPECT_LE(r.evals, 25);
  }
  // A 1-D parabola (x − 3)² from 0: the cubic model is exact, so one
  // interpolation lands on the minimiser whichever side the trial overshoots.
  auto parab = [](double t, Vec& g) {
    g = {2 * (t - 3)};
    return (t - 3) * (t - 3);
  };
  const nefi::LineSearchResult r = nefi::strong_wolfe(parab, 9, {-6}, {1}, 100, -6);
  EXPECT_NEAR(r.t, 3.0, 1e-12);
  EXPECT_EQ(r.evals, 2);
}

TEST(NefiLbfgs, ConvergesOnAConvexQuadratic) {
  const Quadratic q(30);
  nefi::LbfgsOptions o;
  o.max_iter = 200;
  o.max_eval = 1000;
  o.tolerance_change = 0;  // the loss changes by < 1e-9 long before x is at 1e-6
  nefi::Lbfgs opt(o);
  Vec x(30, 0.0);
  opt.step(q, x, 1.0);
  Vec g;
  q(x, g);
  double gmax = 0;
  for (double v : g) gmax = std::max(gmax, std::abs(v));
  EXPECT_LE(gmax, 1e-7);  // tolerance_grad: the stop
  for (int i = 0; i < 30; ++i) EXPECT_NEAR(x[i], q.xstar[i], 1e-6) << i;
  // Conjugate-gradient-like: fewer iterations than the dimension (steepest
  // descent at κ ≈ 9 needs ~80 for 1e-7).
  EXPECT_LE(opt.iterations(), 30) << opt.iterations();
}

TEST(NefiLbfgs, ConvergesOnRosenbrockFromTheClassicStart) {
  nefi::LbfgsOptions o;
  o.max_iter = 500;
  o.max_eval = 5000;
  o.tolerance_grad = 1e-10;
  o.tolerance_change = 0;
  nefi::Lbfgs opt(o);
  Vec x{-1.2, 1.0}, g;
  opt.step(rosenbrock, x, 1.0);
  EXPECT_NEAR(x[0], 1.0, 1e-8);
  EXPECT_NEAR(x[1], 1.0, 1e-8);
  // Textbook quasi-Newton with a Wolfe search needs 30–40 iterations here.
  EXPECT_GE(opt.iterations(), 20);
  EXPECT_LE(opt.iterations(), 60) << opt.iterations();
}

// The history, direction and step persist across step() calls: two steps of
// five iterations land exactly where one step of ten does.
TEST(NefiLbfgs, StateCarriesAcrossSteps) {
  nefi::LbfgsOptions o;
  o.max_eval = 1000;
  o.tolerance_grad = 0;
  o.tolerance_change = 0;
  o.max_iter = 10;
  Vec one{-1.2, 1.0}, two = one;
  nefi::Lbfgs a(o);
  a.step(rosenbrock, one, 1.0);
  o.max_iter = 5;
  nefi::Lbfgs b(o);
  b.step(rosenbrock, two, 1.0);
  b.step(rosenbrock, two, 1.0);
  EXPECT_EQ(one, two);
  EXPECT_EQ(a.iterations(), b.iterations());
}

// Without a line search each iteration is a fixed step of lr (the first
// scaled by min(1, 1/|g|₁)) and one evaluation; max_iter caps a step.
TEST(NefiLbfgs, FixedStepWithoutALineSearch) {
  nefi::LbfgsOptions o;
  o.line_search = "none";
  o.max_iter = 3;
  nefi::Lbfgs opt(o);
  auto f = [](const Vec& x, Vec& g) {  // ½|x|²
    g = x;
    return 0.5 * dot(x, x);
  };
  Vec x{4.0, -4.0};
  opt.step(f, x, 1.0);
  // Step 1: t = 1/8 along −g: x = (3.5, −3.5); then y = s/1 … the quasi-Newton
  // direction of an identity Hessian is −x with t = 1: the minimiser.
  EXPECT_NEAR(x[0], 0.0, 1e-12);
  EXPECT_NEAR(x[1], 0.0, 1e-12);
  EXPECT_EQ(opt.evaluations(), 3);  // one at the start, one per iteration but the last
}

// torch.optim.LBFGS's scalings on an anisotropic quadratic ½ xᵀ diag(1, 4, 9) x
// with the line search off: the first step is min(1, 1/|g|₁)·lr along −g, the
// second is lr along −H g with H the BFGS update of H0 = (sᵀy / yᵀy) I by the
// one pair — written out here as a dense 3×3 product, not a two-loop.
TEST(NefiLbfgs, FirstStepAndInitialHessianScaleAsTorchDoes) {
  const Vec a{1, 4, 9};
  auto f = [&](const Vec& x, Vec& g) {
    g = {a[0] * x[0], a[1] * x[1], a[2] * x[2]};
    return 0.5 * dot(x, g);
  };
  nefi::LbfgsOptions o;
  o.line_search = "none";
  o.max_iter = 2;
  o.max_eval = 3;  // torch's default, max_iter · 5 / 4 = 2, would stop after one iteration
  nefi::Lbfgs opt(o);
  const double lr = 0.7;
  Vec x{1.0, -0.5, 0.25};
  const Vec x0 = x;
  opt.step(f, x, lr);
  Vec g0, g1;
  f(x0, g0);
  const double t = std::min(1.0, 1.0 / (std::abs(g0[0]) + std::abs(g0[1]) + std::abs(g0[2]))) * lr;
  Vec x1(3), s(3), y(3);
  for (int i = 0; i < 3; ++i) x1[i] = x0[i] - t * g0[i];
  f(x1, g1);
  for (int i = 0; i < 3; ++i) {
    s[i] = x1[i] - x0[i];
    y[i] = g1[i] - g0[i];
  }
  const double rho = 1 / dot(y, s), gamma = dot(s, y) / dot(y, y);
  double H[3][3];  // (I − ρ s yᵀ) γ I (I − ρ y sᵀ) + ρ s sᵀ
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double v = 0;
      for (int k = 0; k < 3; ++k)
        v += ((i == k) - rho * s[i] * y[k]) * gamma * ((k == j) - rho * y[k] * s[j]);
      H[i][j] = v + rho * s[i] * s[j];
    }
  for (int i = 0; i < 3; ++i) {
    double d = 0;
    for (int j = 0; j < 3; ++j) d -= H[i][j] * g1[j];
    EXPECT_NEAR(x[i], x1[i] + lr * d, 1e-14) << i;
  }
}

TEST(NefiLbfgs, BadOptionsAreErrors) {
  for (auto bad : {+[](nefi::LbfgsOptions& o) { o.history = 0; },
                   +[](nefi::LbfgsOptions& o) { o.max_iter = 0; },
                   +[](nefi::LbfgsOptions& o) { o.tolerance_grad = -1; },
                   +[](nefi::LbfgsOptions& o) { o.line_search = "armijo"; }}) {
    nefi::LbfgsOptions o;
    bad(o);
    EXPECT_THROW(nefi::Lbfgs{o}, fk::Error);
  }
}

}  // namespace
