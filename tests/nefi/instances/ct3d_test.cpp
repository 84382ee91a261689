#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "fk/thread_count.h"
#include "nefi/instances/bad_value_errors.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/operators/radon.h"
#include "nefi/test_files.h"

namespace {

using nefi::test::config_path;

TEST(NefiCt3d, MeasurementShapeTagAndScenes) {
  auto inst = nefi::find_instance("ct3d");
  nefi::Params p = inst->default_config();
  p.set("n", "16");
  p.set("n_z", "8");
  p.set("n_views", "5");
  for (const char* scene : {"ellipsoids", "blobs", "piecewise"}) {
    p.set("scene", scene);
    auto [m, gt] = inst->make_measurement(p, 1);
    EXPECT_EQ(m.data.shape(), fk::Dims({5, 16, 8})) << scene;
    EXPECT_EQ(gt.shape(), fk::Dims({16, 16, 8})) << scene;
    const auto v = gt.to_vector<double>();
    EXPECT_GT(*std::max_element(v.begin(), v.end()), 0.3) << scene;
  }
  nefi::RadonOperator op(nefi::Domain({16, 16, 8}), {});
  EXPECT_NE(std::string(nefi::ct3d_data_tag()), op.fidelity_tag());
}

TEST(NefiCt3d, BadValuesAreOneLineErrorsNamingTheKey) {
  auto inst = nefi::find_instance("ct3d");
  const nefi::test::BadValue bad_values[] = {{"tv", "-1"},
                                             {"tv_eps", "0"},
                                             {"l1", "-1"},
                                             {"n", "4"},
                                             {"n_z", "2"},
                                             {"n_views", "0"},
                                             {"angle_range", "-10"},
                                             {"extent", "0"},
                                             {"height", "-1"},
                                             {"height", ".inf"},  // once 99 dB on zeros
                                             {"det_per_pixel", "0"},
                                             {"supersample", "0"},
                                             {"noise_std", "-1"},
                                             {"scene", "cubes"},
                                             {"init_value", "1.5"},
                                             {"iou_tau", "1"},
                                             {"refine_levels", "1"},
                                             {"refine_steps", "0"},
                                             {"refine_lr", "0"},
                                             {"refine_eps_end", "5"},
                                             {"refine_chi_factor", "0.5"},
                                             {"refine_band_fraction", "2"}};
  nefi::test::expect_bad_values_name_their_key(
      inst->default_config(), bad_values,
      [&](const nefi::Params& q) { inst->run(q, "fbp3d", 0, {}); });
  nefi::Params q = inst->default_config();
  EXPECT_THROW(q.set("refine_level", "2"), fk::Error);
  EXPECT_THROW(inst->run(q, "fbp", 0, {}), fk::Error);
}

// Floors over seeds 0-2 on a reduced smoke (16 x 16 x 8, 8 views, 60 + 90
// steps, 100 refinement steps; the full smoke takes ~10 s a seed at one
// thread and reaches 29.45 dB, IoU 0.826 -> refined 0.834 at seed 0).
// Measured (1 thread): FBP 22.47 / 22.43 / 22.43 dB; neural 23.75 / 22.92 /
// 24.25 dB, IoU 0.905 / 0.891 / 0.915, refined IoU 0.875 / 0.881 / 0.932
// with the histogram's phases, 0.877 / 0.935 / 0.896 with the phases by chi
// (session 14: 5 / 4 / 5 of them). On this coarse grid the shell is
// sub-voxel and the level set loses a little IoU on two seeds; the floors
// hold it near the smooth fit.
TEST(NefiCt3d, ReducedSmokeQualityFloor) {
  const fk::test::ThreadCount one_thread(1);
  nefi::RunConfig c = nefi::load_run_config_file(config_path("ct3d_smoke.yaml"));
  auto inst = nefi::find_instance("ct3d");
  nefi::Params p = c.config;
  p.set("n", "16");
  p.set("n_z", "8");
  p.set("n_views", "8");
  p.set("steps", "[60, 90]");
  p.set("refine_steps", "100");
  for (int s = 0; s < 3; ++s) {
    auto fbp = inst->run(p, "fbp3d", s, {});
    EXPECT_GT(fbp.metrics.at("psnr"), 21.0) << "seed " << s;
    auto out = inst->run(p, "neural", s, {});
    EXPECT_GT(out.metrics.at("psnr"), 21.5) << "seed " << s;
    EXPECT_GT(out.metrics.at("iou"), 0.85) << "seed " << s;
    EXPECT_EQ(out.metrics.at("refine_accepted"), 1.0) << "seed " << s;
    EXPECT_GT(out.metrics.at("refined_iou"), 0.83) << "seed " << s;
    // 100 steps a refit (one per phase count tried)
    EXPECT_EQ(std::fmod(out.metrics.at("refine_refit_steps"), 100.0), 0.0) << "seed " << s;
  }
  // A capped run (--smoke-steps) caps the refits too: they ran their own
  // 100-900 steps whatever the cap (half a minute for a 2-step ct3d_full run).
  nefi::SolverOptions capped;
  capped.max_total_steps = 4;
  const auto out = inst->run(p, "grid", 0, capped);
  EXPECT_GT(out.metrics.at("refine_refit_steps"), 0.0);
  EXPECT_LE(out.metrics.at("refine_refit_steps"), 4.0 * (out.metrics.at("refine_levels") + 8));
  EXPECT_EQ(std::fmod(out.metrics.at("refine_refit_steps"), 4.0), 0.0);
}

// The full preset's lateral grid and views (64 x 64, 30 views) at 16
// slices and 500 + 1000 grid steps (about 10 s at one thread): a smooth fit
// good enough to resolve the phantom's 0.3 features (IoU 0.850, chi 3.35).
// The histogram's 3 phases (refine_levels_by separation, max 4, chi factor
// 1.1: the defaults before session 14) merged them into the 0.2 brain:
// accepted at chi 2.80, IoU 0.850 -> 0.807. The phases by chi keep them:
// measured 6 phases, chi 1.69, IoU 0.847.
TEST(NefiCt3d, FullGridRefinementKeepsTheIoU) {
  const fk::test::ThreadCount one_thread(1);
  nefi::RunConfig c = nefi::load_run_config_file(config_path("ct3d_full.yaml"));
  auto inst = nefi::find_instance("ct3d");
  nefi::Params p = c.config;
  p.set("n_z", "16");
  p.set("steps", "[500, 1000]");
  const auto out = inst->run(p, "grid", 0, {});
  const auto& m = out.metrics;
  EXPECT_GT(m.at("iou"), 0.84);
  EXPECT_EQ(m.at("refine_accepted"), 1.0);
  EXPECT_GT(m.at("refine_levels"), 3.0);
  EXPECT_LE(m.at("refine_chi"), m.at("refine_chi_smooth"));
  EXPECT_EQ(m.at("refine_chi"),
            m.at("refine_chi_levels_" + std::to_string(static_cast<int>(m.at("refine_levels")))));
  EXPECT_LT(m.at("refine_chi_levels_4"), m.at("refine_chi_levels_3"));
  EXPECT_GT(m.at("refined_iou"), m.at("iou") - 0.01);
}

}  // namespace
