// `minkowski predict`: loads a MinkUNet checkpoint, labels the points of a
// point file (PLY/XYZ) or a generated scene (voxel predictions carried back
// to every point), prints per-class IoU against the cloud's labels when it has
// them (a label outside the classes is an error) and writes a PLY coloured by
// the predicted class and the labels as an int64 .npy.
#include <cstdio>
#include <fstream>

#include "fk/fk.h"
#include "fk/io/npy.h"
#include "minkowski/data/batch.h"
#include "minkowski/data/point_io.h"
#include "minkowski/nn/checkpoint.h"
#include "minkowski/nn/minkunet.h"
#include "minkowski/nn/segmentation.h"
#include "train.h"

namespace minkowski_app {
namespace {

using namespace minkowski;

void write_ply(const std::string& path, const data::PointCloud& cloud,
               const std::vector<int64_t>& predicted) {
  static const int kColours[data::kSceneClasses][3] = {
      {120, 120, 120}, {230, 230, 220}, {220, 40, 30}, {30, 70, 220}, {40, 190, 60}};
  std::ofstream out(path);
  FK_CHECK(out.good(), "minkowski predict --ply", "a writable path", "'" + path + "'");
  out << "ply\nformat ascii 1.0\nelement vertex " << cloud.size()
      << "\nproperty float x\nproperty float y\nproperty float z\nproperty uchar red\n"
         "property uchar green\nproperty uchar blue\nproperty int label\nend_header\n";
  for (int64_t i = 0; i < cloud.size(); ++i) {
    const int* c = kColours[predicted[i]];
    out << cloud.xyz[3 * i] << ' ' << cloud.xyz[3 * i + 1] << ' ' << cloud.xyz[3 * i + 2] << ' '
        << c[0] << ' ' << c[1] << ' ' << c[2] << ' ' << predicted[i] << '\n';
  }
}

}  // namespace

int predict(const PredictOptions& o) {
  if (o.threads > 0) fk::set_num_threads(o.threads);
  nn::MinkUNet net(nn::minkunet_options(o.variant, 3, data::kSceneClasses, 3));
  nn::load_state(net, o.checkpoint);
  data::PointCloud cloud =
      o.input.empty() ? data::generate_scene({}, o.scene_seed) : data::read_points(o.input);
  // The network takes colours; a cloud without them is fed mid-grey (0 after centring).
  if (!cloud.has_colors()) cloud.rgb.assign(cloud.xyz.size(), 0.5f);
  const data::Voxelized v = data::voxelize(cloud, o.voxel);
  const data::Batch b = data::collate({v});
  nn::ConfusionMatrix voxels(data::kSceneClasses);
  const auto voxel_pred =
      fk::argmax(nn::evaluate(net, b.input, b.labels, voxels), 1).to_vector<int64_t>();
  std::vector<int64_t> predicted(cloud.size());
  for (int64_t i = 0; i < cloud.size(); ++i) predicted[i] = voxel_pred[v.inverse[i]];
  std::printf("%lld points, %lld voxels\n", static_cast<long long>(cloud.size()),
              static_cast<long long>(b.input.size()));
  if (cloud.has_labels()) {
    nn::ConfusionMatrix points(data::kSceneClasses);
    points.add(fk::from_vector(predicted), fk::from_vector(cloud.labels));
    std::printf("point mIoU %.4f, accuracy %.4f\n", points.miou(), points.accuracy());
    for (int64_t c = 0; c < data::kSceneClasses; ++c) {
      std::printf("  %-9s IoU %.4f\n", data::scene_class_name(c), points.iou(c));
    }
  }
  if (!o.ply.empty()) write_ply(o.ply, cloud, predicted);
  if (!o.labels.empty()) fk::write_npy(o.labels, fk::from_vector(predicted));
  return 0;
}

}  // namespace minkowski_app
