// `minkowski predict`: loads a MinkUNet or ResNet checkpoint and labels the
// points of a point file (PLY/XYZ) or a generated scene (MinkUNet) or shape
// (ResNet): MinkUNet's voxel predictions are carried back to every point, a
// ResNet's one class per cloud is every point's. In f32 or under bf16/fp16
// autocast. Prints per-class IoU (MinkUNet) or the shape's label (ResNet)
// when the cloud is labelled (a label outside the classes is an error) and
// writes a PLY coloured by the predicted class and the labels as an int64 .npy.
// With a CUDA --device the network, the features and the coordinates (so
// every kernel map) live there.
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include "cloud_checks.h"
#include "cloud_colours.h"
#include "device_option.h"
#include "fk/fk.h"
#include "fk/io/npy.h"
#include "minkowski/data/batch.h"
#include "minkowski/data/point_io.h"
#include "minkowski/nn/autocast.h"
#include "minkowski/nn/checkpoint.h"
#include "minkowski/nn/segmentation.h"
#include "network.h"
#include "output_path.h"
#include "train.h"

namespace minkowski_app {
namespace {

using namespace minkowski;

// A class's colour: the generated scenes' five, then hues a golden angle
// apart for a model trained on more classes.
std::array<int, 3> colour_of(int64_t c) {
  static const int kColours[data::kSceneClasses][3] = {
      {120, 120, 120}, {230, 230, 220}, {220, 40, 30}, {30, 70, 220}, {40, 190, 60}};
  if (c < data::kSceneClasses) return {kColours[c][0], kColours[c][1], kColours[c][2]};
  const double h = std::fmod(0.61803398875 * static_cast<double>(c), 1.0) * 6.0;
  const double x = 1.0 - std::abs(std::fmod(h, 2.0) - 1.0);
  const double rgb[6][3] = {{1, x, 0}, {x, 1, 0}, {0, 1, x}, {0, x, 1}, {x, 0, 1}, {1, 0, x}};
  const double* v = rgb[static_cast<int>(h) % 6];
  return {static_cast<int>(40 + 190 * v[0]), static_cast<int>(40 + 190 * v[1]),
          static_cast<int>(40 + 190 * v[2])};
}

// An output path is checked before the work (opened for appending, so
// nothing is truncated yet) and may not be one of the inputs: relabelling a
// cloud in place would read an emptied file.
void check_output(const std::string& path, const std::string& flag, const PredictOptions& o) {
  if (path.empty()) return;
  std::error_code ec;
  for (const std::string& input : {o.input, o.checkpoint})
    FK_CHECK(input.empty() || !std::filesystem::equivalent(path, input, ec),
             "minkowski predict " + flag, "a file other than the inputs",
             "'" + path + "', which is " + input);
  check_writable(path, "minkowski predict " + flag);
}

void write_ply(const std::string& path, const data::PointCloud& cloud,
               const std::vector<int64_t>& predicted) {
  std::ofstream out(path);
  FK_CHECK(out.good(), "minkowski predict --ply", "a writable path", "'" + path + "'");
  const std::string type = cloud.f64 ? "double" : "float";  // the coordinates as read
  out << "ply\nformat ascii 1.0\nelement vertex " << cloud.size() << "\nproperty " << type
      << " x\nproperty " << type << " y\nproperty " << type
      << " z\nproperty uchar red\nproperty uchar green\nproperty uchar blue\nproperty int "
         "label\nend_header\n";
  out.precision(cloud.f64 ? std::numeric_limits<double>::max_digits10
                          : std::numeric_limits<float>::max_digits10);
  for (int64_t i = 0; i < cloud.size(); ++i) {
    const std::array<int, 3> c = colour_of(predicted[i]);
    out << cloud.xyz[3 * i] << ' ' << cloud.xyz[3 * i + 1] << ' ' << cloud.xyz[3 * i + 2] << ' '
        << c[0] << ' ' << c[1] << ' ' << c[2] << ' ' << predicted[i] << '\n';
  }
  out.close();  // a full disk cut the file mid-line under a header of every vertex
  FK_CHECK(!out.fail(), "minkowski predict --ply", "a successful write", "'" + path + "'");
}

// The checkpoint's model tensors: a best.ckpt as saved, or the model part
// of train's resumable last.ckpt (its "model." names), without the "meta."
// tensors load_state skips too; `voxel` gets the voxel size it was trained
// at (0: a checkpoint that does not say).
nn::NamedTensors model_tensors(const std::string& path, double& voxel) {
  nn::NamedTensors all = nn::read_tensors(path), model, rest;
  voxel = 0;
  for (const auto& [n, t] : all) {
    if (n == kVoxelTensor)
      voxel = t.item();
    else if (n.starts_with(nn::kMetaPrefix))
      continue;
    else if (n.starts_with("model."))
      model.emplace_back(n.substr(6), t);
    else
      rest.emplace_back(n, t);
  }
  return model.empty() ? rest : model;
}

// The class count the checkpoint was trained for: its head's outputs.
int64_t classes_of(const nn::NamedTensors& tensors, const std::string& path) {
  for (const auto& [n, t] : tensors)
    if (n == "head.bias") return t.numel();
  throw fk::Error("minkowski predict --checkpoint " + path,
                  "a MinkUNet or ResNet checkpoint (a tensor head.bias)", "none");
}

std::string class_name(int64_t c, int64_t classes, bool classifier) {
  if (classifier && classes == data::kShapeClasses) return data::shape_class_name(c);
  if (!classifier && classes == data::kSceneClasses) return data::scene_class_name(c);
  return "class " + std::to_string(c);  // a model trained on labelled files
}

// The cloud the options name: the point file, or a generated scene (MinkUNet)
// or shape (classifier) from --scene-seed. A cloud without colours is fed
// white (cloud_colours.h).
data::PointCloud input_cloud(const PredictOptions& o) {
  data::PointCloud cloud = !o.input.empty()         ? data::read_points(o.input)
                           : is_classifier(o.model) ? data::generate_shape({}, o.scene_seed)
                                                    : data::generate_scene({}, o.scene_seed);
  return with_colours(std::move(cloud));
}

// A classifier's label of a labelled cloud: the one label all its points carry.
fk::Tensor shape_label(const PredictOptions& o, const data::PointCloud& cloud) {
  if (!cloud.has_labels()) return {};
  for (int64_t l : cloud.labels)
    FK_CHECK(l == cloud.labels.front(), "minkowski predict --input " + o.input,
             "one label for every point of a shape",
             "labels " + fk::to_text(cloud.labels.front()) + " and " + fk::to_text(l));
  return fk::from_vector(std::vector<int64_t>{cloud.labels.front()});
}

// Every point's predicted class: its voxel's (segmentation) or the cloud's
// (classifier).
std::vector<int64_t> predict_points(const PredictOptions& o, fk::DType precision,
                                    nn::SparseModule& net, const data::PointCloud& cloud,
                                    int64_t classes, fk::Device device) {
  const data::Voxelized v = data::voxelize(cloud, o.voxel);
  data::Batch b = data::collate({v});
  if (is_classifier(o.model)) b.labels = shape_label(o, cloud);
  b = data::to_device(b, device, true);
  nn::ConfusionMatrix rows(classes);
  const auto row_pred = fk::argmax(nn::evaluate(net, b.input, b.labels, rows, -100, precision), 1)
                            .to_vector<int64_t>();
  std::printf("%lld points, %lld voxels\n", static_cast<long long>(cloud.size()),
              static_cast<long long>(b.input.size()));
  std::vector<int64_t> predicted(cloud.size());
  for (int64_t i = 0; i < cloud.size(); ++i)
    predicted[i] = row_pred[is_classifier(o.model) ? 0 : v.inverse[i]];
  return predicted;
}

}  // namespace

int predict(const PredictOptions& options) {
  PredictOptions o = options;
  // Before the checkpoint is read (its classes are not known yet).
  check_network_choice({o.model, o.variant, o.planes, 1}, "minkowski predict");
  const bool classifier = is_classifier(o.model);
  const fk::DType precision = nn::parse_precision(o.precision, "minkowski predict --precision");
  const fk::Device device = device_option(o.device, "minkowski predict --device");
  if (o.threads > 0) fk::set_num_threads(o.threads);
  check_output(o.ply, "--ply", o);
  check_output(o.labels, "--labels", o);
  double trained_voxel = 0;
  const nn::NamedTensors tensors = model_tensors(o.checkpoint, trained_voxel);
  // The voxel size the net was trained at unless --voxel says otherwise.
  if (o.voxel == 0) o.voxel = trained_voxel > 0 ? trained_voxel : classifier ? 0.04 : 0.1;
  FK_CHECK(std::isfinite(o.voxel) && o.voxel > 0, "minkowski predict --voxel",
           "a positive finite size", fk::to_text(o.voxel));
  if (trained_voxel > 0 && o.voxel != trained_voxel)
    std::fprintf(stderr, "minkowski predict: --voxel %g, the net was trained at %g\n", o.voxel,
                 trained_voxel);
  const int64_t classes = classes_of(tensors, o.checkpoint);
  const auto net = make_network({o.model, o.variant, o.planes, classes}, "minkowski predict");
  nn::copy_named(net->state(), tensors, "load checkpoint " + o.checkpoint);
  net->to(device);
  const data::PointCloud cloud = input_cloud(o);
  if (!o.input.empty())
    check_cloud(cloud, "minkowski predict --input " + o.input, classes,
                "the checkpoint's " + fk::to_text(classes) + " classes", o.voxel);
  const std::vector<int64_t> predicted = predict_points(o, precision, *net, cloud, classes, device);
  if (classifier) {
    std::printf("predicted %s", class_name(predicted.front(), classes, true).c_str());
    if (cloud.has_labels())
      std::printf(", label %s", class_name(cloud.labels.front(), classes, true).c_str());
    std::printf("\n");
  } else if (cloud.has_labels()) {
    nn::ConfusionMatrix points(classes);
    points.add(fk::from_vector(predicted), fk::from_vector(cloud.labels));
    std::printf("point mIoU %.4f, accuracy %.4f\n", points.miou(), points.accuracy());
    for (int64_t c = 0; c < classes; ++c)
      std::printf("  %-9s IoU %.4f\n", class_name(c, classes, false).c_str(), points.iou(c));
  }
  if (!o.ply.empty()) write_ply(o.ply, cloud, predicted);
  if (!o.labels.empty()) fk::write_npy(o.labels, fk::from_vector(predicted));
  return 0;
}

}  // namespace minkowski_app
