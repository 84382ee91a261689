#pragma once
// A cloud without colours fed to a network of RGB inputs: white, so every
// input feature is 0.5 after centring. Mid-grey made every feature 0, and a
// sparse convolution of zeros sees no geometry: a floor-and-ball scene
// trained to a model that labelled every point floor. Filled after the
// augmentation, so a colourless cloud gets no colour jitter (it had none to
// jitter, and prediction feeds the exact value).
#include <utility>

#include "minkowski/data/point_cloud.h"

namespace minkowski_app {

inline minkowski::data::PointCloud with_colours(minkowski::data::PointCloud c) {
  if (!c.has_colors()) c.rgb.assign(c.xyz.size(), 1.0f);
  return c;
}

}  // namespace minkowski_app
