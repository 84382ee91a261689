// `minkowski bench train`: one MinkUNet training step (forward, backward,
// Adam) on a synthetic scene of about --points voxels, for every thread count
// x precision (f32, bf16 autocast) x convolution copy path (fused, per-offset):
// ms per step split into forward / backward / optimizer, points/s, the peak
// memory of a step, and the share of the step spent in convolution compute
// (gather-GEMM-scatter, forward and backward; everything else is maps, norms,
// pooling, activations, the loss and the optimizer). The share and the peak
// come from one traced step (fk::profile events of every convolution's
// forward and backward); the times from the untraced steps.
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fk/fk.h"
#include "fk/knobs.h"
#include "fk/profile.h"
#include "minkowski/nn/autocast.h"
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
  double total() const { return forward + backward + optimizer; }
};

StepTimes timed_step(nn::MinkUNet& net, nn::Adam& adam, const SparseTensor& x,
                     const fk::Tensor& labels, fk::DType precision) {
  StepTimes t;
  adam.zero_grad();
  auto start = Clock::now();
  fk::Tensor loss;
  {
    const nn::Precision scope(precision);
    loss = nn::cross_entropy(net.forward(x).F(), labels);
  }
  t.forward = ms_since(start);
  start = Clock::now();
  loss.backward();
  t.backward = ms_since(start);
  start = Clock::now();
  adam.step();
  t.optimizer = ms_since(start);
  return t;
}

// Milliseconds in convolution compute among the recorded trace events.
double convolution_ms(const std::string& trace_path) {
  std::ifstream in(trace_path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  const auto& events = trace.is_array() ? trace : trace.at("traceEvents");
  double us = 0;
  for (const auto& e : events) {
    const std::string name = e.value("name", "");
    if (name == "minkowski.convolution" || name == "minkowski.convolution_backward")
      us += e.value("dur", 0.0);
  }
  return us / 1000.0;
}

struct Traced {
  double conv_share = 0;
  int64_t peak_bytes = 0;
};

Traced traced_step(nn::MinkUNet& net, nn::Adam& adam, const SparseTensor& x,
                   const fk::Tensor& labels, fk::DType precision) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("minkowski_bench_train_" + std::to_string(getpid()) + ".json"))
                               .string();
  fk::profile::clear_trace();
  fk::profile::set_tracing(true);
  const fk::profile::ProfileScope scope;
  const StepTimes t = timed_step(net, adam, x, labels, precision);
  const fk::profile::Report report = scope.report();
  fk::profile::set_tracing(false);
  fk::profile::export_chrome_trace(path);
  fk::profile::clear_trace();
  Traced r{convolution_ms(path) / t.total(), report.peak_bytes};
  std::filesystem::remove(path);
  return r;
}

struct Config {
  fk::DType precision;
  bool fused;
};

void run_config(const BenchTrainOptions& o, int threads, const Config& c, const fk::Tensor& coords,
                const fk::Tensor& features, const fk::Tensor& labels) {
  fk::KnobOverride fused("ME_FUSED_COPY", c.fused ? "1" : "0");
  fk::manual_seed(0);
  nn::MinkUNet net(nn::minkunet_options(o.variant, 3, 20, 3));
  nn::Adam adam(net.parameters(), {});
  // A fresh tensor (new coordinate manager) per step, as in training.
  auto input = [&] { return SparseTensor(features, coords); };
  timed_step(net, adam, input(), labels, c.precision);  // warm-up
  const Traced traced = traced_step(net, adam, input(), labels, c.precision);
  StepTimes sum;
  for (int s = 0; s < o.steps; ++s) {
    const StepTimes t = timed_step(net, adam, input(), labels, c.precision);
    sum.forward += t.forward / o.steps;
    sum.backward += t.backward / o.steps;
    sum.optimizer += t.optimizer / o.steps;
  }
  std::printf("%8d %6s %11s %9.1f %9.1f %9.1f %9.1f %11.0f %7.1f %9.1f\n", threads,
              fk::name(c.precision), c.fused ? "fused" : "per-offset", sum.total(), sum.forward,
              sum.backward, sum.optimizer,
              static_cast<double>(coords.size(0)) / (sum.total() / 1000.0),
              100.0 * traced.conv_share, traced.peak_bytes / 1048576.0);
  std::fflush(stdout);
}

}  // namespace

int bench_train(const BenchTrainOptions& o) {
  FK_CHECK(o.steps > 0 && o.points > 0, "minkowski bench train", "positive --steps and --points",
           std::to_string(o.steps) + ", " + std::to_string(o.points));
  std::vector<Config> configs;
  std::stringstream precisions(o.precisions);
  for (std::string p; std::getline(precisions, p, ',');) {
    const fk::DType d = nn::parse_precision(p, "minkowski bench train --precision");
    configs.push_back({d, true});
    configs.push_back({d, false});
  }
  const std::vector<int32_t> rows = synthetic_scene(o.points, 1).rows;
  const int64_t n = static_cast<int64_t>(rows.size()) / 4;
  const fk::Tensor coords = fk::from_vector(rows, {n, 4});
  const fk::Tensor features = fk::rand({n, 3}, {fk::DType::F32});
  const fk::Tensor labels = fk::randint(0, 20, {n});
  std::printf(
      "minkowski bench train --variant %s --points %lld --steps %d --threads %s --precision %s\n",
      o.variant.c_str(), static_cast<long long>(o.points), o.steps, o.threads.c_str(),
      o.precisions.c_str());
  std::printf(
      "MinkUNet%s, %lld voxels, Adam; mean of %d steps after a warm-up and a traced step\n"
      "(conv %%: convolution compute in the traced step; peak: the traced step's)\n",
      o.variant.c_str(), static_cast<long long>(n), o.steps);
  std::printf("%8s %6s %11s %9s %9s %9s %9s %11s %7s %9s\n", "threads", "prec", "conv copy",
              "ms/step", "forward", "backward", "optim", "points/s", "conv %", "peak MiB");
  std::stringstream list(o.threads);
  for (std::string item; std::getline(list, item, ',');) {
    const int threads = std::stoi(item);
    fk::set_num_threads(threads);
    for (const Config& c : configs) run_config(o, threads, c, coords, features, labels);
  }
  return 0;
}

}  // namespace minkowski_app
