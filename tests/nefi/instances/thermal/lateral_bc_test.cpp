// thermal_tomography with insulated sides (bc_lateral neumann): the data
// generator and the inversion operator both take it, the frames differ from
// the periodic ones, and a short solve runs end to end.
#include <gtest/gtest.h>

#include <cmath>

#include "fk/error.h"
#include "fk/thread_count.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/test_files.h"

namespace {

TEST(ThermalLateralBc, NeumannDataAndSolve) {
  const fk::test::ThreadCount one_thread(1);
  nefi::RunConfig c =
      nefi::load_run_config_file(nefi::test::config_path("thermal_tomography_smoke.yaml"));
  auto inst = nefi::find_instance("thermal_tomography");
  const auto periodic = inst->make_measurement(c.config, 0).first.data.to_vector<double>();
  nefi::apply_set(c, "bc_lateral=neumann");
  const auto closed = inst->make_measurement(c.config, 0).first.data.to_vector<double>();
  ASSERT_EQ(periodic.size(), closed.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < closed.size(); ++i) {
    ASSERT_TRUE(std::isfinite(closed[i]));
    diff = std::max(diff, std::abs(closed[i] - periodic[i]));
    scale = std::max(scale, std::abs(periodic[i]));
  }
  EXPECT_GT(diff, 1e-3 * scale);  // the flash's tails reach the sides
  nefi::apply_set(c, "steps=5");
  const auto out = inst->run(c.config, "grid", 0, {});
  for (double v : out.reconstruction.to_vector<double>()) ASSERT_TRUE(std::isfinite(v));
  EXPECT_TRUE(std::isfinite(out.metrics.at("surface_psnr")));
  nefi::apply_set(c, "bc_lateral=dirichlet");
  EXPECT_THROW(inst->make_measurement(c.config, 0), fk::Error);
}

}  // namespace
