#pragma once
// A seedable synthetic labelled scene, so that training runs anywhere without
// a download: a rectangular room (floor, four walls) with boxes, cylinders and
// spheres resting on the floor. Every surface is sampled uniformly at
// `density` points per square metre, labelled by its class, coloured by a
// per-class base colour jittered per object (colour_jitter) and per point,
// then rotated about z, scaled and perturbed by Gaussian noise. The same
// (options, seed) gives the same cloud on every machine.
#include <cstdint>

#include "minkowski/data/point_cloud.h"

namespace minkowski::data {

enum SceneClass : int64_t { kFloor = 0, kWall = 1, kBox = 2, kCylinder = 3, kSphere = 4 };
inline constexpr int64_t kSceneClasses = 5;
const char* scene_class_name(int64_t c);

struct SceneOptions {
  double room_min = 3.0, room_max = 5.0;  // side lengths (m)
  double wall_height = 1.5;
  int min_objects = 3, max_objects = 6;
  double density = 150.0;  // points per m^2
  double noise = 0.005;    // point jitter (m, standard deviation)
  double colour_jitter = 0.05;
  bool rotate = true;
  double scale_min = 0.9, scale_max = 1.1;
};

PointCloud generate_scene(const SceneOptions& options, uint64_t seed);

// A single shape for classification: a box, cylinder, sphere or cone of
// random proportions (about 0.4-1 m across), sampled on its surface at
// `density` points per square metre, turned by a uniformly random 3-D
// rotation, scaled, centred on the origin and jittered. Every shape has the
// same light grey (with per-point jitter), so only geometry tells the classes
// apart.
// Every point is labelled with the shape's class. Boxes and cylinders are open
// at the bottom, as the scenes' objects that stand on a floor.
enum ShapeClass : int64_t { kShapeBox = 0, kShapeCylinder = 1, kShapeSphere = 2, kShapeCone = 3 };
inline constexpr int64_t kShapeClasses = 4;
const char* shape_class_name(int64_t c);

struct ShapeOptions {
  double density = 1500.0;  // points per m^2
  double noise = 0.005;     // m, standard deviation
  double scale_min = 0.8, scale_max = 1.2;
};

// The class is drawn from the seed too (uniform over the four).
PointCloud generate_shape(const ShapeOptions& options, uint64_t seed);

}  // namespace minkowski::data
