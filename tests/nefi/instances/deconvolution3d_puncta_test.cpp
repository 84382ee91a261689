// The deconvolution3d puncta preset's refinement, seeds 1 and 2: the preset's
// automatic levels (multi-level Otsu) sharpen the dots or are refused, and the
// two-phase staircase that used to keep none of them (refined IoU 0,
// accepted by chi) is refused on its lost support. Figures: docs/performance.md,
// "deconvolution3d puncta refinement (session 11)".
#include <gtest/gtest.h>

#include "fk/error.h"
#include "fk/thread_count.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/refine_stage.h"
#include "nefi/io/run_config.h"
#include "nefi/solve/metrics.h"
#include "nefi/test_files.h"

namespace {

using nefi::test::config_path;

TEST(NefiDeconvolution3dPuncta, PresetRefinesWithOtsuLevelsAndRefusesTwoPhases) {
  const fk::test::ThreadCount one_thread(1);
  const nefi::RunConfig c = nefi::load_run_config_file(config_path("deconvolution3d_puncta.yaml"));
  EXPECT_EQ(c.config.i("refine_levels"), 0);
  EXPECT_EQ(c.config.d("refine_support_share"), 0.5);
  // The preset keeps the level set: the instance's default phase field loses
  // 0.16 IoU on seed 1 here (the yaml).
  EXPECT_EQ(c.config.s("refine_mode"), "levelset");
  auto inst = nefi::find_instance("deconvolution3d");
  // Measured on the reference's puncta with the instance's refit scales
  // (session 11; seeds 0 / 1 / 2): neural IoU 0.176 / 0.284 / 0.070, PSNR
  // 31.57 / 32.43 / 31.02 dB; refined (Otsu picks 4 levels; support kept
  // 0.90 / 0.98) IoU 0.333 / 0.488, PSNR 33.28 / 33.73, and seed 2 refused on
  // the band (0.887 < 0.9; its smooth fit marks almost no dot), the neural
  // field kept. Floors a margin below.
  // Seeds 1 and 2 run here, one accepted and one refused: with seed 0 (the
  // same branch as seed 1) this test took 155 s of make test's CPU time.
  const double refined_iou_floor[3] = {0.27, 0.42, 0.05};
  const double refined_psnr_floor[3] = {32.6, 33.0, 30.4};
  for (int s = 1; s < 3; ++s) {
    const nefi::RunOutput out = inst->run(c.config, "neural", s, {});
    const auto& m = out.metrics;
    EXPECT_GT(m.at("refined_iou"), refined_iou_floor[s]) << "seed " << s;
    EXPECT_GT(m.at("refined_psnr"), refined_psnr_floor[s]) << "seed " << s;
    if (m.at("refine_accepted") == 1.0) {
      EXPECT_GE(m.at("refine_support_kept"), 0.5) << "seed " << s;
      EXPECT_GT(m.at("refined_iou"), m.at("iou")) << "seed " << s;
      EXPECT_GT(m.at("refined_psnr"), m.at("psnr") + 1.0) << "seed " << s;
    } else {  // refused: the neural field is what is scored
      EXPECT_NE(m.at("refine_refusal"), 0.0) << "seed " << s;
      EXPECT_DOUBLE_EQ(m.at("refined_iou"), m.at("iou")) << "seed " << s;
      EXPECT_DOUBLE_EQ(m.at("refined_psnr"), m.at("psnr")) << "seed " << s;
    }
    EXPECT_EQ(m.at("refine_accepted"), s < 2 ? 1.0 : 0.0) << "seed " << s;
    // Two phases on the same fit: refused on the support, the fit kept.
    nefi::Params two = c.config;
    two.set("refine_levels", "2");
    const auto setup = inst->setup(two, "neural", s);
    ASSERT_TRUE(setup.has_value());
    nefi::SolverOptions so;
    so.seed = s;
    const nefi::RefineReport r =
        nefi::refine_edges(setup->problem, out.reconstruction, nefi::refine_options_from(two), so);
    EXPECT_FALSE(r.accepted) << "seed " << s;
    EXPECT_EQ(r.refusal, 3) << "seed " << s << ": " << r.reason;
    EXPECT_LT(r.support_kept, 0.5) << "seed " << s;
    EXPECT_EQ(r.field.to_vector<double>(), out.reconstruction.to_vector<double>());
  }
}

// refine_support_share is a fraction in [0, 1]; an error names the key.
TEST(NefiDeconvolution3dPuncta, SupportShareKeyIsChecked) {
  nefi::Params p = nefi::find_instance("deconvolution3d")->default_config();
  EXPECT_EQ(p.d("refine_support_share"), 0.0);  // off unless a preset sets it
  for (const char* bad : {"-0.1", "1.5"}) {
    p.set("refine_support_share", bad);
    try {
      nefi::refine_options_from(p);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find("refine_support_share"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
