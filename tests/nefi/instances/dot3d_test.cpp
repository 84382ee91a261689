#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/thread_count.h"
#include "nefi/instances/bad_value_errors.h"
#include "nefi/instances/dot3d_model.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/operators/depth_compensated.h"
#include "nefi/test_files.h"

namespace {

// Sources on a centred lattice 1/μ_s′ deep, each spread to unit mass; the
// Robin sink is K_b/h per boundary face (corner cells have three); the
// detector rows read K_b Φ of the top cells, so a flat top field reads K_b;
// the 12 pixels per axis tile 3–37 mm (span 0.85 of 40 mm, pitch 34/12 mm),
// centred half a pitch inside it, so a top field linear in x reads K_b times
// the pixel's centre x (its footprint samples are symmetric about it and
// bilinear interpolation is exact for a linear field); close pairs are
// masked by their lateral distance.
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
  const auto det = nefi::dot::detector_positions(g);
  ASSERT_EQ(det.size(), 144u);
  const double pitch = 34.0 / 12.0;
  EXPECT_NEAR(g.detector_size(), pitch, 1e-12);
  for (int64_t a = 0; a < 12; ++a)
    for (int64_t c = 0; c < 12; ++c) {
      const int64_t d = a * 12 + c;
      EXPECT_NEAR(det[d][0], 3 + (a + 0.5) * pitch, 1e-12) << d;
      EXPECT_NEAR(det[d][1], 3 + (c + 0.5) * pitch, 1e-12) << d;
      double reading = 0;
      for (int64_t i = 0; i < 20; ++i)
        for (int64_t j = 0; j < 20; ++j)
          reading += mat[d * 4000 + (i * 20 + j) * 10] * (i + 0.5) * h;
      EXPECT_NEAR(reading, kb * (3 + (a + 0.5) * pitch), 1e-12) << d;
    }
  const auto mask = nefi::dot::pair_mask(g);
  int64_t masked = 0;
  for (size_t s = 0; s < src.size(); ++s)
    for (size_t d = 0; d < det.size(); ++d) {
      const double r = std::hypot(src[s].position[0] - det[d][0], src[s].position[1] - det[d][1]);
      EXPECT_EQ(mask[s * det.size() + d], r < 6 ? 0.0 : 1.0);
      masked += r < 6 ? 1 : 0;
    }
  EXPECT_GT(masked, 0);
}

// The scene classes (dot3d_model.h): seeded; radius 3-5 mm, mu_a 3-5x the
// background, centres within the central half of the face, depth in the
// class's range but at least radius + margin from both faces; multi has 2-3
// absorbers laterally apart by radius + radius + 2 mm; rendered cell
// averages stay between the background and the absorbers' value.
TEST(NefiDot3d, ScenesFollowTheClassRanges) {
  nefi::dot::Geometry g;
  const double margin = 2.0;
  const nefi::dot::Absorbers a("single", g, 0.01, margin, 4), b("single", g, 0.01, margin, 4);
  EXPECT_EQ(a.render({20, 20, 10}, 2), b.render({20, 20, 10}, 2));
  EXPECT_THROW(nefi::dot::Absorbers("layers", g, 0.01, margin, 0), fk::Error);
  struct Range {
    const char* scene;
    double lo, hi;
    size_t min_count, max_count;
  };
  for (const Range& r :
       {Range{"single", 5, 8, 1, 1}, Range{"multi", 4, 11, 2, 3}, Range{"deep", 10, 13, 1, 1}}) {
    std::set<size_t> counts;
    for (uint64_t seed = 0; seed < 20; ++seed) {
      const nefi::dot::Absorbers scene(r.scene, g, 0.01, margin, seed);
      const auto& sp = scene.spheres();
      counts.insert(sp.size());
      for (size_t i = 0; i < sp.size(); ++i) {
        const auto& o = sp[i];
        EXPECT_GE(o.radius, 3.0);
        EXPECT_LE(o.radius, 5.0);
        EXPECT_GE(o.value, 0.03);
        EXPECT_LE(o.value, 0.05);
        for (int axis = 0; axis < 2; ++axis) {
          EXPECT_GE(o.centre[axis], 10.0) << r.scene << " " << seed;
          EXPECT_LE(o.centre[axis], 30.0) << r.scene << " " << seed;
        }
        const double lo = std::max(r.lo, o.radius + margin);
        EXPECT_GE(o.centre[2], lo) << r.scene << " " << seed;
        EXPECT_LE(o.centre[2], std::max(lo, std::min(r.hi, 20 - o.radius - margin)));
        for (size_t j = 0; j < i; ++j)
          EXPECT_GE(std::hypot(o.centre[0] - sp[j].centre[0], o.centre[1] - sp[j].centre[1]),
                    o.radius + sp[j].radius + 2.0)
              << seed;
      }
      for (double v : scene.render({20, 20, 10}, 2)) {
        EXPECT_GE(v, 0.01 - 1e-15);
        EXPECT_LE(v, 0.05 + 1e-15);
      }
    }
    EXPECT_EQ(*counts.begin(), r.min_count) << r.scene;
    EXPECT_EQ(*counts.rbegin(), r.max_count) << r.scene;
  }
}

// The data generator runs the inversion's own FV model (sources, Robin sink,
// detector rows, calibration) on the supersampled grid: at supersample 1 its
// clean data are the inversion operator at the true field (both solved to
// 1e-10 here; the data are stored in f32), at 2 they differ by the model's discretisation error,
// well within the absorber's effect on the data. The generator's tag is its own.
TEST(NefiDot3d, DataGeneratorIsTheModelOnAFinerGrid) {
  auto inst = nefi::find_instance("dot3d");
  nefi::RunConfig c = nefi::load_run_config_file(nefi::test::config_path("dot3d_smoke.yaml"));
  c.config.set("noise", "0");
  c.config.set("tol", "1e-10");
  auto largest_gap = [&](int64_t supersample, double* contrast) {
    c.config.set("supersample", std::to_string(supersample));
    auto s = inst->setup(c.config, "grid", 0);
    EXPECT_NE(std::string(nefi::dot3d_data_tag()), s->problem.op->fidelity_tag());
    const auto clean = s->measurement.data.to_vector<double>();
    const auto mask = s->measurement.mask.to_vector<double>();
    const auto model = s->problem.op->apply(s->gt.to(fk::DType::F64)).to_vector<double>();
    double gap = 0, kept = 0;
    *contrast = 0;
    for (size_t i = 0; i < clean.size(); ++i) {
      gap = std::max(gap, mask[i] * std::abs(clean[i] - model[i]));
      *contrast = std::max(*contrast, mask[i] * std::abs(1 - clean[i]));
      kept += mask[i];
    }
    EXPECT_GT(kept, 0.5 * static_cast<double>(clean.size()));
    return gap;
  };
  double contrast = 0;
  EXPECT_LT(largest_gap(1, &contrast), 1e-6);
  EXPECT_GT(contrast, 0.05);  // the absorber dims some pairs by > 5 %
  const double gap = largest_gap(2, &contrast);
  EXPECT_GT(gap, 1e-3);
  EXPECT_LT(gap, 0.2 * contrast);
}

TEST(NefiDot3d, BadValuesAreOneLineErrorsNamingTheKey) {
  auto inst = nefi::find_instance("dot3d");
  const nefi::test::BadValue bad_values[] = {{"grid", "[8, 8]"},
                                             {"extent", "[40, 40, 0]"},
                                             {"extent", "[40, 40, 8]"},  // absorbers below it
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
                                             {"refine_lr", "0"}};
  nefi::Params base = inst->default_config();
  base.set("grid", "[8, 8, 4]");
  nefi::test::expect_bad_values_name_their_key(
      base, bad_values, [&](const nefi::Params& p) { inst->make_measurement(p, 0); });
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
// and 2 (on the older scene draw seed 2 was where a start from the smooth
// fit's own levels kept the data with an absorber below the IoU's level):
// floors below the measured values (see configs/dot3d_smoke.yaml for the full smoke).
TEST(NefiDot3d, ReducedSmokeQualityFloor) {
  const fk::test::ThreadCount one_thread(1);
  nefi::RunConfig c = nefi::load_run_config_file(nefi::test::config_path("dot3d_smoke.yaml"));
  c.config.set("steps", "[150, 200]");
  auto inst = nefi::find_instance("dot3d");
  // Measured (session 11, the scene classes of dot3d_model.h, the
  // reference's IoU, each field's own half-max mask, and the reference's
  // detector tiling and lateral pair mask): 27.19 / 31.56 / 25.68 dB, IoU
  // 0.60 / 0.82 / 0.58, refined IoU 0.83 (seed 0) and 0.81 (seed 2), both
  // accepted. The floors leave about 2 dB and 0.1 IoU: the training is
  // chaotic enough that a change of preconditioner alone (same solution to
  // tol 1e-7) moved these by 1-3 dB (session 8).
  const double psnr[3] = {25.0, 29.5, 23.5}, iou[3] = {0.50, 0.70, 0.45};
  const double refined[3] = {0.70, 0, 0.70};
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
