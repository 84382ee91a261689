#include "nefi/instances/thermal/ppt.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fk/error.h"
#include "nefi/instances/thermal/explicit_simulator.h"

namespace {

namespace th = nefi::thermal;

// The TSR test's slab: a laterally uniform flash, α = 0.1, and a thin
// insulating layer at depth 0.4 under a quarter of the pixels. With the
// true α, the blind frequency of the layer's pixels gives its depth.
TEST(ThermalPpt, FindsTheLayerAndItsDepthFromSimulatedFrames) {
  th::ExplicitHeatConfig c;
  c.extent = {16.0, 16.0, 1.0};
  c.dt = 0.05;
  c.n_frames = 120;
  c.flash.width_xy = 1e3;
  c.flash.width_z = 0.05;
  const fk::Dims s{8, 8, 20};
  std::vector<double> a(s.numel(), 0.1);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 8; ++j)
      for (int64_t k = 8; k < 10; ++k) a[(i * 8 + j) * 20 + k] = 0.002;
  const auto frames = th::ExplicitHeatSimulator(c).surface_frames(a, s);
  th::PptOptions o;
  o.alpha = 0.1;
  const auto r = th::ppt(frames, c.dt, fk::Dims{120, 8, 8}, o);
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 8; ++j) {
      const int64_t p = i * 8 + j;
      if (i < 2) {
        EXPECT_TRUE(r.defect[p]) << i << "," << j;
        EXPECT_GT(r.blind_frequency[p], 0.0);
        EXPECT_NEAR(r.depth[p], 0.4, 0.1) << i << "," << j;  // 0.36 here
      } else if (i >= 3 && i <= 6) {
        EXPECT_FALSE(r.defect[p]) << i << "," << j;
        EXPECT_EQ(r.depth[p], 1.0);
      }
    }
  EXPECT_THROW(th::ppt(frames, -0.05, fk::Dims{120, 8, 8}, o), fk::Error);
  EXPECT_THROW(th::ppt(frames, c.dt, fk::Dims{60, 8, 8}, o), fk::Error);
}

}  // namespace
