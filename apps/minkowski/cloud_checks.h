#pragma once
// A point cloud read from a file, checked against what a network takes
// before any work: each label one of its classes (or -100, ignored), each
// coordinate's voxel within 2^30 of the origin (the kernel maps' int32 with
// room for strides and kernel offsets). Found later, a bad label failed in
// a confusion matrix naming a voxel row and no file, and a far coordinate
// in quantization naming neither.
#include <cmath>
#include <cstdint>
#include <string>

#include "fk/error.h"
#include "minkowski/data/point_cloud.h"

namespace minkowski_app {

inline void check_cloud(const minkowski::data::PointCloud& c, const std::string& where,
                        int64_t classes, const std::string& classes_from, double voxel) {
  constexpr double kMaxVoxel = 1073741824.0;  // 2^30
  for (int64_t i = 0; i < c.size(); ++i) {
    if (c.has_labels()) {
      const int64_t l = c.labels[static_cast<size_t>(i)];
      FK_CHECK((l >= 0 && l < classes) || l == -100, where,
               "labels in [0, " + fk::to_text(classes) + ") or -100 (" + classes_from + ")",
               "label " + fk::to_text(l) + " at point " + fk::to_text(i));
    }
    for (int a = 0; a < 3; ++a) {
      const double x = c.xyz[static_cast<size_t>(3 * i + a)];
      FK_CHECK(std::abs(std::floor(x / voxel)) <= kMaxVoxel, where,
               "coordinates within 2^30 voxels of the origin (--voxel " + fk::to_text(voxel) + ")",
               fk::to_text(x) + " at point " + fk::to_text(i));
    }
  }
}

}  // namespace minkowski_app
