#include "minkowski/data/scene.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>

#include "fk/error.h"

namespace minkowski::data {
namespace {

using Vec3 = std::array<double, 3>;

constexpr std::array<Vec3, kSceneClasses> kBaseColour{{
    {0.30, 0.30, 0.30},  // floor: dark grey
    {0.90, 0.90, 0.85},  // wall: off-white
    {0.90, 0.10, 0.10},  // box: red
    {0.10, 0.25, 0.85},  // cylinder: blue
    {0.15, 0.75, 0.20},  // sphere: green
}};

// Collects the points of one object: each sample gets the object's colour
// plus per-point jitter.
struct Painter {
  PointCloud& cloud;
  Rng& rng;
  Vec3 colour;
  int64_t label;
  void add(const Vec3& p) {
    for (int a = 0; a < 3; ++a) {
      cloud.xyz.push_back(cloud.at_precision(p[a]));
      const double c = colour[a] + 0.03 * rng.normal();
      cloud.rgb.push_back(static_cast<float>(std::clamp(c, 0.0, 1.0)));
    }
    cloud.labels.push_back(label);
  }
};

int64_t count_for(double area, double density, Rng& rng) {
  // Rounds area * density stochastically so that small faces still get points.
  const double n = area * density;
  return static_cast<int64_t>(n) + (rng.uniform() < n - std::floor(n) ? 1 : 0);
}

// A rectangle from corner o spanned by u and v.
void sample_rect(Painter& p, const Vec3& o, const Vec3& u, const Vec3& v, double density) {
  const double area = std::hypot(u[0], u[1], u[2]) * std::hypot(v[0], v[1], v[2]);
  for (int64_t i = count_for(area, density, p.rng); i > 0; --i) {
    const double s = p.rng.uniform(), t = p.rng.uniform();
    p.add({o[0] + s * u[0] + t * v[0], o[1] + s * u[1] + t * v[1], o[2] + s * u[2] + t * v[2]});
  }
}

// An axis-aligned box standing on z = 0: its five visible faces.
void sample_box(Painter& p, const Vec3& c, const Vec3& size, double density) {
  const Vec3 o{c[0] - size[0] / 2, c[1] - size[1] / 2, 0.0};
  const Vec3 x{size[0], 0, 0}, y{0, size[1], 0}, z{0, 0, size[2]};
  sample_rect(p, {o[0], o[1], size[2]}, x, y, density);  // top
  sample_rect(p, o, x, z, density);
  sample_rect(p, {o[0], o[1] + size[1], 0}, x, z, density);
  sample_rect(p, o, y, z, density);
  sample_rect(p, {o[0] + size[0], o[1], 0}, y, z, density);
}

void sample_cylinder(Painter& p, const Vec3& c, double r, double h, double density) {
  for (int64_t i = count_for(2 * std::numbers::pi * r * h, density, p.rng); i > 0; --i) {
    const double a = 2 * std::numbers::pi * p.rng.uniform();
    p.add({c[0] + r * std::cos(a), c[1] + r * std::sin(a), h * p.rng.uniform()});
  }
  for (int64_t i = count_for(std::numbers::pi * r * r, density, p.rng); i > 0; --i) {
    const double a = 2 * std::numbers::pi * p.rng.uniform(), s = r * std::sqrt(p.rng.uniform());
    p.add({c[0] + s * std::cos(a), c[1] + s * std::sin(a), h});
  }
}

void sample_sphere(Painter& p, const Vec3& c, double r, double density) {
  for (int64_t i = count_for(4 * std::numbers::pi * r * r, density, p.rng); i > 0; --i) {
    const double z = 2 * p.rng.uniform() - 1, a = 2 * std::numbers::pi * p.rng.uniform();
    const double s = std::sqrt(1 - z * z);
    p.add({c[0] + r * s * std::cos(a), c[1] + r * s * std::sin(a), r + r * z});
  }
}

// A cone standing on z = 0 with its apex at height h: the lateral surface
// (uniform in area: the distance from the apex grows as sqrt) and the base.
void sample_cone(Painter& p, double r, double h, double density) {
  const double lateral = std::numbers::pi * r * std::hypot(r, h);
  for (int64_t i = count_for(lateral, density, p.rng); i > 0; --i) {
    const double v = std::sqrt(p.rng.uniform()), a = 2 * std::numbers::pi * p.rng.uniform();
    p.add({r * v * std::cos(a), r * v * std::sin(a), h * (1 - v)});
  }
  for (int64_t i = count_for(std::numbers::pi * r * r, density, p.rng); i > 0; --i) {
    const double a = 2 * std::numbers::pi * p.rng.uniform(), s = r * std::sqrt(p.rng.uniform());
    p.add({s * std::cos(a), s * std::sin(a), 0.0});
  }
}

// A uniformly random rotation (from a uniformly random unit quaternion).
std::array<Vec3, 3> random_rotation(Rng& rng) {
  const double u1 = rng.uniform(), u2 = 2 * std::numbers::pi * rng.uniform(),
               u3 = 2 * std::numbers::pi * rng.uniform();
  const double a = std::sqrt(1 - u1), b = std::sqrt(u1);
  const double w = a * std::sin(u2), x = a * std::cos(u2), y = b * std::sin(u3),
               z = b * std::cos(u3);
  return {{{1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)},
           {2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)},
           {2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)}}};
}

Vec3 object_colour(int64_t label, double jitter, Rng& rng) {
  Vec3 c = kBaseColour[label];
  for (auto& v : c) v = std::clamp(v + jitter * rng.normal(), 0.0, 1.0);
  return c;
}

void add_room(PointCloud& cloud, const SceneOptions& o, Rng& rng, double w, double l) {
  Painter floor{cloud, rng, object_colour(kFloor, o.colour_jitter, rng), kFloor};
  sample_rect(floor, {0, 0, 0}, {w, 0, 0}, {0, l, 0}, o.density);
  Painter wall{cloud, rng, object_colour(kWall, o.colour_jitter, rng), kWall};
  const Vec3 up{0, 0, o.wall_height};
  sample_rect(wall, {0, 0, 0}, {w, 0, 0}, up, o.density);
  sample_rect(wall, {0, l, 0}, {w, 0, 0}, up, o.density);
  sample_rect(wall, {0, 0, 0}, {0, l, 0}, up, o.density);
  sample_rect(wall, {w, 0, 0}, {0, l, 0}, up, o.density);
}

void add_object(PointCloud& cloud, const SceneOptions& o, Rng& rng, double w, double l) {
  const int64_t label = kBox + rng.below(3);
  Painter p{cloud, rng, object_colour(label, o.colour_jitter, rng), label};
  const double margin = 0.7;
  const Vec3 c{rng.uniform(margin, w - margin), rng.uniform(margin, l - margin), 0};
  if (label == kBox) {
    sample_box(p, c, {rng.uniform(0.3, 0.9), rng.uniform(0.3, 0.9), rng.uniform(0.3, 1.0)},
               o.density);
  } else if (label == kCylinder) {
    sample_cylinder(p, c, rng.uniform(0.15, 0.4), rng.uniform(0.4, 1.2), o.density);
  } else {
    sample_sphere(p, c, rng.uniform(0.2, 0.5), o.density);
  }
}

// Rotation about z, uniform scale and Gaussian jitter, about the room centre.
void transform(PointCloud& cloud, const SceneOptions& o, Rng& rng, double w, double l) {
  const double a = o.rotate ? 2 * std::numbers::pi * rng.uniform() : 0.0;
  const double s = rng.uniform(o.scale_min, o.scale_max);
  const double ca = std::cos(a), sa = std::sin(a);
  for (size_t i = 0; i < cloud.xyz.size(); i += 3) {
    const double x = cloud.xyz[i] - w / 2, y = cloud.xyz[i + 1] - l / 2, z = cloud.xyz[i + 2];
    cloud.xyz[i] = cloud.at_precision(s * (ca * x - sa * y) + o.noise * rng.normal());
    cloud.xyz[i + 1] = cloud.at_precision(s * (sa * x + ca * y) + o.noise * rng.normal());
    cloud.xyz[i + 2] = cloud.at_precision(s * z + o.noise * rng.normal());
  }
}

}  // namespace

const char* scene_class_name(int64_t c) {
  static const char* kNames[kSceneClasses] = {"floor", "wall", "box", "cylinder", "sphere"};
  return c >= 0 && c < kSceneClasses ? kNames[c] : "?";
}

const char* shape_class_name(int64_t c) {
  static const char* kNames[kShapeClasses] = {"box", "cylinder", "sphere", "cone"};
  return c >= 0 && c < kShapeClasses ? kNames[c] : "?";
}

PointCloud generate_shape(const ShapeOptions& o, uint64_t seed) {
  FK_CHECK(o.density > 0 && o.noise >= 0 && o.scale_min > 0 && o.scale_max >= o.scale_min,
           "generate_shape", "density > 0, noise >= 0, 0 < scale_min <= scale_max",
           fk::to_text(o.density) + ", " + fk::to_text(o.noise) + ", " + fk::to_text(o.scale_min) +
               ".." + fk::to_text(o.scale_max));
  Rng rng(seed);
  const int64_t label = rng.below(kShapeClasses);
  const Vec3 colour{0.8, 0.8, 0.8};
  PointCloud cloud;
  Painter p{cloud, rng, colour, label};
  double height = 0;
  if (label == kShapeBox) {
    height = rng.uniform(0.4, 1.0);
    sample_box(p, {0, 0, 0}, {rng.uniform(0.4, 1.0), rng.uniform(0.4, 1.0), height}, o.density);
  } else if (label == kShapeCylinder) {
    height = rng.uniform(0.4, 1.0);
    sample_cylinder(p, {0, 0, 0}, rng.uniform(0.2, 0.45), height, o.density);
  } else if (label == kShapeSphere) {
    const double r = rng.uniform(0.25, 0.5);
    height = 2 * r;
    sample_sphere(p, {0, 0, 0}, r, o.density);
  } else {
    height = rng.uniform(0.5, 1.0);
    sample_cone(p, rng.uniform(0.25, 0.5), height, o.density);
  }
  const auto r = random_rotation(rng);
  const double s = rng.uniform(o.scale_min, o.scale_max);
  for (size_t i = 0; i < cloud.xyz.size(); i += 3) {
    const Vec3 q{cloud.xyz[i], cloud.xyz[i + 1], cloud.xyz[i + 2] - height / 2};
    for (int a = 0; a < 3; ++a) {
      const double v = r[a][0] * q[0] + r[a][1] * q[1] + r[a][2] * q[2];
      cloud.xyz[i + a] = cloud.at_precision(s * v + o.noise * rng.normal());
    }
  }
  return cloud;
}

PointCloud generate_scene(const SceneOptions& o, uint64_t seed) {
  FK_CHECK(o.room_min >= 2.0 && o.room_max >= o.room_min && o.density > 0 && o.min_objects >= 0 &&
               o.max_objects >= o.min_objects && o.wall_height > 0,
           "generate_scene", "room_max >= room_min >= 2, density > 0, 0 <= min <= max objects",
           fk::to_text(o.room_min) + ", " + fk::to_text(o.room_max) + ", " +
               fk::to_text(o.density) + ", " + fk::to_text(o.min_objects) + ".." +
               fk::to_text(o.max_objects));
  Rng rng(seed);
  const double w = rng.uniform(o.room_min, o.room_max), l = rng.uniform(o.room_min, o.room_max);
  PointCloud cloud;
  add_room(cloud, o, rng, w, l);
  const int64_t objects = o.min_objects + rng.below(o.max_objects - o.min_objects + 1);
  for (int64_t i = 0; i < objects; ++i) add_object(cloud, o, rng, w, l);
  transform(cloud, o, rng, w, l);
  return cloud;
}

}  // namespace minkowski::data
