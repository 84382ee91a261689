// `minkowski bench train`: one MinkUNet training step (forward, backward,
// Adam) on a synthetic scene of about --points voxels, f32, at each thread
// count: ms per step split into forward / backward / optimizer, and points/s.
#include <chrono>
#include <cstdio>
#include <sstream>

#include "fk/fk.h"
#include "minkowski/nn/loss.h"
#include "minkowski/nn/minkunet.h"
#include "minkowski/nn/optim.h"
#include "scene.h"
#include "train.h"

namespace minkowski_app {
namespace {

using namespace minkowski;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct StepTimes {
  double forward = 0, backward = 0, optimizer = 0;
};

StepTimes timed_step(nn::MinkUNet& net, nn::Adam& adam, const SparseTensor& x,
                     const fk::Tensor& labels) {
  StepTimes t;
  adam.zero_grad();
  auto start = Clock::now();
  const fk::Tensor loss = nn::cross_entropy(net.forward(x).F(), labels);
  t.forward = ms_since(start);
  start = Clock::now();
  loss.backward();
  t.backward = ms_since(start);
  start = Clock::now();
  adam.step();
  t.optimizer = ms_since(start);
  return t;
}

}  // namespace

int bench_train(const BenchTrainOptions& o) {
  const std::vector<int32_t> coords = synthetic_scene(o.points, 1).rows;
  const int64_t n = static_cast<int64_t>(coords.size()) / 4;
  const fk::Tensor c = fk::from_vector(coords, {n, 4});
  const fk::Tensor features = fk::rand({n, 3}, {fk::DType::F32});
  const fk::Tensor labels = fk::randint(0, 20, {n});
  std::printf("minkowski bench train --variant %s --points %lld --steps %d --threads %s\n",
              o.variant.c_str(), static_cast<long long>(o.points), o.steps, o.threads.c_str());
  std::printf("MinkUNet%s, %lld voxels, f32, Adam; mean of %d steps after one warm-up\n",
              o.variant.c_str(), static_cast<long long>(n), o.steps);
  std::printf("%8s %10s %10s %10s %10s %12s\n", "threads", "ms/step", "forward", "backward",
              "optimizer", "points/s");
  std::stringstream list(o.threads);
  for (std::string item; std::getline(list, item, ',');) {
    const int threads = std::stoi(item);
    fk::set_num_threads(threads);
    fk::manual_seed(0);
    nn::MinkUNet net(nn::minkunet_options(o.variant, 3, 20, 3));
    nn::Adam adam(net.parameters(), {});
    StepTimes sum;
    for (int s = 0; s <= o.steps; ++s) {
      // A fresh tensor (new coordinate manager) per step, as in training.
      const StepTimes t = timed_step(net, adam, SparseTensor(features, c), labels);
      if (s == 0) continue;
      sum.forward += t.forward / o.steps;
      sum.backward += t.backward / o.steps;
      sum.optimizer += t.optimizer / o.steps;
    }
    const double total = sum.forward + sum.backward + sum.optimizer;
    std::printf("%8d %10.1f %10.1f %10.1f %10.1f %12.0f\n", threads, total, sum.forward,
                sum.backward, sum.optimizer, static_cast<double>(n) / (total / 1000.0));
  }
  return 0;
}

}  // namespace minkowski_app
