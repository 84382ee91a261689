// End to end: a small MinkUNet14 learns to segment generated scenes (5
// classes: floor, wall, box, cylinder, sphere) to mIoU >= 0.9 on four held-out
// scenes within 200 steps of Adam on a cosine schedule from 0.03 (measured:
// 0.942, per class 0.97 / 0.98 / 0.92 / 0.92 / 0.93; with weight seeds 8 and
// 9, 0.924 and 0.914; a model that only finds floor and walls scores about
// 0.35), and its losses are identical at 1 and 2 threads. About 2.8 s of CPU
// at one thread.
#include <gtest/gtest.h>

#include <cstdio>

#include "fk/fk.h"
#include "fk/thread_count.h"
#include "minkowski/data/batch.h"
#include "minkowski/nn/minkunet.h"
#include "minkowski/nn/schedule.h"
#include "minkowski/nn/segmentation.h"
#include "minkowski/ops/conv.h"

namespace minkowski::nn {
namespace {

constexpr double kVoxel = 0.2;
constexpr int kSteps = 200;

data::SceneOptions scene() {
  data::SceneOptions o;
  o.room_min = 3.0;
  o.room_max = 4.0;
  o.density = 120.0;
  o.wall_height = 1.0;
  o.min_objects = 6;
  o.max_objects = 10;
  return o;
}

MinkUNetOptions small_unet() {
  MinkUNetOptions o = minkunet_options("14", 3, data::kSceneClasses, 3);
  o.planes = {8, 16, 16, 16, 16, 16, 8, 8};
  o.init_dim = 8;
  return o;
}

// Trains from seed 0 for `steps` steps of two augmented scenes, the rate
// decaying from 0.03 to 0 over kSteps; returns the losses. Objects are rarer
// than floor and walls: their classes weigh 4x more.
std::vector<double> train(MinkUNet& net, int steps) {
  Adam adam(net.parameters(), {0.03, 0.9, 0.999, 1e-8, 0.0, false});
  const LrSchedule schedule{ScheduleKind::Cosine, 0.03, kSteps};
  StepOptions step;
  step.class_weights = fk::from_vector(std::vector<float>{0.5f, 0.5f, 2.f, 2.f, 2.f});
  const data::AugmentOptions aug;
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    adam.set_lr(schedule.at(s));
    const auto seed = static_cast<uint64_t>(2 * s);
    const data::Batch b = data::scene_batch(scene(), {seed, seed + 1}, kVoxel, &aug);
    losses.push_back(train_step(net, adam, b.input, b.labels, step).loss);
  }
  return losses;
}

TEST(NnTraining, SameLossesAtOneAndTwoThreads) {
  // Deterministic mode pins the convolution dataflow, which the per-shape
  // timing could otherwise choose differently at 1 and 2 threads.
  const bool deterministic = minkowski::is_deterministic();
  minkowski::set_deterministic(true);
  const fk::test::ThreadCount threads(1);
  std::vector<std::vector<double>> runs;
  for (int t : {1, 2}) {
    threads.set(t);
    fk::manual_seed(7);
    MinkUNet net(small_unet());
    runs.push_back(train(net, 3));
  }
  minkowski::set_deterministic(deterministic);
  EXPECT_EQ(runs[0], runs[1]);
}

TEST(NnTraining, MinkUNetSegmentsGeneratedScenes) {
  fk::manual_seed(7);
  MinkUNet net(small_unet());
  const auto losses = train(net, kSteps);
  ConfusionMatrix confusion(data::kSceneClasses);
  const data::Batch held_out = data::scene_batch(scene(), {1001, 1002, 1003, 1004}, kVoxel);
  evaluate(net, held_out.input, held_out.labels, confusion);
  std::printf("loss %.3f -> %.3f; held-out mIoU %.3f, accuracy %.3f; IoU", losses.front(),
              losses.back(), confusion.miou(), confusion.accuracy());
  for (int64_t c = 0; c < data::kSceneClasses; ++c) std::printf(" %.3f", confusion.iou(c));
  std::printf("\n");
  EXPECT_LT(losses.back(), 0.5 * losses.front());
  EXPECT_GE(confusion.miou(), 0.9);
}

}  // namespace
}  // namespace minkowski::nn
