// The scene and shape generators: reproducible from their seed, every class
// present with the stated geometry, voxelization and collation keep labels on
// their rows.
#include "minkowski/data/scene.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "fk/fk.h"
#include "minkowski/data/batch.h"

namespace minkowski::data {
namespace {

SceneOptions unrotated() {
  SceneOptions o;
  o.rotate = false;
  o.noise = 0.0;
  o.scale_min = o.scale_max = 1.0;
  return o;
}

TEST(DataScene, SameSeedSameCloudOtherSeedOtherCloud) {
  const PointCloud a = generate_scene({}, 5), b = generate_scene({}, 5), c = generate_scene({}, 6);
  EXPECT_EQ(a.xyz, b.xyz);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_NE(a.xyz, c.xyz);
  EXPECT_EQ(a.rgb.size(), a.xyz.size());
  EXPECT_EQ(static_cast<int64_t>(a.labels.size()), a.size());
}

TEST(DataScene, SurfacesHaveTheirGeometry) {
  const SceneOptions o = unrotated();
  const PointCloud p = generate_scene(o, 3);
  std::vector<int64_t> count(kSceneClasses, 0);
  for (int64_t i = 0; i < p.size(); ++i) {
    const int64_t l = p.labels[i];
    ASSERT_GE(l, 0);
    ASSERT_LT(l, kSceneClasses);
    ++count[l];
    const float z = p.xyz[3 * i + 2];
    if (l == kFloor) {
      EXPECT_NEAR(z, 0.0, 1e-6);
    }
    EXPECT_GE(z, -1e-6);
    if (l == kWall) {
      EXPECT_LE(z, o.wall_height + 1e-5);
    }
  }
  EXPECT_GT(count[kFloor], 0);
  EXPECT_GT(count[kWall], count[kFloor] / 4);
  EXPECT_GT(count[kBox] + count[kCylinder] + count[kSphere], 0);
  // The floor covers the room: area * density points, room sides in [3, 5].
  EXPECT_GT(count[kFloor], 9 * o.density * 0.9);
  EXPECT_LT(count[kFloor], 25 * o.density * 1.1);
}

TEST(DataScene, VoxelizedLabelsStayOnTheirRows) {
  const PointCloud p = generate_scene(unrotated(), 4);
  const Voxelized v = voxelize(p, 0.25);
  const auto lab = v.labels.to_vector<int64_t>();
  // Each voxel's label is the label of its points, or -100 when they disagree.
  std::vector<std::set<int64_t>> seen(lab.size());
  for (int64_t i = 0; i < p.size(); ++i) seen[v.inverse[i]].insert(p.labels[i]);
  for (size_t r = 0; r < lab.size(); ++r) {
    EXPECT_EQ(lab[r], seen[r].size() == 1 ? *seen[r].begin() : -100) << r;
  }
  const Batch b = collate({v, voxelize(generate_scene(unrotated(), 5), 0.25)});
  EXPECT_EQ(b.labels.size(0), b.input.size());
  EXPECT_EQ(b.labels.slice(0, 0, v.labels.size(0)).to_vector<int64_t>(), lab);
  EXPECT_EQ(b.input.F().size(1), 3);
}

// Shapes: reproducible, every class drawn, one label per cloud and per batch
// item; without noise and scale a sphere's points lie at one distance from
// the origin, its centre (the rotation keeps lengths), and every shape fits
// in 1 m of the origin.
TEST(DataScene, ShapesHaveTheirClassAndGeometry) {
  ShapeOptions exact;
  exact.noise = 0.0;
  exact.scale_min = exact.scale_max = 1.0;
  EXPECT_EQ(generate_shape({}, 3).xyz, generate_shape({}, 3).xyz);
  std::set<int64_t> seen;
  std::vector<uint64_t> seeds;
  for (uint64_t seed = 0; seed < 24; ++seed) {
    const PointCloud c = generate_shape(exact, seed);
    ASSERT_GT(c.size(), 100);
    EXPECT_EQ(std::set<int64_t>(c.labels.begin(), c.labels.end()).size(), 1u);
    seen.insert(c.labels.front());
    seeds.push_back(seed);
    for (int64_t i = 0; i < c.size(); ++i) {
      EXPECT_LT(std::hypot(c.xyz[3 * i], c.xyz[3 * i + 1], c.xyz[3 * i + 2]), 1.0);
    }
    if (c.labels.front() != kShapeSphere) continue;
    double lo = 1e9, hi = 0;
    for (int64_t i = 0; i < c.size(); ++i) {
      const double d = std::hypot(c.xyz[3 * i], c.xyz[3 * i + 1], c.xyz[3 * i + 2]);
      lo = std::min(lo, d);
      hi = std::max(hi, d);
    }
    EXPECT_LT(hi - lo, 1e-5) << "seed " << seed;
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kShapeClasses));
  const Batch b = shape_batch(exact, {seeds[0], seeds[1], seeds[2]}, 0.05);
  ASSERT_EQ(b.labels.numel(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(b.labels.to_vector<int64_t>()[i], generate_shape(exact, seeds[i]).labels.front());
  }
  EXPECT_THROW(generate_shape({0.0}, 1), fk::Error);
  EXPECT_STREQ(shape_class_name(kShapeCone), "cone");
}

TEST(DataScene, BadOptionsThrow) {
  SceneOptions o;
  o.room_min = 1.0;
  EXPECT_THROW(generate_scene(o, 0), fk::Error);
  o = {};
  o.max_objects = 1;
  EXPECT_THROW(generate_scene(o, 0), fk::Error);
  EXPECT_THROW(voxelize(PointCloud{}, 0.1), fk::Error);
  EXPECT_THROW(voxelize(generate_scene({}, 0), 0.0), fk::Error);
}

}  // namespace
}  // namespace minkowski::data
