// The advection-diffusion operator on a CUDA device (cuda/transport_device.cpp:
// a launch per split factor and substep each way, f64 sparse rows) beside
// the CPU operator (fk's threads) on the same problem: apply and its
// gradient, on side x side cells in a swirling flow per cell, Lax-Wendroff
// (two split factors, rows of three entries), about 20 substeps an apply.
//   BM_DeviceTransport/unknown/side  ms per call, launches per call, and
//                        step-GB/s: the bytes the call's factor steps must
//                        move at least (per cell and step, the f64 state in
//                        and out for each row, and once for all rows the
//                        stencil row's three columns, weights and
//                        per-substep parts: 60 B), per second; read it
//                        against BM_DeviceTriad's GB/s in the same run (the
//                        device's bandwidth). The call's other launches
//                        (observations, conversions, the stencil builds,
//                        the face sums) are not counted, so the ratio is an
//                        upper bound on the share of the bandwidth the steps
//                        reach.
//                        unknown 0: 8 initial releases stepped together (the
//                        tables uploaded once; 2 passes of steps: forward
//                        and the transposes back); 1: the diffusivity map
//                        (its stencils and their transposes built on the
//                        device for each D, a few values read back per
//                        apply; 4 passes: forward, and back the forward again
//                        to its checkpoints, each run of steps once more, and
//                        the transposes); 2: the velocity (the same, its
//                        stencils built for each flow).
//   BM_CpuTransport/unknown/side     the same on the CPU: the device's
//                        speed-up is the ratio of the two rows' ms/call.
// Reproduce (on a GPU machine; scripts/gpu-check runs it):
//   cmake --build build/release --target nefi_cuda_bench &&
//   build/bin/nefi_cuda_bench --benchmark_filter=Transport
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "../cuda_event_timer.h"
#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/reduce.h"
#include "fk/profile.h"
#include "nefi/operators/advection_diffusion.h"
#include "nefi/operators/transport_steps.h"

namespace {

using fk_bench::skip_without_device;

constexpr int64_t kRows = 8;  // releases stepped together (unknown 0)
const char* const kLabels[] = {"8 releases", "the diffusivity", "the velocity"};

struct Scene {
  nefi::AdvectionDiffusionOperator op;
  fk::Tensor x;           // the field: releases (kRows, n, n) or D (n, n), f32
  double step_bytes = 0;  // what one call's factor steps move at least
};

Scene scene(int unknown, int64_t n) {
  std::vector<double> u(n * n), w(n * n), c(n * n), d(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double x = (i + 0.5) / n - 0.5, z = (j + 0.5) / n - 0.5;
      u[i * n + j] = std::sin(3 * z) + 0.2;
      w[i * n + j] = x - 0.1;
      c[i * n + j] = std::exp(-20 * (x * x + z * z));
      d[i * n + j] = 1e-4 * (1.0 + 0.5 * std::sin(7 * x) * std::cos(5 * z));
    }
  nefi::AdvectionDiffusionOptions o;
  o.velocity = {fk::from_vector(u, {n, n}), fk::from_vector(w, {n, n})};
  // 20 substeps at the bound of the flow and the largest D.
  nefi::AdvectionDiffusionOptions probe = o;
  probe.diffusivity = 1.5e-4;
  probe.times = {1.0};
  const double tau = nefi::AdvectionDiffusionOperator(nefi::Domain({n, n}), probe).stable_substep();
  o.times = {9.75 * tau, 19.5 * tau};
  fk::Tensor x;
  if (unknown == 0) {
    o.diffusivity = 1e-4;
    std::vector<double> rows;
    for (int64_t r = 0; r < kRows; ++r) rows.insert(rows.end(), c.begin(), c.end());
    x = fk::from_vector(rows, {kRows, n, n});
  } else if (unknown == 1) {
    o.unknown = nefi::TransportUnknown::kDiffusivity;
    o.release = fk::from_vector(c, {n, n});
    x = fk::from_vector(d, {n, n});
  } else {  // the flow as the field, the same D everywhere
    o.unknown = nefi::TransportUnknown::kVelocity;
    o.release = fk::from_vector(c, {n, n});
    o.diffusivity = 1e-4;
    std::vector<double> v = u;
    v.insert(v.end(), w.begin(), w.end());
    o.velocity.clear();
    x = fk::from_vector(v, {2, n, n});
  }
  x = x.to(fk::DType::F32);
  nefi::AdvectionDiffusionOperator op(nefi::Domain({n, n}), o);
  // The substeps of the D the call steps (f32, as the field gives it).
  const std::vector<double> field = x.to(fk::DType::F64).to_vector<double>();
  const std::vector<int64_t> steps =
      unknown == 0   ? op.substeps()
      : unknown == 1 ? nefi::transport::diffusivity_plan(op.plan(), op.domain(), o, field).substeps
                     : nefi::transport::velocity_plan(op.plan(), op.domain(), o, field).substeps;
  int64_t substeps = 0;
  for (int64_t k : steps) substeps += k;
  const double rows = unknown == 0 ? kRows : 1, passes = unknown == 0 ? 2 : 4;
  const double per_cell = 16 * rows + 60;
  return {op, x, passes * substeps * op.factor_count() * static_cast<double>(n * n) * per_cell};
}

void report(benchmark::State& state, const Scene& s, double seconds, int64_t launches) {
  const double iters = static_cast<double>(state.iterations());
  state.counters["ms/call"] = 1e3 * seconds / iters;
  state.counters["launches/call"] = static_cast<double>(launches) / iters;
  state.counters["step-GB/s"] = s.step_bytes * iters / seconds / 1e9;
}

// apply and the gradient of the observations' sum into x.
void call(const Scene& s, fk::Tensor& x) {
  x.set_grad(fk::Tensor());
  fk::sum(s.op.apply(x)).backward();
}

void BM_DeviceTransport(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const int unknown = static_cast<int>(state.range(0));
  const Scene s = scene(unknown, state.range(1));
  fk::Tensor x = s.x.to(fk::cuda_device(0));
  x.set_requires_grad(true);
  call(s, x);  // the tables' upload
  fk_bench::EventTimer timer;
  const auto before = fk::profile::counters();
  double seconds = 0;
  for (auto _ : state) {
    const double t = timer.seconds([&] { call(s, x); });
    state.SetIterationTime(t);
    seconds += t;
  }
  report(state, s, seconds, fk::profile::counters().launches - before.launches);
  state.SetLabel(std::string(kLabels[unknown]) + " on the device");
}

void BM_CpuTransport(benchmark::State& state) {
  const int unknown = static_cast<int>(state.range(0));
  const Scene s = scene(unknown, state.range(1));
  fk::Tensor x = s.x.clone();
  x.set_requires_grad(true);
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    call(s, x);
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(t);
    seconds += t;
  }
  report(state, s, seconds, 0);
  state.SetLabel(std::string(kLabels[unknown]) + " on the CPU");
}

// range(0) the unknown (0 releases, 1 the diffusivity, 2 the velocity);
// range(1) the side.
#define TRANSPORT_ROWS(bm)                  \
  BENCHMARK(bm)                             \
      ->ArgNames({"unknown", "side"})       \
      ->ArgsProduct({{0, 1, 2}, {64, 256}}) \
      ->UseManualTime()                     \
      ->Unit(benchmark::kMillisecond)
TRANSPORT_ROWS(BM_DeviceTransport);
TRANSPORT_ROWS(BM_CpuTransport);

}  // namespace
