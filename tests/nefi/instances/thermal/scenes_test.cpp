#include "nefi/instances/thermal/scenes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "fk/error.h"

namespace {

using nefi::thermal::draw_scene;
using nefi::thermal::SceneConfig;

bool same(const nefi::thermal::Scene& a, const nefi::thermal::Scene& b) {
  if (a.layer_tops != b.layer_tops || a.layer_alphas != b.layer_alphas ||
      a.defects.size() != b.defects.size())
    return false;
  for (size_t i = 0; i < a.defects.size(); ++i) {
    const auto &p = a.defects[i], &q = b.defects[i];
    if (p.shape != q.shape || p.center != q.center || p.radius != q.radius ||
        p.half_thickness != q.half_thickness || p.alpha != q.alpha)
      return false;
  }
  return true;
}

TEST(ThermalScenes, DeterministicPerSeed) {
  for (const char* kind : {"homogeneous", "layered"}) {
    SceneConfig c;
    c.scene = kind;
    EXPECT_TRUE(same(draw_scene(c, 3), draw_scene(c, 3))) << kind;
    EXPECT_FALSE(same(draw_scene(c, 3), draw_scene(c, 4))) << kind;
  }
}

TEST(ThermalScenes, EveryParameterWithinItsConfiguredRange) {
  SceneConfig c;  // the paper ranges
  c.scene = "layered";
  std::set<std::string> shapes;
  std::set<int64_t> counts, layers;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const auto s = draw_scene(c, seed);
    layers.insert(s.layer_alphas.size());
    ASSERT_EQ(s.layer_tops.size(), s.layer_alphas.size());
    EXPECT_EQ(s.layer_tops.front(), 0.0);
    for (size_t l = 0; l < s.layer_tops.size(); ++l) {
      const double bottom = l + 1 < s.layer_tops.size() ? s.layer_tops[l + 1] : c.extent[2];
      EXPECT_GE(bottom - s.layer_tops[l], c.min_layer_fraction * c.extent[2] - 1e-12);
      EXPECT_GE(s.layer_alphas[l], c.alpha_base_range[0]);
      EXPECT_LE(s.layer_alphas[l], c.alpha_base_range[1]);
    }
    counts.insert(s.defects.size());
    for (const auto& d : s.defects) {
      shapes.insert(d.shape);
      EXPECT_GE(d.center[0], c.lateral_margin);
      EXPECT_LE(d.center[0], c.extent[0] - c.lateral_margin);
      EXPECT_GE(d.center[1], c.lateral_margin);
      EXPECT_LE(d.center[1], c.extent[1] - c.lateral_margin);
      EXPECT_GE(d.center[2], c.defect_depth_range[0]);
      EXPECT_LE(d.center[2], c.defect_depth_range[1]);
      EXPECT_GE(d.radius, c.defect_radius_range[0]);
      EXPECT_LE(d.radius, c.defect_radius_range[1]);
      EXPECT_GE(d.half_thickness, c.defect_half_thickness_range[0]);
      EXPECT_LE(d.half_thickness, c.defect_half_thickness_range[1]);
      EXPECT_GE(d.alpha, c.alpha_defect_range[0]);
      EXPECT_LE(d.alpha, c.alpha_defect_range[1]);
    }
  }
  EXPECT_EQ(shapes, (std::set<std::string>{"box", "cylinder", "ellipsoid"}));
  EXPECT_EQ(counts, (std::set<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(layers, (std::set<int64_t>{3, 4}));
}

TEST(ThermalScenes, RasterisedGeometry) {
  nefi::thermal::Scene s;
  s.layer_tops = {0.0, 0.5};
  s.layer_alphas = {0.1, 0.2};
  nefi::thermal::Defect box{"box", {5.0, 5.0, 0.25}, 1.0, 0.1, 0.01};
  nefi::thermal::Defect cyl{"cylinder", {2.0, 8.0, 0.75}, 1.0, 0.1, 0.02};
  nefi::thermal::Defect ell{"ellipsoid", {8.0, 2.0, 0.5}, 1.0, 0.2, 0.03};
  s.defects = {box, cyl, ell};
  EXPECT_EQ(s.alpha_at(0.1, 0.1, 0.1), 0.1);
  EXPECT_EQ(s.alpha_at(0.1, 0.1, 0.9), 0.2);
  EXPECT_EQ(s.alpha_at(5.9, 4.1, 0.3), 0.01);   // a box corner
  EXPECT_EQ(s.alpha_at(2.6, 8.6, 0.7), 0.02);   // r² = 0.72, |dz| = 0.05: in the disk
  EXPECT_EQ(s.alpha_at(2.9, 8.9, 0.7), 0.2);    // r² = 1.62: outside the cylinder
  EXPECT_EQ(s.alpha_at(8.0, 2.0, 0.69), 0.03);  // the ellipsoid's top pole region
  EXPECT_EQ(s.alpha_at(8.7, 2.7, 0.5), 0.03);   // r² = 0.98 at the equator
  EXPECT_EQ(s.alpha_at(8.7, 2.7, 0.6), 0.2);    // 0.98 + 0.25 > 1
  EXPECT_TRUE(s.in_defect(5.0, 5.0, 0.25));
  EXPECT_FALSE(s.in_defect(5.0, 5.0, 0.5));
  // Cell centres ((i + 0.5), (j + 0.5), (k + 0.5) / 10).
  const fk::Dims g{10, 10, 10};
  const auto a = nefi::thermal::rasterise(s, g, {10.0, 10.0, 1.0});
  EXPECT_EQ(a[(5 * 10 + 5) * 10 + 2], 0.01);  // z 0.25: the box
  EXPECT_EQ(a[(5 * 10 + 5) * 10 + 4], 0.1);   // z 0.45: first stratum
  EXPECT_EQ(a[(5 * 10 + 5) * 10 + 7], 0.2);   // z 0.75: second stratum
  EXPECT_EQ(a[(2 * 10 + 7) * 10 + 7], 0.02);  // (2.5, 7.5, 0.75): the cylinder
}

TEST(ThermalScenes, BadConfigsAreClearErrors) {
  auto bad = [](auto edit, const char* key) {
    SceneConfig c;
    edit(c);
    try {
      draw_scene(c, 0);
      ADD_FAILURE() << key;
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  bad([](SceneConfig& c) { c.scene = "marbled"; }, "scene");
  bad([](SceneConfig& c) { c.alpha_base_range = {0.2, 0.1}; }, "alpha_base_range");
  bad([](SceneConfig& c) { c.alpha_defect_range = {-0.1, 0.1}; }, "alpha_defect_range");
  bad([](SceneConfig& c) { c.n_defects = {3, 2}; }, "n_defects");
  bad([](SceneConfig& c) { c.defect_shapes = {"sphere"}; }, "defect_shapes");
  bad([](SceneConfig& c) { c.lateral_margin = 6.0; }, "lateral_margin");
  bad([](SceneConfig& c) { c.min_layer_fraction = 0.3; }, "min_layer_fraction");
}

}  // namespace
