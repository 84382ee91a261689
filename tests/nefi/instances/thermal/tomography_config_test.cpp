#include "nefi/instances/thermal/tomography_config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fk/error.h"

namespace {

namespace th = nefi::thermal;

// The shared keys reach every consumer from one read: the slab, the frames,
// the back face and the flash are the same in the operator and the simulator.
TEST(ThermalTomographyConfig, DefaultsReachEveryConsumer) {
  nefi::Params p = th::tomography_params();
  p.set("flash_center", "[2, 3]");
  p.set("bc_back", "robin");
  p.set("robin_h", "0.5");
  const th::TomographyConfig c = th::TomographyConfig::from(p);
  EXPECT_EQ(c.grid, (fk::Dims{64, 64, 16}));
  const std::vector<double> extent{10, 10, 1};
  EXPECT_EQ(c.extent, extent);
  EXPECT_EQ(c.heat.extent, extent);
  EXPECT_EQ(c.simulator.extent, extent);
  EXPECT_EQ(c.scene.extent, extent);
  EXPECT_EQ(c.heat.back_bc, "robin");
  EXPECT_EQ(c.simulator.back_bc, "robin");
  EXPECT_EQ(c.simulator.robin_h, 0.5);
  ASSERT_TRUE(c.heat.flash.center && c.simulator.flash.center);
  EXPECT_EQ((*c.heat.flash.center)[1], 3.0);
  EXPECT_EQ((*c.simulator.flash.center)[0], 2.0);
  EXPECT_EQ(c.metrics.thickness, 1.0);
  EXPECT_EQ(c.tsr.thickness, 1.0);
  EXPECT_EQ(c.ppt.alpha, 0.5 * (0.1 + 0.2));  // mid alpha_base_range
  EXPECT_EQ(c.prior_defect_alpha, 0.5 * (0.005 + 0.015));
  EXPECT_EQ(c.prior_thickness, 0.08 + 0.2);
  // Frames 1..100 at dt 0.05.
  ASSERT_EQ(c.frame_times.size(), 100u);
  EXPECT_EQ(c.frame_times.front(), 0.05);
  EXPECT_EQ(c.frame_times.back(), 100 * 0.05);
  EXPECT_EQ(c.frame_interval, 0.05);
  ASSERT_EQ(c.nefty_curriculum.stages.size(), 1u);
  EXPECT_EQ(c.nefty_curriculum.stages[0].steps, 10000);
  EXPECT_EQ(c.nefty_curriculum.stages[0].lr, 5e-5);
  EXPECT_EQ(c.nefty_curriculum.stages[0].lr_schedule, "step");
  EXPECT_EQ(c.nefty_curriculum.optim.optimizer, "adam");
  EXPECT_EQ(c.grid_curriculum.stages[0].steps, 10000);  // grid_steps 0: steps
  EXPECT_EQ(c.grid_curriculum.stages[0].lr, 5e-5);      // grid_lr 0: lr
}

TEST(ThermalTomographyConfig, GridMethodScheduleAndStages) {
  nefi::Params p = th::tomography_params();
  p.set("grid", "[16, 16, 8]");
  p.set("steps", "400");
  p.set("grid_steps", "60");
  p.set("grid_lr", "0.01");
  p.set("n_stages", "2");
  p.set("anneal_steps", "100");
  const th::TomographyConfig c = th::TomographyConfig::from(p);
  ASSERT_EQ(c.nefty_curriculum.stages.size(), 2u);
  ASSERT_EQ(c.grid_curriculum.stages.size(), 2u);
  EXPECT_EQ(c.nefty_curriculum.stages[1].steps, 200);  // steps / n_stages
  EXPECT_EQ(c.grid_curriculum.stages[1].steps, 30);
  EXPECT_EQ(c.grid_curriculum.stages[0].lr, 0.01);
  EXPECT_EQ(c.nefty_curriculum.stages[1].shape, (fk::Dims{16, 16, 8}));
  EXPECT_EQ(c.nefty_curriculum.stages[0].shape, (fk::Dims{8, 8, 4}));
  EXPECT_DOUBLE_EQ(c.nefty_curriculum.stages[1].anneal_fraction, 100.0 / 200);
  EXPECT_EQ(c.grid_curriculum.stages[1].anneal_fraction, 1.0);  // 100 > 30 steps: clamped
  p.set("stage_steps", "[50]");                                 // one entry for two stages
  try {
    th::TomographyConfig::from(p);
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'stage_steps'"), std::string::npos) << e.what();
  }
  p.set("stage_steps", "[50, 70]");
  EXPECT_EQ(th::TomographyConfig::from(p).nefty_curriculum.stages[1].steps, 70);
  // The reference's warmup_cosine: a linear warm-up, then cosine.
  p.set("lr_schedule", "warmup_cosine");
  p.set("lr_warmup", "10");
  p.set("grid_steps", "0");
  const nefi::Stage s = th::TomographyConfig::from(p).nefty_curriculum.stages[1];
  EXPECT_EQ(s.lr_warmup, 10);
  EXPECT_DOUBLE_EQ(s.lr_at(0), s.lr / 10);
  EXPECT_DOUBLE_EQ(s.lr_at(10), s.lr);
  p.set("lr_warmup", "60");  // above stage 0's 50 steps
  try {
    th::TomographyConfig::from(p);
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'lr_warmup'"), std::string::npos) << e.what();
  }
}

}  // namespace
