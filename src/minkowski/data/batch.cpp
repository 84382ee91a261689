#include "minkowski/data/batch.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "minkowski/ops/quantize.h"

namespace minkowski::data {

Voxelized voxelize(const PointCloud& cloud, double voxel_size, int64_t ignore_label) {
  FK_CHECK(cloud.size() > 0, "voxelize", "at least one point", "an empty cloud");
  FK_CHECK(voxel_size > 0, "voxelize", "a positive voxel size", fk::to_text(voxel_size));
  const int64_t n = cloud.size();
  // In the cloud's precision: f32 positions divide in f32, as torch's.
  const fk::Tensor xyz =
      fk::from_vector(cloud.xyz, {n, 3}).to(cloud.f64 ? fk::DType::F64 : fk::DType::F32);
  const fk::Tensor features =
      cloud.has_colors() ? fk::sub(fk::from_vector(cloud.rgb, {n, 3}), 0.5) : fk::ones({n, 1});
  const fk::Tensor labels = cloud.has_labels() ? fk::from_vector(cloud.labels) : fk::Tensor();
  Quantized q = sparse_quantize(xyz, features, {voxel_size}, QuantizationMode::UnweightedAverage,
                                labels, ignore_label);
  return {q.coordinates, q.features, q.labels, std::move(q.inverse)};
}

Batch collate(const std::vector<Voxelized>& items) {
  FK_CHECK(!items.empty(), "collate", "at least one item", "none");
  std::vector<fk::Tensor> coords, features, labels;
  for (const auto& v : items) {
    coords.push_back(v.coordinates);
    features.push_back(v.features);
    if (v.labels.defined()) labels.push_back(v.labels);
  }
  const Collated c = sparse_collate(coords, features);
  Batch b{SparseTensor(c.features, c.coordinates), fk::Tensor()};
  FK_CHECK(b.input.size() == c.coordinates.size(0), "collate", "distinct voxels per item",
           "duplicates");
  if (labels.size() == items.size()) b.labels = fk::cat(labels, 0);
  return b;
}

Batch to_device(const Batch& b, fk::Device device, bool device_coords) {
  if (device.is_cpu()) return b;
  Batch out = b;
  const fk::Tensor features = b.input.F().to(device);
  if (device_coords) {
    // The rows are unique (collate checks it), and a device insert keeps
    // unique rows in their order (first occurrences): labels still line up.
    out.input = SparseTensor(features, b.input.C().to(device), b.input.tensor_stride());
    FK_CHECK(out.input.size() == b.input.size(), "minkowski::data::to_device",
             fk::to_text(b.input.size()) + " unique rows",
             fk::to_text(out.input.size()) + " after inserting them on " + device.str());
  } else {
    out.input = SparseTensor(features, b.input.key(), b.input.manager());
  }
  if (b.labels.defined()) out.labels = b.labels.to(device);
  return out;
}

void augment(PointCloud& cloud, const AugmentOptions& o, uint64_t seed) {
  Rng rng(seed);
  const double a = o.rotate_z ? 2 * std::numbers::pi * rng.uniform() : 0.0;
  const double s = rng.uniform(o.scale_min, o.scale_max);
  const double mirror = o.flip_x && rng.uniform() < 0.5 ? -1.0 : 1.0;
  const double ca = std::cos(a), sa = std::sin(a);
  for (size_t i = 0; i < cloud.xyz.size(); i += 3) {
    const double x = mirror * cloud.xyz[i], y = cloud.xyz[i + 1], z = cloud.xyz[i + 2];
    cloud.xyz[i] = cloud.at_precision(s * (ca * x - sa * y) + o.jitter * rng.normal());
    cloud.xyz[i + 1] = cloud.at_precision(s * (sa * x + ca * y) + o.jitter * rng.normal());
    cloud.xyz[i + 2] = cloud.at_precision(s * z + o.jitter * rng.normal());
  }
  for (auto& c : cloud.rgb) {
    c = static_cast<float>(std::clamp(c + o.colour_jitter * rng.normal(), 0.0, 1.0));
  }
}

}  // namespace minkowski::data

namespace minkowski::data {

Batch scene_batch(const SceneOptions& scene, const std::vector<uint64_t>& seeds, double voxel_size,
                  const AugmentOptions* augmentation) {
  std::vector<Voxelized> items;
  for (uint64_t seed : seeds) {
    PointCloud cloud = generate_scene(scene, seed);
    if (augmentation != nullptr) augment(cloud, *augmentation, seed ^ 0x5eedULL);
    items.push_back(voxelize(cloud, voxel_size));
  }
  return collate(items);
}

Batch shape_batch(const ShapeOptions& shape, const std::vector<uint64_t>& seeds,
                  double voxel_size) {
  std::vector<Voxelized> items;
  std::vector<int64_t> labels;
  for (uint64_t seed : seeds) {
    const PointCloud cloud = generate_shape(shape, seed);
    labels.push_back(cloud.labels.front());
    items.push_back(voxelize(cloud, voxel_size));
  }
  Batch b = collate(items);
  b.labels = fk::from_vector(labels);
  return b;
}

}  // namespace minkowski::data
