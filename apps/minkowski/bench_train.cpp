// `minkowski bench train`: one MinkUNet training step (forward, backward,
// Adam) on a synthetic scene of about --points voxels, for every thread count
// x precision (f32, bf16 autocast) x convolution copy path (fused, per-offset):
// ms per step split into forward / backward / optimizer, points/s, the peak
// memory of a step, and the share of the step spent in convolution compute
// (gather-GEMM-scatter, forward and backward; everything else is maps, norms,
// pooling, activations, the loss and the optimizer). The share, the peak and
// the launches and host waits (syncs) per step come from one traced step
// (fk::profile events); the times from the untraced steps. --device cuda runs
// the network, features and labels on the GPU (coordinates on the host, or on
// the device with --device-coords), each phase timed up to a wait for the
// device; --ops N lists the traced step's N largest host-time events (self
// time: an event's time minus the events nested in it), which is where a
// host-bound device step spends its time; --trace PATH.json writes each
// configuration's traced step as a chrome trace (PATH-<threads>-<precision>-
// <copy path>.json).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>

#include "device_option.h"
#include "fk/fk.h"
#include "fk/knobs.h"
#include "fk/profile.h"
#include "minkowski/nn/autocast.h"
#include "minkowski/nn/loss.h"
#include "minkowski/nn/minkunet.h"
#include "minkowski/nn/optim.h"
#include "network.h"
#include "output_path.h"
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
                     const fk::Tensor& labels, fk::DType precision, fk::Device device) {
  StepTimes t;
  adam.zero_grad();
  auto start = Clock::now();
  fk::Tensor loss;
  {
    const nn::Precision scope(precision);
    loss = nn::cross_entropy(net.forward(x).F(), labels);
  }
  fk::synchronize(device);
  t.forward = ms_since(start);
  start = Clock::now();
  loss.backward();
  fk::synchronize(device);
  t.backward = ms_since(start);
  start = Clock::now();
  adam.step();
  fk::synchronize(device);
  t.optimizer = ms_since(start);
  return t;
}

struct Traced {
  double conv_share = 0;
  int64_t peak_bytes = 0;
  fk::profile::Counters counts;
  std::vector<fk::profile::EventTotal> events;
};

Traced traced_step(nn::MinkUNet& net, nn::Adam& adam, const SparseTensor& x,
                   const fk::Tensor& labels, fk::DType precision, fk::Device device,
                   const std::string& trace_path) {
  fk::profile::clear_trace();
  fk::profile::set_tracing(true);
  const fk::profile::ProfileScope scope(device);
  StepTimes t;
  try {
    t = timed_step(net, adam, x, labels, precision, device);
  } catch (...) {
    fk::profile::set_tracing(false);  // process-wide: never left on behind an exception
    throw;
  }
  const fk::profile::Report report = scope.report();
  fk::profile::set_tracing(false);
  if (!trace_path.empty()) fk::profile::export_chrome_trace(trace_path);
  Traced r{0, report.peak_bytes, report.counts, fk::profile::event_totals()};
  fk::profile::clear_trace();
  double conv_ms = 0;
  for (const fk::profile::EventTotal& e : r.events)
    if (e.name == std::string("minkowski.convolution") ||
        e.name == std::string("minkowski.convolution_backward"))
      conv_ms += e.total_ms;
  r.conv_share = conv_ms / t.total();
  return r;
}

void print_events(const std::vector<fk::profile::EventTotal>& events, int top) {
  const size_t n = std::min(events.size(), static_cast<size_t>(std::max(top, 0)));
  if (n == 0) return;
  std::printf("    top %zu host-time events of the traced step (self ms, calls, total ms):\n", n);
  for (size_t i = 0; i < n; ++i)
    std::printf("    %-44s %9.2f %7lld %9.2f\n", events[i].name.c_str(), events[i].self_ms,
                static_cast<long long>(events[i].calls), events[i].total_ms);
}

struct Config {
  fk::DType precision;
  bool fused;
};

void run_config(const BenchTrainOptions& o, int threads, const Config& c, const fk::Tensor& coords,
                const fk::Tensor& features, const fk::Tensor& labels, fk::Device device) {
  fk::KnobOverride fused("ME_FUSED_COPY", c.fused ? "1" : "0");
  fk::manual_seed(0);
  nn::MinkUNet net(minkunet_options_of(o.variant, 20, "minkowski bench train"));
  net.to(device);  // before the optimizer: its moments are made on the parameters' device
  nn::Adam adam(net.parameters(), {});
  // A fresh tensor (new coordinate manager) per step, as in training.
  auto input = [&] { return SparseTensor(features, coords); };
  timed_step(net, adam, input(), labels, c.precision, device);  // warm-up
  // The configuration's trace: PATH.json becomes PATH-<threads>-<precision>-<copy>.json.
  std::string trace_path;
  if (!o.trace.empty()) {
    const std::filesystem::path p(o.trace);
    trace_path = (p.parent_path() /
                  (p.stem().string() + "-" + std::to_string(threads) + "-" + fk::name(c.precision) +
                   (c.fused ? "-fused" : "-per-offset") + p.extension().string()))
                     .string();
  }
  const Traced traced = traced_step(net, adam, input(), labels, c.precision, device, trace_path);
  StepTimes sum;
  for (int s = 0; s < o.steps; ++s) {
    const StepTimes t = timed_step(net, adam, input(), labels, c.precision, device);
    sum.forward += t.forward / o.steps;
    sum.backward += t.backward / o.steps;
    sum.optimizer += t.optimizer / o.steps;
  }
  std::printf(
      "%8d %6s %11s %9.1f %9.1f %9.1f %9.1f %11.0f %7.1f %9.1f %9lld %7lld\n", threads,
      fk::name(c.precision), c.fused ? "fused" : "per-offset", sum.total(), sum.forward,
      sum.backward, sum.optimizer, static_cast<double>(coords.size(0)) / (sum.total() / 1000.0),
      100.0 * traced.conv_share, traced.peak_bytes / 1048576.0,
      static_cast<long long>(traced.counts.launches), static_cast<long long>(traced.counts.syncs));
  print_events(traced.events, o.ops);
  std::fflush(stdout);
}

}  // namespace

int bench_train(const BenchTrainOptions& o) {
  FK_CHECK(o.steps > 0 && o.points > 0, "minkowski bench train", "positive --steps and --points",
           fk::to_text(o.steps) + ", " + fk::to_text(o.points));
  check_writable_folder_of(o.trace, "minkowski bench train --trace");
  FK_CHECK(!o.threads.empty() && !o.precisions.empty(), "minkowski bench train",
           "at least one --threads and one --precision", "an empty list");
  std::vector<Config> configs;
  for (const std::string& p : o.precisions) {
    const fk::DType d = nn::parse_precision(p, "minkowski bench train --precision");
    configs.push_back({d, true});
    configs.push_back({d, false});
  }
  (void)minkunet_options_of(o.variant, 20, "minkowski bench train");  // before any output
  const fk::Device device = device_option(o.device, "minkowski bench train --device");
  const std::vector<int32_t> rows = synthetic_scene(o.points, 1).rows;
  const int64_t n = static_cast<int64_t>(rows.size()) / 4;
  {
    // Batch norm at the deepest stride (16: four halvings) needs two voxels
    // there; a smaller scene failed in the warm-up, after the header.
    std::set<std::array<int32_t, 4>> deepest;
    const auto down = [](int32_t v) { return v >= 0 ? v / 16 : (v - 15) / 16; };
    for (int64_t i = 0; i < n; ++i)
      deepest.insert(
          {rows[4 * i], down(rows[4 * i + 1]), down(rows[4 * i + 2]), down(rows[4 * i + 3])});
    FK_CHECK(deepest.size() >= 2, "minkowski bench train --points",
             "a scene with two voxels or more at MinkUNet's deepest stride (16), where batch "
             "norm needs two",
             fk::to_text(o.points) + " points (" + fk::to_text(deepest.size()) + " voxel there)");
  }
  fk::Tensor coords = fk::from_vector(rows, {n, 4});
  if (o.device_coords) coords = coords.to(device);
  const fk::Tensor features = fk::rand({n, 3}, {fk::DType::F32}).to(device);
  const fk::Tensor labels = fk::randint(0, 20, {n}).to(device);
  std::printf(
      "minkowski bench train --variant %s --points %lld --steps %d --threads %s --precision %s "
      "--device %s%s\n",
      o.variant.c_str(), static_cast<long long>(o.points), o.steps,
      fmt::format("{}", fmt::join(o.threads, ",")).c_str(),
      fmt::format("{}", fmt::join(o.precisions, ",")).c_str(), device.str().c_str(),
      o.device_coords ? " --device-coords" : "");
  std::printf(
      "MinkUNet%s, %lld voxels, Adam; mean of %d steps after a warm-up and a traced step\n"
      "(conv %%: convolution compute in the traced step; peak, launches and syncs (host waits "
      "for the device): the traced step's)\n",
      o.variant.c_str(), static_cast<long long>(n), o.steps);
  std::printf("%8s %6s %11s %9s %9s %9s %9s %11s %7s %9s %9s %7s\n", "threads", "prec", "conv copy",
              "ms/step", "forward", "backward", "optim", "points/s", "conv %", "peak MiB",
              "launches", "syncs");
  for (const int threads : o.threads) {
    fk::set_num_threads(threads);
    for (const Config& c : configs) run_config(o, threads, c, coords, features, labels, device);
  }
  return 0;
}

}  // namespace minkowski_app
