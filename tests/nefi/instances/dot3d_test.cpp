#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/parallel.h"
#include "nefi/instances/dot3d_model.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/operators/depth_compensated.h"
#include "nefi/test_files.h"

namespace {

// Sources on a centred lattice 1/μ_s′ deep, each spread to unit mass; the
// Robin sink is K_b/h per boundary face (corner cells have three); the
// detector rows read K_b Φ of the top cells, so a flat top field reads K_b;
// close pairs are masked by their 3-D distance.
TEST(NefiDot3d, GeometryModel) {
  nefi::dot::Geometry g;
  const fk::Dims shape{20, 20, 10};
  const double h = 2.0, vol = h * h * h;
  const auto src = nefi::dot::source_positions(g);
  ASSERT_EQ(src.size(), 9u);
  EXPECT_NEAR(src[0].position[0], 20 - 12, 1e-12);
  EXPECT_NEAR(src[8].position[1], 20 + 12, 1e-12);
  EXPECT_NEAR(src[4].position[2], 1.0, 1e-12);
  const auto b = nefi::dot::source_rhs(g, shape);
  for (int p = 0; p < 9; ++p) {
    double mass = 0;
    for (int64_t i = 0; i < 4000; ++i) mass += b[p * 4000 + i] * vol;
    EXPECT_NEAR(mass, 1.0, 1e-12) << p;
  }
  const double kb = 1.0 / (2 * g.robin_a() + h / (2 * g.diffusion()));
  const auto sink = nefi::dot::robin_sink(g, shape);
  EXPECT_NEAR(sink[0], 3 * kb / h, 1e-15);                      // corner
  EXPECT_NEAR(sink[(5 * 20 + 5) * 10 + 0], kb / h, 1e-15);      // top face
  EXPECT_NEAR(sink[(5 * 20 + 5) * 10 + 4], 0.0, 1e-15);         // interior
  EXPECT_NEAR(sink[(0 * 20 + 5) * 10 + 9], 2 * kb / h, 1e-15);  // edge
  const auto mat = nefi::dot::detector_matrix(g, shape);
  for (int64_t d = 0; d < g.detectors(); ++d) {
    double top = 0, rest = 0;
    for (int64_t i = 0; i < 4000; ++i) (i % 10 == 0 ? top : rest) += mat[d * 4000 + i];
    EXPECT_NEAR(top, kb, 1e-14) << d;
    EXPECT_EQ(rest, 0.0);
  }
  const auto mask = nefi::dot::pair_mask(g);
  const auto det = nefi::dot::detector_positions(g);
  for (size_t s = 0; s < src.size(); ++s)
    for (size_t d = 0; d < det.size(); ++d) {
      const double r = std::hypot(src[s].position[0] - det[d][0], src[s].position[1] - det[d][1],
                                  src[s].position[2]);
      EXPECT_EQ(mask[s * det.size() + d], r < 6 ? 0.0 : 1.0);
    }
}

// Scenes are seeded, above the background inside the absorbers, and the
// deep class sits deeper; the data generator (tag distinct from the
// inversion operator's) and the inversion operator at the true field agree
// to well within the absorbers' effect on the data but not exactly.
TEST(NefiDot3d, ScenesAndDataGenerator) {
  nefi::dot::Geometry g;
  const fk::Dims shape{20, 20, 10};
  const nefi::dot::Absorbers a("single", g, 0.01, 4), b("single", g, 0.01, 4);
  EXPECT_EQ(a.render(shape, 2), b.render(shape, 2));
  EXPECT_THROW(nefi::dot::Absorbers("layers", g, 0.01, 0), fk::Error);
  auto depth = [&](const std::string& scene, uint64_t seed) {
    const auto v = nefi::dot::Absorbers(scene, g, 0.01, seed).render(shape, 2);
    double w = 0, wz = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      EXPECT_GE(v[i], 0.01 - 1e-15);
      EXPECT_LE(v[i], 0.05 + 1e-15);
      w += v[i] - 0.01;
      wz += (v[i] - 0.01) * 2.0 * (static_cast<double>(i % 10) + 0.5);
    }
    EXPECT_GT(w, 0.0);
    return wz / w;
  };
  EXPECT_GT(depth("deep", 1), depth("single", 1) + 2.0);

  auto inst = nefi::find_instance("dot3d");
  nefi::RunConfig c = nefi::load_run_config_file(nefi::test::config_path("dot3d_smoke.yaml"));
  c.config.set("noise", "0");
  auto s = inst->setup(c.config, "grid", 0);
  ASSERT_TRUE(s.has_value());
  EXPECT_NE(std::string(nefi::dot3d_data_tag()), s->problem.op->fidelity_tag());
  const auto clean = s->measurement.data.to_vector<double>();
  const auto mask = s->measurement.mask.to_vector<double>();
  const auto model = s->problem.op->apply(s->gt.to(fk::DType::F32)).to_vector<double>();
  double diff = 0, contrast = 0, kept = 0;
  for (size_t i = 0; i < clean.size(); ++i) {
    diff = std::max(diff, mask[i] * std::abs(clean[i] - model[i]));
    contrast = std::max(contrast, mask[i] * std::abs(1 - clean[i]));
    kept += mask[i];
  }
  EXPECT_GT(kept, 0.5 * static_cast<double>(clean.size()));
  EXPECT_GT(contrast, 0.05);  // the absorber dims some pairs by > 5 %
  EXPECT_GT(diff, 1e-5);
  EXPECT_LT(diff, 0.2 * contrast);
}

TEST(NefiDot3d, BadValuesAreErrorsNamingTheKey) {
  auto inst = nefi::find_instance("dot3d");
  for (auto [key, value] :
       std::vector<std::pair<const char*, const char*>>{{"grid", "[8, 8]"},
                                                        {"extent", "[40, 40, 0]"},
                                                        {"scene", "layers"},
                                                        {"n_detectors", "1"},
                                                        {"n_sources", "0"},
                                                        {"mus_prime", "0"},
                                                        {"mua_min", "0.02"},
                                                        {"noise", "-1"},
                                                        {"supersample", "0"},
                                                        {"detector_span", "1.5"},
                                                        {"grad_mode", "adjoint"},
                                                        {"precond", "ilu"},
                                                        {"refine_absorber_mua", "0.2"},
                                                        {"depth_compensation", "-0.5"},
                                                        {"refine_lr", "0"}}) {
    nefi::Params p = inst->default_config();
    p.set("grid", "[8, 8, 4]");
    p.set(key, value);
    try {
      inst->make_measurement(p, 0);
      ADD_FAILURE() << key;
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

// The neural method trains through the depth-compensated operator (the
// sensitivity of the masked pairs falls with depth, so the weights grow with
// it) with the DOT readings unchanged; the grid and depth_compensation 0 use
// the DOT operator itself.
TEST(NefiDot3d, NeuralTrainsThroughTheDepthCompensation) {
  auto inst = nefi::find_instance("dot3d");
  nefi::RunConfig c = nefi::load_run_config_file(nefi::test::config_path("dot3d_smoke.yaml"));
  c.config.set("grid", "[10, 10, 6]");
  auto neural = inst->setup(c.config, "neural", 0);
  ASSERT_TRUE(neural.has_value());
  const auto* op = dynamic_cast<const nefi::DepthCompensatedOperator*>(neural->problem.op.get());
  ASSERT_NE(op, nullptr);
  const auto& w = op->layer_weights();
  const auto& sens = op->layer_sensitivity();
  ASSERT_EQ(w.size(), 6u);
  for (size_t k = 1; k < w.size(); ++k) {
    EXPECT_LT(sens[k], sens[k - 1]) << k;
    EXPECT_GT(w[k], w[k - 1]) << k;
  }
  EXPECT_GT(sens[0], 100 * sens[5]);
  auto grid = inst->setup(c.config, "grid", 0);
  ASSERT_TRUE(grid.has_value());
  EXPECT_EQ(grid->problem.op->kind(), "diffuse_optical");
  // In f64 (the f32 CG stops at its round-off, where warm starts differ).
  const fk::Tensor x = neural->gt.to(fk::DType::F64);
  const auto a = op->apply(x).to_vector<double>(),
             b = grid->problem.op->apply(x).to_vector<double>();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << i;
  c.config.set("depth_compensation", "0");
  EXPECT_EQ(inst->setup(c.config, "neural", 0)->problem.op->kind(), "diffuse_optical");
}

// A reduced smoke (the reference preset's 150 + 200 steps instead of the
// gallery's 700) over seeds 0-2, then the level-set refinement on seeds 0
// and 2 (seed 2 is where a start from the smooth fit's own levels kept the
// data with an absorber below the IoU's level): floors below the measured
// values (see configs/dot3d_smoke.yaml for the full smoke).
TEST(NefiDot3d, ReducedSmokeQualityFloor) {
  fk::set_num_threads(1);
  nefi::RunConfig c = nefi::load_run_config_file(nefi::test::config_path("dot3d_smoke.yaml"));
  c.config.set("steps", "[150, 200]");
  auto inst = nefi::find_instance("dot3d");
  // Measured (session 10: depth compensation 0.5, refinement 900 steps at
  // 1e-3): 24.64 / 31.58 / 26.76 dB, IoU 0.66 / 0.76 / 0.72, refined IoU
  // 0.74 (seed 0) and 0.81 (seed 2), both accepted (session 8, without the
  // compensation: 26.71 / 31.00 / 29.79 dB; at this budget the compensation
  // costs seeds 0 and 2, at the preset's 700 steps it gains on the mean).
  // The floors leave 1.6-2.6 dB: the training is chaotic enough that a
  // change of preconditioner alone (same solution to tol 1e-7) moved these
  // by 1-3 dB.
  const double psnr[3] = {23.0, 29.0, 25.0}, iou[3] = {0.55, 0.64, 0.6};
  const double refined[3] = {0.68, 0, 0.72};
  for (int s = 0; s < 3; ++s) {
    c.config.set("refine", s == 1 ? "false" : "true");
    const auto m = inst->run(c.config, "neural", s, {}).metrics;
    EXPECT_GT(m.at("psnr"), psnr[s]) << s;
    EXPECT_GT(m.at("iou"), iou[s]) << s;
    if (s == 1) {
      EXPECT_EQ(m.count("refined_iou"), 0u);
      continue;
    }
    EXPECT_EQ(m.at("refine_accepted"), 1.0) << s;
    EXPECT_GT(m.at("refined_iou"), refined[s]) << s;
  }
}

}  // namespace
