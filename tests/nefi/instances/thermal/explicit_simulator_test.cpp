#include "nefi/instances/thermal/explicit_simulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "fk/error.h"
#include "nefi/operators/heat/heat_operator.h"

namespace {

using nefi::thermal::ExplicitHeatConfig;
using nefi::thermal::ExplicitHeatSimulator;
using nefi::thermal::flash_cell_averages;
using nefi::thermal::FlashSpec;

// T⁰ = cos(2π x / Lx) cos(π z / H) sampled at cell centres is an eigenvector
// of the periodic-x / adiabatic-z discrete Laplacian with eigenvalue
// λ = −4α (sin²(π/nx)/hx² + sin²(π/2nz)/hz²); forward Euler multiplies it by
// (1 + Δt_sub λ) per substep.
TEST(ThermalExplicitSimulator, FourierModeDecaysAtTheForwardEulerRate) {
  ExplicitHeatConfig c;
  c.extent = {4.0, 3.0, 1.0};
  c.dt = 0.05;
  c.n_frames = 8;
  const fk::Dims s{16, 6, 8};
  const double alpha = 0.12;
  ExplicitHeatSimulator sim(c);
  const int64_t nsub = sim.substeps(s, alpha);
  EXPECT_GE(nsub, c.min_substeps);
  std::vector<double> t0(s.numel()), a(s.numel(), alpha);
  const double hx = c.extent[0] / s[0], hz = c.extent[2] / s[2];
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j)
      for (int64_t k = 0; k < s[2]; ++k)
        t0[(i * s[1] + j) * s[2] + k] =
            std::cos(2 * std::numbers::pi * (i + 0.5) * hx / c.extent[0]) *
            std::cos(std::numbers::pi * (k + 0.5) * hz / c.extent[2]);
  const auto frames = sim.trajectory(a, s, t0);
  ASSERT_EQ(frames.size(), 9u);
  const double lam = -4 * alpha *
                     (std::pow(std::sin(std::numbers::pi / s[0]) / hx, 2) +
                      std::pow(std::sin(std::numbers::pi / (2 * s[2])) / hz, 2));
  const double per_frame = std::pow(1 + c.dt / nsub * lam, static_cast<double>(nsub));
  // The continuous rate of the same mode: α (k_x² + k_z²).
  const double kc = alpha * (std::pow(2 * std::numbers::pi / c.extent[0], 2) +
                             std::pow(std::numbers::pi / c.extent[2], 2));
  for (int64_t n = 1; n <= c.n_frames; ++n) {
    double err = 0;
    for (size_t p = 0; p < t0.size(); ++p)
      err = std::max(err, std::abs(frames[n][p] - std::pow(per_frame, n) * t0[p]));
    EXPECT_LT(err, 1e-12) << "frame " << n;
    const double ratio = frames[n][0] / t0[0];
    EXPECT_NEAR(ratio / std::exp(-kc * n * c.dt), 1.0, 0.02) << "frame " << n;
  }
}

TEST(ThermalExplicitSimulator, AdiabaticFacesConserveHeat) {
  ExplicitHeatConfig c;
  c.extent = {5.0, 5.0, 1.0};
  c.dt = 0.1;
  c.n_frames = 10;
  c.flash.width_xy = 1.5;
  const fk::Dims s{10, 8, 5};
  std::vector<double> a(s.numel());
  for (size_t p = 0; p < a.size(); ++p) a[p] = 0.01 + 0.19 * std::fmod(0.618 * p, 1.0);
  const auto frames = ExplicitHeatSimulator(c).trajectory(a, s);
  double q0 = 0;
  for (double v : frames[0]) q0 += v;
  ASSERT_GT(q0, 0);
  for (const auto& f : frames) {
    double q = 0;
    for (double v : f) q += v;
    EXPECT_NEAR(q / q0, 1.0, 1e-12);
  }
  // The flash spreads: the front cell under it cools.
  EXPECT_LT(frames.back()[(5 * 8 + 4) * 5], frames[0][(5 * 8 + 4) * 5]);
}

// The flash's cell averages integrate to the flash's total heat:
// A (2π w_xy²) w_z √(π/2) erf(H / √2 w_z) (laterally periodised: every image
// is summed, so the whole lateral mass is inside the box).
TEST(ThermalExplicitSimulator, FlashCellAveragesIntegrateExactly) {
  nefi::thermal::FlashSpec f;
  f.amplitude = 100;
  f.width_xy = 4.0;  // wider than half the box: the images matter
  f.width_z = 0.2;
  f.center = std::array<double, 2>{2.5, 7.5};  // cell edges
  const std::vector<double> ext{10.0, 10.0, 1.0};
  const fk::Dims s{16, 16, 6};
  const auto v = nefi::thermal::flash_cell_averages(f, s, ext);
  const double vol = ext[0] * ext[1] * ext[2] / static_cast<double>(s.numel());
  double q = 0;
  for (double x : v) q += x * vol;
  const double exact = f.amplitude * 2 * std::numbers::pi * f.width_xy * f.width_xy * f.width_z *
                       std::sqrt(std::numbers::pi / 2) *
                       std::erf(ext[2] / (std::numbers::sqrt2 * f.width_z));
  EXPECT_NEAR(q / exact, 1.0, 1e-12);
  // Periodised: the profile is symmetric about the centre x = 2.5 (the edge
  // between cells 3 and 4) all the way round the box, including through the
  // wrap (left cells 3, 2, ..., 15, 14, ...).
  const int64_t j = 12;
  for (int64_t d = 0; d < 8; ++d) {
    const double left = v[(((3 - d + 16) % 16) * 16 + j) * 6];
    const double right = v[(((4 + d) % 16) * 16 + j) * 6];
    EXPECT_NEAR(left, right, 1e-12 * f.amplitude) << d;
  }
}

TEST(ThermalExplicitSimulator, SubstepsFollowTheStabilityLimit) {
  ExplicitHeatConfig c;  // the paper grid 64x64x16, dt 0.05, safety 2
  ExplicitHeatSimulator sim(c);
  const fk::Dims s{64, 64, 16};
  EXPECT_EQ(sim.substeps(s, 0.1), 16);
  EXPECT_EQ(sim.substeps(s, 0.15), 24);
  EXPECT_EQ(sim.substeps(s, 0.2), 31);
  EXPECT_EQ(sim.substeps(s, 0.01), 10);  // the floor
}

TEST(ThermalExplicitSimulator, RobinBackFaceLosesHeatAndZeroCoefficientIsNeumann) {
  ExplicitHeatConfig c;
  c.extent = {4.0, 4.0, 1.0};
  c.dt = 0.1;
  c.n_frames = 6;
  c.flash.width_xy = 1.0;
  c.flash.width_z = 0.5;
  const fk::Dims s{8, 8, 4};
  const std::vector<double> a(s.numel(), 0.15);
  ExplicitHeatConfig r = c;
  r.back_bc = "robin";
  const auto neu = ExplicitHeatSimulator(c).trajectory(a, s);
  const auto rob0 = ExplicitHeatSimulator(r).trajectory(a, s);
  for (size_t p = 0; p < neu.back().size(); ++p) EXPECT_EQ(neu.back()[p], rob0.back()[p]);
  r.robin_h = 0.5;
  const auto rob = ExplicitHeatSimulator(r).trajectory(a, s);
  double prev = 1e300;
  for (const auto& f : rob) {
    double q = 0;
    for (double v : f) q += v;
    EXPECT_LT(q, prev);
    prev = q;
  }
}

TEST(ThermalExplicitSimulator, SupersampledSurfaceAgreesWithTheCoarseOne) {
  ExplicitHeatConfig c;
  c.extent = {4.0, 4.0, 1.0};
  c.dt = 0.1;
  c.n_frames = 10;
  c.first_frame = 2;
  c.frame_stride = 4;  // frames 2, 6, 10
  c.flash.width_xy = 1.2;
  c.flash.width_z = 0.3;
  ExplicitHeatSimulator sim(c);
  EXPECT_EQ(sim.observed_frames(), (std::vector<int64_t>{2, 6, 10}));
  const fk::Dims s{8, 8, 4};
  const auto coarse = sim.surface_frames(std::vector<double>(s.numel(), 0.1), s, 1);
  const auto fine = sim.surface_frames(std::vector<double>(8 * s.numel(), 0.1), s, 2);
  ASSERT_EQ(coarse.size(), 3u * 64);
  ASSERT_EQ(fine.size(), coarse.size());
  double diff = 0, scale = 0;
  for (size_t p = 0; p < coarse.size(); ++p) {
    diff = std::max(diff, std::abs(coarse[p] - fine[p]));
    scale = std::max(scale, std::abs(coarse[p]));
  }
  EXPECT_GT(diff, 0.0);           // a different discretisation
  EXPECT_LT(diff, 0.05 * scale);  // of the same physics
}

// The reference's supersampled data: the fine grid's own front-cell frames
// (not a depth average of the top s fine layers), area-averaged laterally.
TEST(ThermalExplicitSimulator, SupersampledSurfaceIsTheFineFrontLayerAveragedLaterally) {
  ExplicitHeatConfig c;
  c.extent = {4.0, 4.0, 1.0};
  c.dt = 0.1;
  c.n_frames = 6;
  c.flash.width_xy = 1.2;
  c.flash.width_z = 0.2;
  ExplicitHeatSimulator sim(c);
  const fk::Dims s{4, 4, 3}, f{8, 8, 6};
  std::vector<double> a(f.numel());
  for (int64_t i = 0; i < f.numel(); ++i) a[i] = 0.1 + 0.05 * std::sin(0.7 * i);
  const auto super = sim.surface_frames(a, s, 2);
  const auto fine = sim.surface_frames(a, f, 1);
  ASSERT_EQ(super.size(), 6u * 16);
  for (int64_t n = 0; n < 6; ++n)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        double m = 0;
        for (int64_t di = 0; di < 2; ++di)
          for (int64_t dj = 0; dj < 2; ++dj)
            m += 0.25 * fine[(n * 8 + 2 * i + di) * 8 + 2 * j + dj];
        EXPECT_NEAR(super[(n * 4 + i) * 4 + j], m, 1e-12 * std::abs(m)) << n << i << j;
      }
}

// initial: flash — the simulator's flash is the operator's uniform flash.
TEST(ThermalExplicitSimulator, UniformFlashMatchesTheOperatorFlash) {
  FlashSpec g;
  g.amplitude = 2.0;
  g.width_z = 0.25;
  g.uniform = true;
  nefi::GaussianFlash f;
  f.amplitude = 2.0;
  f.width_z = 0.25;
  f.uniform = true;
  const std::vector<double> extent{3.0, 2.0, 1.0};
  const fk::Dims s{3, 4, 5};
  const auto u = flash_cell_averages(g, s, extent);
  const auto t = nefi::flash_cell_averages(f, s, extent).to_vector<double>();
  ASSERT_EQ(u.size(), t.size());
  for (size_t i = 0; i < u.size(); ++i) {
    EXPECT_NEAR(u[i], t[i], 1e-12 * t[i]) << i;
    EXPECT_EQ(u[i], u[i % 5]) << i;  // every column alike
  }
}

TEST(ThermalExplicitSimulator, BadConfigsAreClearErrors) {
  auto bad = [](auto edit) {
    ExplicitHeatConfig c;
    edit(c);
    EXPECT_THROW(ExplicitHeatSimulator{c}, fk::Error);
  };
  bad([](ExplicitHeatConfig& c) { c.dt = -0.1; });
  bad([](ExplicitHeatConfig& c) { c.n_frames = 0; });
  bad([](ExplicitHeatConfig& c) { c.first_frame = 101; });
  bad([](ExplicitHeatConfig& c) { c.face_mode = "geometric"; });
  bad([](ExplicitHeatConfig& c) { c.back_bc = "dirichlet"; });
  bad([](ExplicitHeatConfig& c) { c.robin_h = -1; });
  bad([](ExplicitHeatConfig& c) { c.extent = {1.0, 1.0}; });
  try {
    ExplicitHeatConfig c;
    c.dt = -1;
    ExplicitHeatSimulator s(c);
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("dt"), std::string::npos);
  }
  ExplicitHeatSimulator sim({});
  EXPECT_THROW(sim.trajectory({0.1, -0.1, 0.1}, fk::Dims{3, 1, 1}), fk::Error);
  EXPECT_THROW(sim.trajectory({0.1, 0.1}, fk::Dims{3, 1, 1}), fk::Error);
}

}  // namespace
