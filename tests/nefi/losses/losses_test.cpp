#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/unary.h"
#include "fk/random.h"
#include "fk/test_util.h"
#include "fk/testing.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/regularizers.h"

namespace {

fk::Tensor rnd(const fk::Dims& s, uint64_t seed, bool grad = false) {
  fk::Generator g(seed);
  fk::Tensor t = fk::randn(s, {fk::DType::F64}, &g);
  if (grad) t.set_requires_grad(true);
  return t;
}

TEST(NefiLosses, MaskedMseValueAndGradient) {
  fk::Tensor p = rnd({3, 4}, 1, true), y = rnd({3, 4}, 2);
  fk::Tensor w =
      fk::from_vector(std::vector<double>{1, 0.5, 0, 1, 1, 1, 1, 1, 0.25, 1, 1, 1}, fk::Dims{3, 4});
  auto pv = p.to_vector<double>(), yv = y.to_vector<double>(), wv = w.to_vector<double>();
  double s = 0, ws = 0;
  for (size_t i = 0; i < pv.size(); ++i) {
    s += wv[i] * (pv[i] - yv[i]) * (pv[i] - yv[i]);
    ws += wv[i];
  }
  EXPECT_NEAR(nefi::masked_mse(p, y, w, 2.0).item(), s / ws / 2.0, 1e-12);
  EXPECT_EQ(fk::testing::gradcheck(
                [&](const std::vector<fk::Tensor>& in) {
                  return nefi::masked_mse(in[0].t(), y.t(), w.t());
                },
                {p}),
            "");
  EXPECT_THROW(nefi::masked_mse(p, rnd({4, 3}, 3), {}), fk::Error);
  EXPECT_THROW(nefi::masked_mse(p, y, fk::zeros({3, 4}, {fk::DType::F64})), fk::Error);
}

TEST(NefiLosses, TotalVariationValuesAndGradients) {
  // 1-D, anisotropic, no smoothing: mean |x[i+1] - x[i]| (last cell 0).
  fk::Tensor x = fk::from_vector(std::vector<double>{0, 1, 3, 2}, fk::Dims{4});
  nefi::TVOptions o;
  o.isotropic = false;
  o.eps = 0;
  EXPECT_NEAR(nefi::total_variation(x, {1.0}, o).item(), (1 + 2 + 1) / 4.0, 1e-12);
  o.periodic_axes = {0};
  EXPECT_NEAR(nefi::total_variation(x, {1.0}, o).item(), (1 + 2 + 1 + 2) / 4.0, 1e-12);
  EXPECT_NEAR(nefi::total_variation(x, {0.5}, o).item(), 2 * (1 + 2 + 1 + 2) / 4.0, 1e-12);
  // 2-D isotropic: one cell with differences (3, 4) -> 5.
  fk::Tensor x2 = fk::from_vector(std::vector<double>{0, 4, 3, 0}, fk::Dims{2, 2});
  nefi::TVOptions iso;
  iso.eps = 0;
  // cells: (0,0): d=(3,4)->5; (0,1): d=(-4,0)->4; (1,0): d=(0,-3)->3; (1,1): 0.
  EXPECT_NEAR(nefi::total_variation(x2, {1.0, 1.0}, iso).item(), 12.0 / 4.0, 1e-12);
  for (bool isotropic : {true, false}) {
    nefi::TVOptions g;
    g.isotropic = isotropic;
    g.eps = 0.1;
    g.periodic_axes = {1};
    fk::Tensor t = rnd({4, 5}, 7, true);
    EXPECT_EQ(fk::testing::gradcheck(
                  [&](const std::vector<fk::Tensor>& in) {
                    return nefi::total_variation(in[0], {0.5, 0.25}, g);
                  },
                  {t}),
              "");
  }
  o.periodic_axes = {3};
  EXPECT_THROW(nefi::total_variation(x, {1.0}, o), fk::Error);
}

// The Laplacian with per-axis spacing against plain loops (replicated edges).
TEST(NefiLosses, LaplacianWithSpacingMatchesLoops) {
  const fk::Dims s{3, 5};
  fk::Tensor x = rnd({3, 5}, 11);
  const auto v = x.to_vector<double>();
  const double h0 = 1.5 / 3, h1 = 2.0 / 5;
  double want = 0;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      auto at = [&](int64_t a, int64_t b) {
        return v[std::clamp<int64_t>(a, 0, 2) * 5 + std::clamp<int64_t>(b, 0, 4)];
      };
      const double l = (at(i - 1, j) - 2 * at(i, j) + at(i + 1, j)) / (h0 * h0) +
                       (at(i, j - 1) - 2 * at(i, j) + at(i, j + 1)) / (h1 * h1);
      want += l * l / 15.0;
    }
  nefi::FieldMap f{{"x", x}};
  nefi::Measurement m;
  m.data = x;
  nefi::Domain d(s, {1.5, 2.0});
  nefi::LossContext c{&f, x, &m, &d, nullptr, 0, 0, 1.0};
  EXPECT_NEAR(nefi::laplacian_loss("x")->forward(c).item(), want, 1e-9 * want);
  nefi::FieldMap one{{"x", fk::zeros({1, 1}, {fk::DType::F64})}};
  nefi::LossContext c1{&one, x, &m, &d, nullptr, 0, 0, 1.0};
  EXPECT_THROW(nefi::laplacian_loss("x")->forward(c1), fk::Error);
}

// On a periodic axis the Laplacian wraps: a whole period of a sine is an
// eigenvector, (L x)_i = (2 cos(2 pi / n) - 2) x_i / h^2 at every cell, the
// ends included; zero-flux edges differ there.
TEST(NefiLosses, LaplacianWrapsOnPeriodicAxes) {
  const int64_t n = 16;
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = std::sin(2 * M_PI * (i + 0.3) / n);
  const fk::Tensor x = fk::from_vector(v, {n});
  nefi::FieldMap f{{"x", x}};
  nefi::Measurement m;
  m.data = x;
  nefi::Domain d({n}, {1.0});
  nefi::LossContext c{&f, x, &m, &d, nullptr, 0, 0, 1.0};
  const double h = 1.0 / n, lambda = (2 * std::cos(2 * M_PI / n) - 2) / (h * h);
  double want = 0;
  for (double e : v) want += lambda * lambda * e * e / n;
  const double wrapped = nefi::laplacian_loss("x", true, "laplacian", {0})->forward(c).item();
  EXPECT_NEAR(wrapped, want, 1e-9 * want);
  EXPECT_GT(nefi::laplacian_loss("x")->forward(c).item(), 1.5 * want);  // the edges' kinks
}

// A field of components along axis 0 (a flow's): tv and smooth with that
// axis as a component axis take no differences across it, so two
// components that are each constant cost nothing, and each component costs
// what it costs alone; without it the step between the components counts.
TEST(NefiLosses, ComponentAxesAreNotDifferenced) {
  std::vector<double> v(2 * 4 * 5);
  for (int64_t i = 0; i < 20; ++i) v[i] = 0.4, v[20 + i] = -0.3;  // vx, vy
  const fk::Tensor x = fk::from_vector(v, {2, 4, 5});
  nefi::FieldMap f{{"x", x}};
  nefi::Measurement m;
  m.data = x;
  nefi::Domain d({2, 4, 5}, {0.5, 1.0, 1.25});
  nefi::LossContext c{&f, x, &m, &d, nullptr, 0, 0, 1.0};
  nefi::TVOptions tv;
  tv.eps = 1e-15;  // (tv_loss refuses 0: a flat patch's gradient is 0 / 0)
  tv.component_axes = {0};
  EXPECT_NEAR(nefi::tv_loss("x", tv)->forward(c).item(), 0.0, 1e-14);
  EXPECT_EQ(nefi::laplacian_loss("x", true, "smooth", {}, {0})->forward(c).item(), 0.0);
  EXPECT_GT(nefi::tv_loss("x", nefi::TVOptions{})->forward(c).item(), 0.1);
  EXPECT_GT(nefi::laplacian_loss("x")->forward(c).item(), 0.1);
  // Each component alone: the sum over components of its own penalty.
  const fk::Tensor y = rnd({2, 4, 5}, 5);
  nefi::FieldMap fy{{"x", y}};
  nefi::LossContext cy{&fy, y, &m, &d, nullptr, 0, 0, 1.0};
  nefi::Domain plane({4, 5}, {1.0, 1.25});
  double want = 0;
  for (int64_t k = 0; k < 2; ++k) {
    nefi::FieldMap fk_{{"x", y.select(0, k).contiguous()}};
    nefi::LossContext ck{&fk_, y, &m, &plane, nullptr, 0, 0, 1.0};
    want += nefi::laplacian_loss("x")->forward(ck).item() / 2;
  }
  EXPECT_NEAR(nefi::laplacian_loss("x", true, "smooth", {}, {0})->forward(cy).item(), want,
              1e-12 * want);
  EXPECT_NE(nefi::laplacian_loss("x", true, "smooth", {}, {0})->signature(),
            nefi::laplacian_loss("x")->signature());
}

// Poisson NLL below 0 goes on as its quadratic expansion at 0: continuous
// with its slope there, bounded below, and pushing p back up where counts
// were seen (relu(p) in the log made it fall without bound, slope +1).
TEST(NefiLosses, PoissonNllBelowZeroIsItsExpansion) {
  const double eps = 0.1;
  auto value_and_slope = [&](double p, double y) {
    const fk::Tensor x = fk::from_vector(std::vector<double>{p}).set_requires_grad(true);
    nefi::FieldMap f{{"x", x}};
    nefi::Measurement m;
    m.data = fk::from_vector(std::vector<double>{y});
    nefi::Domain d(fk::Dims{1}, {1.0});
    nefi::LossContext c{&f, x, &m, &d, nullptr, 0, 0, 1.0};
    const fk::Tensor v = nefi::poisson_nll_loss(eps)->forward(c);
    v.backward();
    return std::pair{v.item(), x.grad().item()};
  };
  for (double y : {0.0, 1.0, 3.0}) {
    const double curvature = (y + eps) / (eps * eps);
    for (double p : {-2.0, -0.05, -1e-9}) {
      const auto [v, g] = value_and_slope(p, y);
      EXPECT_NEAR(v, -y * std::log(eps) + (1 - y / eps) * p + 0.5 * curvature * p * p,
                  1e-12 * (1 + std::abs(v)))
          << p << " " << y;
      EXPECT_NEAR(g, 1 - y / eps + curvature * p, 1e-9 * (1 + std::abs(g))) << p << " " << y;
      if (y > 0) {
        EXPECT_LT(g, 0) << "pushes p up at " << p;
      }
    }
    // continuous at 0 in value and slope
    const auto [v0, g0] = value_and_slope(0.0, y);
    const auto [vm, gm] = value_and_slope(-1e-9, y);
    EXPECT_NEAR(v0, vm, 1e-6);
    EXPECT_NEAR(g0, gm, 1e-6 * (1 + std::abs(g0)));
  }
  // y = 0: the minimum near -eps, never below -eps / 2
  EXPECT_GT(value_and_slope(-1e3, 0.0).first, 0);
  EXPECT_NEAR(value_and_slope(-eps, 0.0).first, -eps / 2, 1e-12);
  // An f32 prediction with a tiny eps (1 / eps^2 past f32): finite slopes
  // on both sides (an inf curvature times the unselected branch's 0 was NaN).
  for (const auto& [p, want] : {std::pair{1.0, 1.0 - 2.0 / (1.0 + 1e-20)}, {-1e-25, 0.0}}) {
    const fk::Tensor x =
        fk::from_vector(std::vector<float>{static_cast<float>(p)}).set_requires_grad(true);
    nefi::FieldMap f{{"x", x}};
    nefi::Measurement m;
    m.data = fk::from_vector(std::vector<double>{2.0});
    nefi::Domain d(fk::Dims{1}, {1.0});
    nefi::LossContext c{&f, x, &m, &d, nullptr, 0, 0, 1.0};
    nefi::poisson_nll_loss(1e-20)->forward(c).backward();
    const double g = x.grad().item();
    EXPECT_TRUE(std::isfinite(g)) << p;
    if (p > 0) {
      EXPECT_NEAR(g, want, 1e-6);
    }
  }
  EXPECT_THROW(nefi::poisson_nll_loss(0.0), fk::Error);
  EXPECT_THROW(nefi::poisson_nll_loss(1e-200), fk::Error);
}

// TV's smoothing is > 0 and named exactly in its signature (6 decimals made
// eps 1e-7 and 1e-9 one loss to a batch); a periodic axis past the grid is
// refused by the Laplacian as by TV (it was taken as none).
TEST(NefiLosses, SmoothingAndAxesAreChecked) {
  nefi::TVOptions zero;
  zero.eps = 0;
  EXPECT_THROW(nefi::tv_loss("x", zero), fk::Error);
  zero.eps = -1;
  EXPECT_THROW(nefi::tv_loss("x", zero), fk::Error);
  nefi::TVOptions a, b;
  a.eps = 1e-7;
  b.eps = 1e-9;
  EXPECT_NE(nefi::tv_loss("x", a)->signature(), nefi::tv_loss("x", b)->signature());
  const fk::Tensor x = rnd({6}, 3);
  nefi::FieldMap f{{"x", x}};
  nefi::Measurement m;
  m.data = x;
  nefi::Domain d(fk::Dims{6}, {1.0});
  nefi::LossContext c{&f, x, &m, &d, nullptr, 0, 0, 1.0};
  EXPECT_THROW(nefi::laplacian_loss("x", true, "lap", {5})->forward(c), fk::Error);
  EXPECT_NO_THROW(nefi::laplacian_loss("x", true, "lap", {0})->forward(c));
}

// The hinge on wrong-way steps along one axis, written out: (3, 4) cells,
// spacing 0.5 and 0.25.
TEST(NefiLosses, MonotoneMatchesLoops) {
  const fk::Tensor x = rnd({3, 4}, 5);
  const auto v = x.to_vector<double>();
  nefi::FieldMap f{{"x", x}};
  nefi::Measurement m;
  m.data = x;
  nefi::Domain d({3, 4}, {1.5, 1.0});
  nefi::LossContext c{&f, x, &m, &d, nullptr, 0, 0, 1.0};
  for (int axis : {0, 1})
    for (int sign : {1, -1}) {
      const double h = axis == 0 ? 0.5 : 0.25;
      double want = 0;
      int count = 0;
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          const int64_t i2 = i + (axis == 0), j2 = j + (axis == 1);
          if (i2 >= 3 || j2 >= 4) continue;
          const double step = sign * (v[i2 * 4 + j2] - v[i * 4 + j]) / h;
          want += step < 0 ? step * step : 0.0;
          ++count;
        }
      want /= count;
      EXPECT_NEAR(nefi::monotone_loss(axis, sign)->forward(c).item(), want, 1e-12 * want)
          << axis << " " << sign;
    }
  // A field that rises along axis 1 has no increasing penalty there.
  nefi::FieldMap up{{"x", fk::from_vector(std::vector<double>{0, 1, 1, 3, 0, 0, 2, 2, -1, 0, 5, 6},
                                          fk::Dims{3, 4})}};
  nefi::LossContext cu{&up, x, &m, &d, nullptr, 0, 0, 1.0};
  EXPECT_EQ(nefi::monotone_loss(1, 1)->forward(cu).item(), 0.0);
  EXPECT_GT(nefi::monotone_loss(1, -1)->forward(cu).item(), 0.0);
  EXPECT_THROW(nefi::monotone_loss(3, 1), fk::Error);
  EXPECT_THROW(nefi::monotone_loss(0, 0), fk::Error);
  nefi::FieldMap flat{{"x", fk::zeros({1, 4}, {fk::DType::F64})}};
  nefi::LossContext c1{&flat, x, &m, &d, nullptr, 0, 0, 1.0};
  EXPECT_THROW(nefi::monotone_loss(0, 1)->forward(c1), fk::Error);
}

// LogMSE's scale s is taken over the observed cells: max |y| where the mask
// is > 0, the mask-weighted mean |y| (a masked-out saturated cell set it).
TEST(NefiLosses, LogMseScalesByTheObservedCells) {
  const fk::Tensor pred = fk::from_vector(std::vector<double>{1, 2, 4, 3});
  nefi::Measurement m;
  m.data = fk::from_vector(std::vector<double>{1, 1, 2, 1000});
  m.mask = fk::from_vector(std::vector<double>{1, 1, 2, 0});
  const nefi::Domain d({4});
  const nefi::LossContext c{nullptr, pred, &m, &d, nullptr, 0, 0, 1.0};
  const double eps = 1e-10;
  const auto want = [&](double s) {  // weights 1, 1, 2 over cells 0..2
    double sum = 0;
    const double p[] = {1, 2, 4}, y[] = {1, 1, 2}, w[] = {1, 1, 2};
    for (int i = 0; i < 3; ++i)
      sum += w[i] * std::pow(std::log(p[i] / s + eps) - std::log(y[i] / s + eps), 2);
    return sum / 4;
  };
  EXPECT_NEAR(nefi::log_mse_loss("max", eps)->forward(c).item(), want(2.0), 1e-9);
  EXPECT_NEAR(nefi::log_mse_loss("mean", eps)->forward(c).item(), want(6.0 / 4), 1e-9);
}

TEST(NefiLosses, DataTermsAndLossSet) {
  fk::Tensor pred = fk::from_vector(std::vector<double>{1, 2, 4}),
             obs = fk::from_vector(std::vector<double>{1, 1, 2});
  nefi::Measurement m;
  m.data = obs;
  m.noise_std = 0.5;
  nefi::FieldMap fields{{"x", fk::from_vector(std::vector<double>{-1, 2, 0.5})}};
  nefi::Domain d({3});
  nefi::LossContext c{&fields, pred, &m, &d, nullptr, 0, 0, 1.0};
  EXPECT_NEAR(nefi::mse_loss()->forward(c).item(), 5.0 / 3, 1e-12);
  EXPECT_NEAR(nefi::mse_loss(true)->forward(c).item(), 5.0 / 3 / 0.25, 1e-12);
  EXPECT_NEAR(nefi::relative_mse_loss()->forward(c).item(), 5.0 / 6, 1e-12);
  EXPECT_NEAR(nefi::huber_loss(1.0)->forward(c).item(), (0 + 0.5 + 1.5) / 3, 1e-12);
  const double pn =
      (1 - 1 * std::log(1 + 1e-8) + 2 - std::log(2 + 1e-8) + 4 - 2 * std::log(4 + 1e-8)) / 3;
  EXPECT_NEAR(nefi::poisson_nll_loss()->forward(c).item(), pn, 1e-9);
  EXPECT_NEAR(nefi::normalized_mse_loss()->forward(c).item(),
              (std::pow(1 / (7.0 / 3) - 0.75, 2) + std::pow(2 / (7.0 / 3) - 0.75, 2) +
               std::pow(4 / (7.0 / 3) - 1.5, 2)) /
                  3,
              1e-9);
  EXPECT_NEAR(nefi::log_mse_loss("none", 1e-10)->forward(c).item(),
              (0 + std::pow(std::log(2.0), 2) + std::pow(std::log(2.0), 2)) / 3, 1e-8);
  EXPECT_NEAR(nefi::l1_loss("x")->forward(c).item(), 3.5 / 3, 1e-12);
  EXPECT_NEAR(nefi::tikhonov_loss("x")->forward(c).item(), 5.25 / 3, 1e-12);
  EXPECT_NEAR(nefi::range_penalty_loss(0, 1, "x")->forward(c).item(), (1 + 1) / 3.0, 1e-12);
  fk::Tensor lap_x = fk::from_vector(std::vector<double>{0, 1, 4, 9});
  nefi::FieldMap lf{{"x", lap_x}};
  nefi::LossContext lc{&lf, pred, &m, &d, nullptr, 0, 0, 1.0};
  // Replicate edges: second differences (1, 2, 2, -5), in cell units without
  // spacing; by default divided by h^2 with h = 1/4 (4 cells of the unit box).
  EXPECT_NEAR(nefi::laplacian_loss("x", false)->forward(lc).item(), (1 + 4 + 4 + 25) / 4.0, 1e-12);
  EXPECT_NEAR(nefi::laplacian_loss("x")->forward(lc).item(), 256 * (1 + 4 + 4 + 25) / 4.0, 1e-9);
  // TV divides by the cell size by default too: anisotropic |D x| / h.
  nefi::TVOptions an;
  an.isotropic = false;
  an.eps = 1e-15;
  EXPECT_NEAR(nefi::tv_loss("x", an)->forward(lc).item(), 4 * (1 + 3 + 5) / 4.0, 1e-9);
  an.use_spacing = false;
  EXPECT_NEAR(nefi::tv_loss("x", an)->forward(lc).item(), (1 + 3 + 5) / 4.0, 1e-12);

  nefi::LossSet set;
  set.add(nefi::mse_loss(), 1.0);
  set.add(nefi::l1_loss("x"), 0.5);
  auto v = set.forward(c);
  EXPECT_NEAR(v.total.item(), 5.0 / 3 + 0.5 * 3.5 / 3, 1e-12);
  auto s2 = set.with_weights({{"l1", 0.0}});
  EXPECT_NEAR(s2.forward(c).total.item(), 5.0 / 3, 1e-12);
  EXPECT_NEAR(set.data_loss({1.0, 2.0}), 1.0, 1e-12);
  // The weighted total is one custom node: its gradient reaches both terms.
  fk::Tensor px = rnd({3}, 11, true);
  EXPECT_EQ(fk::testing::gradcheck(
                [&](const std::vector<fk::Tensor>& in) {
                  nefi::FieldMap f{{"x", in[0]}};
                  nefi::LossContext cc{&f, fk::mul(in[0], 2.0), &m, &d, nullptr, 0, 0, 1.0};
                  nefi::LossSet ls;
                  ls.add(nefi::mse_loss(), 0.7);
                  ls.add(nefi::tikhonov_loss("x"), 0.3);
                  return ls.forward(cc).total;
                },
                {px}),
            "");
  EXPECT_THROW(set.with_weights({{"tv", 1.0}}), fk::Error);
  EXPECT_THROW(set.add(nefi::mse_loss(), 1.0), fk::Error);
  EXPECT_THROW(nefi::l1_loss("rho")->forward(c), fk::Error);
}

// What a solver checks at a stage's setup: the mask (check_mask), then each
// weighted term's own refusal, the problem named in what was given; a term
// of weight 0 (not evaluated in the stage) is not asked.
TEST(NefiLosses, LossSetCheckObservationsChecksTheMaskAndTheWeightedTerms) {
  using fk::test::error_of;
  nefi::LossSet set;
  set.add(nefi::huber_loss(), 1.0);
  set.add(nefi::relative_mse_loss(), 0.0);
  nefi::Measurement zero;
  zero.data = fk::zeros({2, 3}, {fk::DType::F64});
  EXPECT_EQ(error_of([&] { set.check_observations(zero, "solver", "problem 3"); }), "");
  zero.mask = fk::zeros({2, 3}, {fk::DType::F64});
  EXPECT_EQ(error_of([&] { set.check_observations(zero, "solver", "problem 3"); }),
            "solver: expected a mask with at least one observed cell, got an all-zero mask in "
            "problem 3");
  zero.mask = fk::ones({2, 3}, {fk::DType::F64});
  const nefi::LossSet weighted = set.with_weights({{"relative_mse", 0.5}});
  EXPECT_EQ(error_of([&] { weighted.check_observations(zero, "solver", "problem 3"); }),
            "nefi::RelativeMSE: expected observations with non-zero energy, got all zeros in "
            "problem 3");
  EXPECT_EQ(error_of([&] { weighted.check_observations(zero, "solver"); }),
            "nefi::RelativeMSE: expected observations with non-zero energy, got all zeros");
}

}  // namespace
