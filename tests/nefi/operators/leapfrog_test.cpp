// The leapfrog kernels against properties an independent derivation gives:
// the discrete energy the lossless scheme conserves (closed box, 1e-12),
// bounded growth at 0.99x the CFL step and blow-up at 1.05x, a dot test of
// one step against its hand-written adjoint for every absorbing layer, and
// the CFL step of the 2nd/4th-order Laplacians against their symbols.
#include "nefi/operators/wave/leapfrog.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "fk/error.h"

namespace {

namespace wave = nefi::wave;

wave::WaveGrid box_grid(int order, double courant, fk::Dims shape, wave::Absorbing a,
                        double width = 0.0) {
  wave::WaveConfig cfg;
  cfg.extent.assign(shape.size(), 1.0);
  for (int i = 0; i < shape.size(); ++i) cfg.extent[i] = 0.1 * static_cast<double>(shape[i]);
  cfg.order = order;
  cfg.absorbing = a;
  cfg.absorb_width = width;
  cfg.courant = std::min(courant, 1.0);
  cfg.c_max = 2.0;
  std::vector<double> h(shape.size(), 0.1);
  // One observed interval = courant × the CFL step, so the step is exactly that.
  cfg.dt_obs = courant * wave::cfl_dt(order, h, 2.0);
  cfg.n_t = 2;
  wave::WaveGrid g = wave::make_wave_grid(cfg, shape);
  g.dt = cfg.dt_obs;  // beyond the bound the config refuses, for the stability test
  g.substeps = 1;
  return g;
}

// Random values on the padded cells (the halo stays zero).
std::vector<double> random_field(const wave::WaveGrid& g, std::mt19937_64& rng) {
  std::normal_distribution<double> n;
  std::vector<double> v(g.numel, 0.0);
  wave::for_each_row(g, [&](int64_t p0, int64_t count) {
    for (int64_t p = p0; p < p0 + count; ++p) v[p] = n(rng);
  });
  return v;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// A smooth bump u^0, u^{-1} = u^0 + ½ dt² κ Δ u^0 in a Dirichlet box with a
// velocity varying in space: the energy of wave_energy is constant.
TEST(NefiWaveLeapfrog, EnergyIsConservedInAClosedBox) {
  for (int order : {2, 4}) {
    const wave::WaveGrid g = box_grid(order, 0.9, {40, 36}, wave::Absorbing::kNone);
    std::vector<double> c(40 * 36);
    for (int i = 0; i < 40; ++i)
      for (int j = 0; j < 36; ++j)
        c[i * 36 + j] = 1.5 + 0.5 * std::sin(0.2 * i) * std::cos(0.3 * j);
    const auto kappa = wave::padded_kappa(g, c);
    const auto co = wave::step_coefficients<double>(
        g, wave::make_damping(g, wave::Absorbing::kNone, 2.0, 1e-3), kappa);
    std::vector<double> buf[3];
    for (auto& b : buf) b.assign(g.numel, 0.0);
    for (int i = 0; i < 40; ++i)
      for (int j = 0; j < 36; ++j)
        buf[1][g.at(0, i, j)] = std::exp(-(std::pow(i - 15.0, 2) + std::pow(j - 20.0, 2)) / 8.0);
    wave::add_scaled_laplacian(g, kappa, 0.5 * g.dt * g.dt, buf[1].data(), buf[0].data(), false);
    const double e0 = wave::wave_energy(g, kappa, buf[0].data(), buf[1].data());
    ASSERT_GT(e0, 0);
    double drift = 0;
    for (int n = 0; n < 600; ++n) {
      wave::leapfrog_step<double>(g, co, buf[n % 3].data(), buf[(n + 1) % 3].data(),
                                  buf[(n + 2) % 3].data(), {nullptr, nullptr, nullptr});
      const double e =
          wave::wave_energy(g, kappa, buf[(n + 1) % 3].data(), buf[(n + 2) % 3].data());
      drift = std::max(drift, std::abs(e - e0) / e0);
    }
    EXPECT_LT(drift, 1e-12) << "order " << order;
  }
}

// Random (every mode excited) initial states: bounded at 0.99x CFL over
// 3000 steps, exponential growth at 1.05x.
TEST(NefiWaveLeapfrog, StableAtTheCflStepUnstableBeyond) {
  for (int order : {2, 4}) {
    for (double courant : {0.99, 1.05}) {
      const wave::WaveGrid g = box_grid(order, courant, {24, 20}, wave::Absorbing::kNone);
      ASSERT_EQ(g.substeps, 1);
      const auto kappa = wave::padded_kappa(g, std::vector<double>(24 * 20, 2.0));
      const auto co = wave::step_coefficients<double>(
          g, wave::make_damping(g, wave::Absorbing::kNone, 2, 1e-3), kappa);
      std::mt19937_64 rng(7);
      std::vector<double> buf[3] = {random_field(g, rng), random_field(g, rng),
                                    std::vector<double>(g.numel, 0.0)};
      double peak = 0;
      for (int n = 0; n < 3000; ++n) {
        double* un = buf[(n + 2) % 3].data();
        wave::leapfrog_step<double>(g, co, buf[n % 3].data(), buf[(n + 1) % 3].data(), un,
                                    {nullptr, nullptr, nullptr});
        for (int64_t p = 0; p < g.numel; ++p) peak = std::max(peak, std::abs(un[p]));
        if (peak > 1e30) break;
      }
      if (courant < 1)
        EXPECT_LT(peak, 1e3) << "order " << order;
      else
        EXPECT_GT(peak, 1e10) << "order " << order;
    }
  }
}

// The PML (and the sponge) over 20,000 steps at 0.99x CFL from a random
// state: the field decays instead of growing (the reference: stable over
// 20,000 steps).
TEST(NefiWaveLeapfrog, LayersStayStableOverLongRuns) {
  for (wave::Absorbing a : {wave::Absorbing::kPml, wave::Absorbing::kSponge}) {
    const wave::WaveGrid g = box_grid(4, 0.99, {16, 14}, a, 0.5);
    const auto kappa = wave::padded_kappa(g, std::vector<double>(16 * 14, 2.0));
    const auto co = wave::step_coefficients<double>(g, wave::make_damping(g, a, 2.0, 1e-3), kappa);
    std::mt19937_64 rng(5);
    std::vector<double> buf[3] = {random_field(g, rng), random_field(g, rng),
                                  std::vector<double>(g.numel, 0.0)};
    std::array<std::vector<double>, 3> psi;
    std::array<double*, 3> ptr{nullptr, nullptr, nullptr};
    for (int d = 0; d < 3; ++d)
      if (co.pml && g.active[d]) psi[d].assign(g.numel, 0.0), ptr[d] = psi[d].data();
    double late = 0;
    for (int n = 0; n < 20000; ++n) {
      double* un = buf[(n + 2) % 3].data();
      wave::leapfrog_step<double>(g, co, buf[n % 3].data(), buf[(n + 1) % 3].data(), un, ptr);
      if (n >= 19000)
        for (int64_t p = 0; p < g.numel; ++p) late = std::max(late, std::abs(un[p]));
    }
    // The start is O(1) everywhere; measured 1.1e-7 (PML), 1.4e-20 (sponge).
    EXPECT_LT(late, 1e-4) << wave::absorbing_name(a);
  }
}

// <L x, y> = <x, Lᵀ y> for one step x = (u^{n-1}, u^n, ψ^n) -> (u^n, u^{n+1},
// ψ^{n+1}) with every layer, 1-D to 3-D.
TEST(NefiWaveLeapfrog, AdjointStepPassesTheDotTest) {
  struct Case {
    fk::Dims shape;
    int order;
    wave::Absorbing a;
  };
  const std::vector<Case> cases{
      {{30}, 4, wave::Absorbing::kPml},          {{14, 12}, 4, wave::Absorbing::kPml},
      {{14, 12}, 2, wave::Absorbing::kPml},      {{14, 12}, 4, wave::Absorbing::kSponge},
      {{10, 9, 8}, 2, wave::Absorbing::kCerjan}, {{10, 9, 8}, 4, wave::Absorbing::kSponge}};
  for (const Case& cs : cases) {
    const wave::WaveGrid g = box_grid(cs.order, 0.9, cs.shape, cs.a, 0.3);
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(1.0, 2.0);
    std::vector<double> c(cs.shape.numel());
    for (double& v : c) v = u(rng);
    const auto kappa = wave::padded_kappa(g, c);
    const auto co =
        wave::step_coefficients<double>(g, wave::make_damping(g, cs.a, 2.0, 1e-3), kappa);
    const bool pml = cs.a == wave::Absorbing::kPml;
    std::vector<double> up = random_field(g, rng), un(g.numel, 0.0), u0 = random_field(g, rng);
    std::array<std::vector<double>, 3> psi, mu;
    std::array<double*, 3> psi_p{nullptr, nullptr, nullptr}, mu_p{nullptr, nullptr, nullptr};
    for (int d = 0; d < 3; ++d)
      if (pml && g.active[d]) {
        psi[d] = random_field(g, rng), mu[d] = random_field(g, rng);
        psi_p[d] = psi[d].data(), mu_p[d] = mu[d].data();
      }
    const auto psi_in = psi, mu_in = mu;
    wave::leapfrog_step<double>(g, co, up.data(), u0.data(), un.data(), psi_p);
    std::vector<double> y_prev = random_field(g, rng), y_cur = random_field(g, rng);
    double lhs = dot(u0, y_prev) + dot(un, y_cur);
    for (int d = 0; d < 3; ++d)
      if (psi_p[d]) lhs += dot(psi[d], mu_in[d]);
    std::vector<double> lam_c = y_cur, out_cur(g.numel, 0.0), out_prev(g.numel, 0.0);
    wave::leapfrog_adjoint_step<double>(g, co, lam_c.data(), y_prev.data(), out_cur.data(),
                                        out_prev.data(), mu_p, nullptr, nullptr, nullptr,
                                        {nullptr, nullptr, nullptr});
    double rhs = dot(up, out_prev) + dot(u0, out_cur);
    for (int d = 0; d < 3; ++d)
      if (psi_p[d]) rhs += dot(psi_in[d], mu[d]);
    EXPECT_NEAR(lhs, rhs, 1e-12 * std::abs(lhs))
        << cs.shape.str() << " " << wave::absorbing_name(cs.a);
  }
}

// The CFL step is where the symbol's extreme eigenvalue reaches dt² c² λ = 4:
// λ_max of the 1-D stencil is 4/h² (order 2) and 16/(3h²) (order 4).
TEST(NefiWaveLeapfrog, CflStepMatchesTheLaplacianSymbols) {
  const double h = 0.05, c = 3.0;
  for (int order : {2, 4}) {
    double lam = 0;
    for (int k = 0; k <= 1000; ++k) {  // symbol sampled over [0, π]
      const double th = M_PI * k / 1000.0;
      const double s = order == 2 ? 2 - 2 * std::cos(th)
                                  : (30 - 32 * std::cos(th) + 2 * std::cos(2 * th)) / 12.0;
      lam = std::max(lam, s / (h * h));
    }
    const double dt = wave::cfl_dt(order, {h, h}, c);
    EXPECT_NEAR(dt * dt * c * c * 2 * lam, 4.0, 1e-9) << order;
  }
}

TEST(NefiWaveLeapfrog, ConfigErrorsNameTheField) {
  wave::WaveConfig cfg;
  cfg.extent = {1.0, 1.0, 1.0};
  cfg.c_max = 2, cfg.dt_obs = 0.01, cfg.n_t = 10;
  cfg.absorbing = wave::Absorbing::kPml;
  EXPECT_THROW(cfg.validate(3), fk::Error);  // no PML in 3-D
  cfg.absorbing = wave::Absorbing::kSponge;
  EXPECT_NO_THROW(cfg.validate(3));
  EXPECT_THROW(cfg.validate(2), fk::Error);  // extent rank
  cfg.order = 6;
  EXPECT_THROW(cfg.validate(3), fk::Error);
  cfg.order = 2, cfg.courant = 0;
  EXPECT_THROW(cfg.validate(3), fk::Error);
  cfg.courant = 1.05;  // past the CFL bound
  EXPECT_THROW(cfg.validate(3), fk::Error);
  cfg.courant = 0.9, cfg.absorb_R = 1.5;
  EXPECT_THROW(cfg.validate(3), fk::Error);
  EXPECT_THROW(wave::absorbing_from("spongy"), fk::Error);
  try {
    wave::absorbing_from("spongy");
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("spongy"), std::string::npos);
  }
}

}  // namespace
