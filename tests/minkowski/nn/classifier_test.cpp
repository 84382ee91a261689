// End to end: a small sparse ResNet14 learns to classify generated shapes
// (box, cylinder, sphere, cone; chance 0.25) from their geometry alone (every
// shape is the same grey) in 60 steps of 16 shapes, to a held-out accuracy
// of at least 0.6 on 64 shapes (measured 0.78; with weight seeds 12 and 13,
// 0.69 and 0.69). About 5 s of CPU.
#include <gtest/gtest.h>

#include <cstdio>

#include "fk/fk.h"
#include "minkowski/data/batch.h"
#include "minkowski/nn/resnet.h"
#include "minkowski/nn/segmentation.h"

namespace minkowski::nn {
namespace {

constexpr double kVoxel = 0.04;  // a shape is about 25 voxels across

ResNetOptions small_resnet() {
  ResNetOptions o = resnet_options("14", 3, data::kShapeClasses, 3);
  o.planes = {16, 16, 32, 32};
  o.init_dim = 16;
  o.dropout = 0.0;
  return o;
}

TEST(NnClassifier, ResNet14ClassifiesGeneratedShapes) {
  fk::manual_seed(11);
  ResNet net(small_resnet());
  Adam adam(net.parameters(), {0.005, 0.9, 0.999, 1e-8, 0.0, false});
  const data::ShapeOptions shapes;
  const int steps = 60, batch = 16;
  double first = 0, last = 0;
  for (int s = 0; s < steps; ++s) {
    std::vector<uint64_t> seeds;
    for (int b = 0; b < batch; ++b) seeds.push_back(static_cast<uint64_t>(s * batch + b));
    const data::Batch b = data::shape_batch(shapes, seeds, kVoxel);
    const double loss = train_step(net, adam, b.input, b.labels).loss;
    if (s < 5) first += loss / 5;
    if (s >= steps - 5) last += loss / 5;
  }
  ConfusionMatrix confusion(data::kShapeClasses);
  for (int i = 0; i < 4; ++i) {
    std::vector<uint64_t> seeds;
    for (int b = 0; b < 16; ++b) seeds.push_back(1000000 + 16 * i + b);
    const data::Batch held_out = data::shape_batch(shapes, seeds, kVoxel);
    evaluate(net, held_out.input, held_out.labels, confusion);
  }
  std::printf("loss %.3f -> %.3f; held-out accuracy %.3f (64 shapes)\n", first, last,
              confusion.accuracy());
  EXPECT_LT(last, 0.6 * first);
  EXPECT_GE(confusion.accuracy(), 0.6);
}

}  // namespace
}  // namespace minkowski::nn
