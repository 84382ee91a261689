#include "nefi/instances/thermal/tsr.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "fk/error.h"
#include "nefi/instances/thermal/depth_volume.h"
#include "nefi/instances/thermal/explicit_simulator.h"

namespace {

namespace th = nefi::thermal;

// ln of the slab's front-face response, summed directly (test-side code).
double log_response(double tau) {
  double f = 1;
  for (int n = 1; n < 400; ++n)
    f += 2 * std::exp(-n * n * std::numbers::pi * std::numbers::pi * tau);
  return std::log(f);
}

TEST(ThermalTsr, PeakFourierNumberMaximisesTheLogCurvature) {
  const double t2 = th::tsr_peak_fourier_number();
  EXPECT_GT(t2, 0.05);
  EXPECT_LT(t2, 1.0);
  // Finite-difference d² ln f / d(ln τ)² around τ₂ peaks there.
  auto curv = [](double x) {
    const double h = 1e-3;
    return (log_response(std::exp(x + h)) - 2 * log_response(std::exp(x)) +
            log_response(std::exp(x - h))) /
           (h * h);
  };
  const double x = std::log(t2);
  EXPECT_GT(curv(x), curv(x - 0.03));
  EXPECT_GT(curv(x), curv(x + 0.03));
}

// A laterally uniform flash on a homogeneous slab (1-D physics) from the
// explicit simulator, with a thin insulating layer at depth 0.4 under a
// quarter of the pixels: TSR finds the bulk α from the back-wall peak, the
// layer's depth, and the defect pixels.
TEST(ThermalTsr, RecoversBulkAlphaAndDepthFromSimulatedFrames) {
  th::ExplicitHeatConfig c;
  c.extent = {16.0, 16.0, 1.0};
  c.dt = 0.05;
  c.n_frames = 120;
  c.flash.width_xy = 1e3;  // uniform across the face
  c.flash.width_z = 0.05;
  const fk::Dims s{8, 8, 20};
  const double alpha = 0.1;
  std::vector<double> a(s.numel(), alpha);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 8; ++j)
      for (int64_t k = 8; k < 10; ++k) a[(i * 8 + j) * 20 + k] = 0.002;  // z ∈ [0.4, 0.5]
  th::ExplicitHeatSimulator sim(c);
  const auto frames = sim.surface_frames(a, s);
  std::vector<double> times;
  for (int64_t n : sim.observed_frames()) times.push_back(n * c.dt);
  th::TsrOptions o;
  const auto r = th::tsr(frames, times, fk::Dims{120, 8, 8}, o);
  EXPECT_NEAR(r.alpha_bulk / alpha, 1.0, 0.1);  // 1.03 here
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 8; ++j) {
      const int64_t p = i * 8 + j;
      if (i < 2) {
        EXPECT_TRUE(r.defect[p]) << i << "," << j;
        EXPECT_NEAR(r.depth[p], 0.4, 0.1) << i << "," << j;  // 0.38 here
      } else if (i >= 3 && i <= 6) {                         // away from the layer's lateral edge
        EXPECT_FALSE(r.defect[p]) << i << "," << j;
        EXPECT_NEAR(r.depth[p], 1.0, 0.05) << i << "," << j;
      }
    }
  // The volume: bulk α̂ with the prior thickness under each defect pixel.
  const auto v = th::depth_map_alpha_volume(r.defect, r.depth, s, 1.0, r.alpha_bulk, 0.01, 0.1);
  EXPECT_EQ(v[(0 * 8 + 3) * 20 + 0], r.alpha_bulk);
  int64_t low = 0;
  for (int64_t k = 0; k < 20; ++k) low += v[(0 * 8 + 3) * 20 + k] == 0.01;
  EXPECT_GE(low, 2);
  EXPECT_LE(low, 4);
  EXPECT_THROW(th::tsr(frames, std::vector<double>(120, 1.0), fk::Dims{120, 8, 8}, o), fk::Error);
  EXPECT_THROW(th::tsr(frames, times, fk::Dims{60, 8, 8}, o), fk::Error);
}

}  // namespace
