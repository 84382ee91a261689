#include "nefi/instances/thermal/scenes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
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
    if (p.shape != q.shape || p.center != q.center || p.radii != q.radii || p.angle != q.angle ||
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
      // Centre depth: the configured fraction of H, clipped so the defect
      // stays inside the slab.
      const double H = c.extent[2];
      EXPECT_GE(d.center[2], std::max(c.defect_depth_range[0] * H, d.half_thickness));
      EXPECT_LE(d.center[2], std::min(c.defect_depth_range[1] * H, H - d.half_thickness));
      for (double r : d.radii) {
        EXPECT_GE(r, c.defect_radius_range[0]);
        EXPECT_LE(r, c.defect_radius_range[1]);
      }
      EXPECT_NE(d.radii[0], d.radii[1]);  // two independent draws
      EXPECT_GE(d.angle, 0.0);
      EXPECT_LE(d.angle, std::numbers::pi);
      EXPECT_GE(d.half_thickness, c.defect_half_thickness_range[0]);
      EXPECT_LE(d.half_thickness, c.defect_half_thickness_range[1]);
      EXPECT_GE(d.alpha, c.alpha_defect_range[0]);
      EXPECT_LE(d.alpha, c.alpha_defect_range[1]);
    }
  }
  EXPECT_EQ(shapes, (std::set<std::string>{"box", "cylinder", "ellipsoid"}));
  EXPECT_EQ(counts, (std::set<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(layers, (std::set<int64_t>{3, 4}));
  // A depth range of one value is that depth (it gave H/2 for any value).
  c.defect_depth_range = {0.3, 0.3};
  for (uint64_t seed = 0; seed < 5; ++seed)
    for (const auto& d : draw_scene(c, seed).defects)
      EXPECT_DOUBLE_EQ(d.center[2], std::max(0.3 * c.extent[2], d.half_thickness)) << seed;
}

TEST(ThermalScenes, RasterisedGeometry) {
  nefi::thermal::Scene s;
  s.layer_tops = {0.0, 0.5};
  s.layer_alphas = {0.1, 0.2};
  nefi::thermal::Defect box{"box", {5.0, 5.0, 0.25}, {1.0, 1.0}, 0.0, 0.1, 0.01};
  nefi::thermal::Defect cyl{"cylinder", {2.0, 8.0, 0.75}, {1.0, 3.0}, 0.0, 0.1, 0.02};
  nefi::thermal::Defect ell{"ellipsoid", {8.0, 2.0, 0.5}, {1.0, 1.0}, 0.0, 0.2, 0.03};
  s.defects = {box, cyl, ell};
  EXPECT_EQ(s.alpha_at(0.1, 0.1, 0.1), 0.1);
  EXPECT_EQ(s.alpha_at(0.1, 0.1, 0.9), 0.2);
  EXPECT_EQ(s.alpha_at(5.9, 4.1, 0.3), 0.01);   // a box corner
  EXPECT_EQ(s.alpha_at(2.6, 8.6, 0.7), 0.02);   // r² = 0.72, |dz| = 0.05: in the disk
  EXPECT_EQ(s.alpha_at(2.9, 8.9, 0.7), 0.2);    // r² = 1.62: outside (r_v is unused)
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

// Two lateral semi-axes, the in-plane turn and the periodic minimum image
// (the lateral boundaries are periodic): checked point by point against the
// defect frame worked out by hand.
TEST(ThermalScenes, TurnedAnisotropicAndWrappedDefects) {
  const double q = std::numbers::pi / 4, h = std::sqrt(0.5);
  nefi::thermal::Scene s;
  s.layer_tops = {0.0};
  s.layer_alphas = {0.1};
  // A square box turned by 45°: (1.3, 0) from the centre has u = v = ±0.92.
  s.defects = {{"box", {5.0, 5.0, 0.5}, {1.0, 1.0}, q, 0.1, 0.01}};
  EXPECT_EQ(s.alpha_at(6.3, 5.0, 0.5), 0.01);
  EXPECT_EQ(s.alpha_at(5.0 + 0.8 * h * 2, 5.0 + 0.8 * h * 2, 0.5), 0.1);  // u = 1.6 > 1
  s.defects[0].angle = 0.0;
  EXPECT_EQ(s.alpha_at(6.3, 5.0, 0.5), 0.1);  // unturned: |dx| = 1.3 > 1
  // An ellipsoid with r_u = 2, r_v = 0.5, turned by 90°: long along y.
  s.defects = {{"ellipsoid", {5.0, 5.0, 0.5}, {2.0, 0.5}, 2 * q, 0.2, 0.02}};
  EXPECT_EQ(s.alpha_at(5.0, 6.8, 0.5), 0.02);  // u = 1.8: 0.81 <= 1
  EXPECT_EQ(s.alpha_at(5.8, 5.0, 0.5), 0.1);   // v = -0.8: 2.56 > 1
  EXPECT_EQ(s.alpha_at(5.0, 6.5, 0.6), 0.02);  // 0.5625 + 0.25 <= 1
  EXPECT_EQ(s.alpha_at(5.0, 6.5, 0.65), 0.1);  // 0.5625 + 0.5625 > 1
  // A cylinder at x = 0.5 reaches across the periodic edge at x = 0 / 10.
  s.defects = {{"cylinder", {0.5, 5.0, 0.5}, {1.0, 1.0}, 0.0, 0.1, 0.03}};
  EXPECT_EQ(s.alpha_at(9.8, 5.0, 0.5), 0.03);  // offset -0.7 through the edge
  EXPECT_EQ(s.alpha_at(9.3, 5.0, 0.5), 0.1);   // offset -1.2
  EXPECT_TRUE(s.in_defect(9.8, 5.0, 0.5));
}

// A defect thinner than a cell covers no cell centre; it keeps the nearest
// cell so it never vanishes from the raster. A defect that covers a centre
// is rasterised as it is.
TEST(ThermalScenes, SubCellDefectKeepsItsNearestCell) {
  nefi::thermal::Scene s;
  s.layer_tops = {0.0};
  s.layer_alphas = {0.1};
  // Centre (5.1, 4.9, 0.52): between the z centres 0.45 and 0.55 (nearer
  // 0.55), 0.02 thick, 0.2 wide: no centre inside.
  s.defects = {{"box", {5.1, 4.9, 0.52}, {0.2, 0.2}, 0.0, 0.01, 0.01}};
  const fk::Dims g{10, 10, 10};
  const auto a = nefi::thermal::rasterise(s, g, {10.0, 10.0, 1.0});
  int64_t n = 0;
  for (double v : a) n += v == 0.01;
  EXPECT_EQ(n, 1);
  EXPECT_EQ(a[(5 * 10 + 4) * 10 + 5], 0.01);  // the cell centred at (5.5, 4.5, 0.55)
  // Wider and thicker, it covers that centre itself (|dx|, |dy| = 0.4 <= 0.5,
  // |dz| = 0.03 <= 0.05) and no other.
  s.defects[0].half_thickness = 0.05;
  s.defects[0].radii = {0.5, 0.5};
  const auto b = nefi::thermal::rasterise(s, g, {10.0, 10.0, 1.0});
  n = 0;
  for (double v : b) n += v == 0.01;
  EXPECT_EQ(n, 1);
  EXPECT_EQ(b[(5 * 10 + 4) * 10 + 5], 0.01);
  EXPECT_THROW(nefi::thermal::rasterise(s, g, {10.0, 10.0, 2.0}), fk::Error);
}

// The centre depth is a fraction of H clipped to [t, H − t]: with the whole
// slab allowed, thick defects still never cross the faces.
TEST(ThermalScenes, DefectsStayInsideTheSlab) {
  SceneConfig c;
  c.extent = {10.0, 10.0, 2.0};
  c.defect_depth_range = {0.0, 1.0};
  c.defect_half_thickness_range = {0.3, 0.6};
  c.n_defects = {4, 4};
  bool deep = false;
  for (uint64_t seed = 0; seed < 20; ++seed)
    for (const auto& d : draw_scene(c, seed).defects) {
      EXPECT_GE(d.center[2] - d.half_thickness, 0.0);
      EXPECT_LE(d.center[2] + d.half_thickness, 2.0);
      deep = deep || d.center[2] > 1.0;  // depth scales with H = 2
    }
  EXPECT_TRUE(deep);
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
  bad([](SceneConfig& c) { c.defect_depth_range = {0.5, 1.2}; }, "defect_depth_range");
  bad([](SceneConfig& c) { c.defect_shapes = {"sphere"}; }, "defect_shapes");
  bad([](SceneConfig& c) { c.lateral_margin = 6.0; }, "lateral_margin");
  bad([](SceneConfig& c) { c.min_layer_fraction = 0.3; }, "min_layer_fraction");
}

}  // namespace

namespace {

// The smoke ranges draw, for seed 0, the reference's seed-0 scene: the values
// below come from NumPy's default_rng(0) read in the reference's order (bulk;
// count; per defect shape, r_u, r_v, t, x, y, depth, θ, α).
TEST(ThermalScenes, SmokeSeed0IsTheReferenceScene) {
  SceneConfig c;
  c.n_defects = {1, 2};
  c.defect_radius_range = {1.6, 2.4};
  c.defect_half_thickness_range = {0.15, 0.25};
  c.defect_depth_range = {0.3, 0.6};
  c.lateral_margin = 2.5;
  const auto s = draw_scene(c, 0);
  EXPECT_DOUBLE_EQ(s.layer_alphas.at(0), 0.16369616873214543);
  ASSERT_EQ(s.defects.size(), 2u);
  const auto& a = s.defects[0];
  EXPECT_EQ(a.shape, "ellipsoid");
  EXPECT_DOUBLE_EQ(a.center[0], 7.0637778863886087);
  EXPECT_DOUBLE_EQ(a.center[1], 5.5331788788358995);
  EXPECT_DOUBLE_EQ(a.center[2], 0.51884896829519955);
  EXPECT_DOUBLE_EQ(a.radii[0], 1.6327788191489558);
  EXPECT_DOUBLE_EQ(a.radii[1], 1.6132221084228233);
  EXPECT_DOUBLE_EQ(a.half_thickness, 0.23132702392002724);
  EXPECT_DOUBLE_EQ(a.angle, 1.7078482794955865);
  EXPECT_DOUBLE_EQ(a.alpha, 0.014350724237877682);
  const auto& b = s.defects[1];
  EXPECT_EQ(b.shape, "ellipsoid");
  EXPECT_DOUBLE_EQ(b.center[0], 6.1482772321497201);
  EXPECT_DOUBLE_EQ(b.center[1], 3.3782781030127951);
  EXPECT_DOUBLE_EQ(b.center[2], 0.55895367670496587);
  EXPECT_DOUBLE_EQ(b.radii[0], 1.6021908001361185);
  EXPECT_DOUBLE_EQ(b.radii[1], 2.2859234212700557);
  EXPECT_DOUBLE_EQ(b.half_thickness, 0.15335855753054642);
  EXPECT_DOUBLE_EQ(b.angle, 1.7010505917383114);
  EXPECT_DOUBLE_EQ(b.alpha, 0.007997118905373848);
  // On the smoke grid: 64 defect cells, 20 in z layer 2 and 44 in layer 3.
  const auto r = nefi::thermal::rasterise(s, fk::Dims{16, 16, 6}, c.extent);
  int64_t per_z[6] = {};
  for (size_t p = 0; p < r.size(); ++p) per_z[p % 6] += r[p] < 0.03;
  EXPECT_EQ(per_z[2], 20);
  EXPECT_EQ(per_z[3], 44);
  EXPECT_EQ(per_z[0] + per_z[1] + per_z[4] + per_z[5], 0);
}

}  // namespace

namespace {

// Layered scenes follow the reference's draws: the stratum count, NumPy's
// dirichlet(ones(n)) for the thicknesses above the minimum, then one α per
// stratum. Expected values from NumPy 1.24 read in that order.
TEST(ThermalScenes, LayeredSeedsAreTheReferenceStrata) {
  SceneConfig c;  // the paper ranges: 3–4 strata of at least 0.15 H
  c.scene = "layered";
  const auto s0 = draw_scene(c, 0);
  EXPECT_EQ(s0.layer_tops,
            (std::vector<double>{0.0, 0.4061776074918848, 0.5611541059805215, 0.7117242828464412}));
  EXPECT_EQ(s0.layer_alphas, (std::vector<double>{0.1912755577277722, 0.160663577576718,
                                                  0.17294965609839985, 0.1543624991465423}));
  ASSERT_EQ(s0.defects.size(), 3u);
  EXPECT_EQ(s0.defects[0].shape, "cylinder");
  EXPECT_EQ(s0.defects[0].radii[0], 1.415853554121532);
  EXPECT_EQ(s0.defects[0].radii[1], 0.6027385001701481);
  const auto s1 = draw_scene(c, 1);
  EXPECT_EQ(s1.layer_tops, (std::vector<double>{0.0, 0.17803972513077015, 0.8166901903194744}));
  EXPECT_EQ(s1.layer_alphas,
            (std::vector<double>{0.14233264489725758, 0.1827702593820442, 0.14091991363691614}));
  EXPECT_EQ(s1.defects.size(), 3u);
  // The strata rasterise by the depth of each cell centre.
  const auto r = nefi::thermal::rasterise(s1, fk::Dims{4, 4, 10}, c.extent);
  // Centres 0.05, 0.15 lie above 0.178; 0.25 … 0.75 above 0.817.
  const double a0 = 0.14233264489725758, a1 = 0.1827702593820442, a2 = 0.14091991363691614;
  const double bulk[10] = {a0, a0, a1, a1, a1, a1, a1, a1, a2, a2};
  int64_t bulk_cells = 0;
  for (size_t p = 0; p < r.size(); ++p)
    if (r[p] > 0.03) {
      EXPECT_EQ(r[p], bulk[p % 10]) << p;
      ++bulk_cells;
    }
  EXPECT_GT(bulk_cells, 100);
}

}  // namespace
