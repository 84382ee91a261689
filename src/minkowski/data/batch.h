#pragma once
// From point clouds to a network's input: voxelization (sparse_quantize with
// averaged features and ignore-labelled mixed voxels), collation of several
// clouds into one batched sparse tensor, and random augmentation.
#include <cstdint>
#include <vector>

#include "fk/tensor.h"
#include "minkowski/data/point_cloud.h"
#include "minkowski/sparse_tensor.h"

namespace minkowski::data {

struct Voxelized {
  fk::Tensor coordinates;  // M x 3 int32 voxel indices
  fk::Tensor features;     // M x C f32: the mean colour (C = 3), or ones (C = 1) without colours
  fk::Tensor labels;       // M i64 (ignore_label where points disagree); undefined without labels
  std::vector<int64_t> inverse;  // voxel of each input point
};

// Features: colours shifted to [-0.5, 0.5] (as the reference's indoor example).
Voxelized voxelize(const PointCloud& cloud, double voxel_size, int64_t ignore_label = -100);

struct Batch {
  SparseTensor input;  // batch index in coordinate column 0
  fk::Tensor labels;   // rows of input, i64 (undefined when an item has none)
};

Batch collate(const std::vector<Voxelized>& items);

// The batch with its features and labels on `device`, rows in the same
// order. With device_coords (and a CUDA device) its coordinates go there
// too, into a manager of their own, so every kernel map of a step on it is
// built on the device instead of built on the host and uploaded; otherwise
// the features stay on the batch's map. A CPU device returns b.
Batch to_device(const Batch& b, fk::Device device, bool device_coords);

struct AugmentOptions {
  bool rotate_z = true;
  double scale_min = 0.9, scale_max = 1.1;
  bool flip_x = true;
  double jitter = 0.005;  // m, standard deviation
  double colour_jitter = 0.02;
};

// A random rotation about z, scale, mirror of x and jitter, from `seed`.
void augment(PointCloud& cloud, const AugmentOptions& options, uint64_t seed);

}  // namespace minkowski::data

#include "minkowski/data/scene.h"

namespace minkowski::data {

// Generated scenes `seeds` (augmented from each seed when `augmentation` is
// given), voxelized and collated: the batches of `minkowski train` and of the
// training test.
Batch scene_batch(const SceneOptions& scene, const std::vector<uint64_t>& seeds, double voxel_size,
                  const AugmentOptions* augmentation = nullptr);

// Generated shapes `seeds`, voxelized and collated, with one label per batch
// item (the shape's class, in item order: the rows of global pooling): the
// batches of a classifier.
Batch shape_batch(const ShapeOptions& shape, const std::vector<uint64_t>& seeds, double voxel_size);

}  // namespace minkowski::data
