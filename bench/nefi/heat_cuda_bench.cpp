// The heat operator on a CUDA device at the thermal paper setting
// (configs/thermal_tomography_paper.yaml: 64×64×16 over 10×10×1, dt 0.05,
// 100 frames, Jacobi K = 50; f32), beside the bandwidth references measured
// in the same run:
//   BM_DeviceHeatStep    one operator application per iteration: forward,
//                        forward + adjoint (the inversion's physics step), and
//                        both with Chebyshev K = 20; ms per step, launches per
//                        step, and the sweeps' bandwidth (24 B per Jacobi cell
//                        update: c, three face weights, the iterate read once
//                        and written once; 28 B for Chebyshev, which also
//                        reads the iterate before) as GB/s and as a fraction
//                        of the triad's at the same size, measured beforehand.
//                        The reference's figure to beat is 57.5 ms per step
//                        (forward + adjoint, compiled, MLP included).
//   BM_DeviceHeatStepGraph  the same four steps captured once as a CUDA graph
//                        (nefi::StepGraph, as the solver captures a step) and
//                        replayed: ms and launches per replayed step.
//   BM_DeviceSweeps      K = 50 sweeps of DeviceFlatSweeper alone (one step's
//                        iteration, enqueued without a host sync), fused into
//                        one cooperative launch and one launch per sweep.
//   BM_DeviceCopy/Triad  50 cudaMemcpyAsync device to device or triad kernels
//                        then one sync, at the grid's size (65,536 f32:
//                        L2-resident and launch-bound, like a sweep) and at
//                        2^26 (DRAM).
// Each iteration is timed on the host around the work and a device sync, so
// it counts host gaps between launches and fk's sync after every op (the
// default policy; run with ME_LAZY_SYNC=1 for the lazy one).
// Reproduce (on a GPU machine; scripts/gpu-check runs it):
//   cmake --build build --target nefi_cuda_bench && build/bin/nefi_cuda_bench
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

#include "../cuda_event_timer.h"
#include "fk/autograd.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/ops/reduce.h"
#include "fk/profile.h"
#include "fk/random.h"
#include "nefi/cuda/device_sweeper.h"
#include "nefi/operators/heat/heat_operator.h"
#include "nefi/operators/heat/inner_solvers.h"
#include "nefi/solve/step_graph.h"

cudaError_t nefi_bench_triad(float* a, const float* b, const float* c, float s, int64_t n,
                             cudaStream_t stream);

namespace {

using fk_bench::current_stream;
using fk_bench::skip_without_device;

const fk::Device kGpu = fk::cuda_device(0);
const fk::Dims kGrid{64, 64, 16};

cudaStream_t stream() {
  return static_cast<cudaStream_t>(fk::cuda::current_stream(0));
}

// Seconds of `body` plus a device sync.
template <typename Body>
double timed(Body&& body) {
  const auto t0 = std::chrono::steady_clock::now();
  body();
  fk::cuda::synchronize(0);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One triad launch; a failed launch (e.g. no kernel image for this GPU)
// throws rather than timing nothing as a bandwidth.
void triad(fk::Tensor& a, const fk::Tensor& b, const fk::Tensor& c, int64_t n) {
  fk::cuda::detail::check_cuda(
      nefi_bench_triad(a.data<float>(), b.data<float>(), c.data<float>(), 0.5f, n, stream()),
      "nefi_bench_triad");
}

// Back-to-back launches per timed round of the references (a step's K sweeps
// are as many launches before one sync).
constexpr int kBurst = 50;

// The triad's bandwidth (GB/s: two reads, one write) over n f32: kBurst
// launches and one sync, best of 10 rounds.
double triad_gbps(int64_t n) {
  fk::Tensor a = fk::empty({n}, {fk::DType::F32, kGpu});
  fk::Tensor b = fk::ones({n}, {fk::DType::F32, kGpu}), c = fk::ones({n}, {fk::DType::F32, kGpu});
  double best = 1e30;
  for (int r = 0; r < 10; ++r)
    best = std::min(best, timed([&] {
                      for (int i = 0; i < kBurst; ++i) triad(a, b, c, n);
                    }));
  return 12.0 * kBurst * static_cast<double>(n) / best / 1e9;
}

nefi::HeatConfig paper_config(const char* solver, int64_t k) {
  nefi::HeatConfig c;  // extent 10×10×1, dt 0.05, 100 frames, harmonic faces
  c.n_frames = 100;
  c.solver = solver;
  c.jacobi_iters = k;
  return c;
}

// range(0): 0 Jacobi K = 50 forward, 1 the same forward + adjoint,
// 2 Chebyshev K = 20 forward, 3 the same forward + adjoint.
void BM_DeviceHeatStep(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const int v = static_cast<int>(state.range(0));
  const bool chebyshev = v >= 2, adjoint = v % 2 == 1;
  const int64_t k = chebyshev ? 20 : 50;
  const nefi::HeatOperator op(paper_config(chebyshev ? "chebyshev" : "jacobi", k), kGrid);
  fk::Generator gen(7);
  const fk::Tensor alpha = fk::uniform(kGrid, 0.1, 0.2, {fk::DType::F32}, &gen).to(kGpu);
  auto step = [&] {
    fk::Tensor a = alpha.detach();
    a.set_requires_grad(adjoint);
    fk::Tensor loss = fk::sum(op.apply(a));
    if (adjoint) loss.backward();
  };
  const double triad = triad_gbps(kGrid.numel());
  timed(step);  // warm the pool
  const auto before = fk::profile::counters();
  double seconds = 0;
  for (auto _ : state) {
    const double s = timed(step);
    state.SetIterationTime(s);
    seconds += s;
  }
  const auto after = fk::profile::counters();
  const double iters = static_cast<double>(state.iterations());
  const double sweeps = (adjoint ? 2.0 : 1.0) * 100 * static_cast<double>(k);
  const double gb = sweeps * static_cast<double>(kGrid.numel()) * (chebyshev ? 28 : 24) / 1e9;
  state.counters["launches/step"] = static_cast<double>(after.launches - before.launches) / iters;
  state.counters["ops/step"] = static_cast<double>(after.ops - before.ops) / iters;
  state.counters["ms/step"] = 1e3 * seconds / iters;
  state.counters["sweep_GB/s"] = gb * iters / seconds;
  state.counters["triad_GB/s"] = triad;
  state.counters["sweep/triad"] = gb * iters / seconds / triad;
  state.SetLabel(std::string(chebyshev ? "chebyshev K=20" : "jacobi K=50") +
                 (adjoint ? " forward+adjoint" : " forward") + " (reference: 57.5 ms/step)");
}
BENCHMARK(BM_DeviceHeatStep)->DenseRange(0, 3)->UseManualTime()->Unit(benchmark::kMillisecond);

// BM_DeviceHeatStep's step recorded once by a StepGraph (the solver's capture)
// and replayed: the same four variants, ms and launches per replayed step.
// The step's input α is written in place before each replay.
void BM_DeviceHeatStepGraph(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const int v = static_cast<int>(state.range(0));
  const bool chebyshev = v >= 2, adjoint = v % 2 == 1;
  const int64_t k = chebyshev ? 20 : 50;
  const nefi::HeatOperator op(paper_config(chebyshev ? "chebyshev" : "jacobi", k), kGrid);
  fk::Generator gen(7);
  const fk::Tensor alpha = fk::uniform(kGrid, 0.1, 0.2, {fk::DType::F32}, &gen).to(kGpu);
  fk::Tensor input = alpha.clone();
  fk::Tensor loss_out = fk::empty({}, {fk::DType::F32, kGpu});
  nefi::StepGraph graph(kGpu, "");
  auto step = [&] {
    fk::Tensor a = input.detach();
    a.set_requires_grad(adjoint);
    fk::Tensor loss = fk::sum(op.apply(a));
    if (adjoint) loss.backward();
    loss_out.copy_(loss.detach());
  };
  auto replay = [&] {
    input.copy_(alpha);
    graph.run(step, 0);
  };
  timed(replay);  // eager warm-up
  timed(replay);  // captured and launched
  if (graph.refused() || graph.captures() != 1) {
    state.SkipWithError(("no graph: " + graph.note()).c_str());
    return;
  }
  const auto before = fk::profile::counters();
  double seconds = 0;
  for (auto _ : state) {
    const double s = timed(replay);
    state.SetIterationTime(s);
    seconds += s;
  }
  const auto after = fk::profile::counters();
  const double iters = static_cast<double>(state.iterations());
  state.counters["launches/step"] = static_cast<double>(after.launches - before.launches) / iters;
  state.counters["ms/step"] = 1e3 * seconds / iters;
  state.counters["graph_nodes"] = static_cast<double>(graph.nodes());
  state.SetLabel(std::string(chebyshev ? "chebyshev K=20" : "jacobi K=50") +
                 (adjoint ? " forward+adjoint" : " forward") + ", one CUDA graph");
}
BENCHMARK(BM_DeviceHeatStepGraph)->DenseRange(0, 3)->UseManualTime()->Unit(benchmark::kMillisecond);

// K = 50 sweeps of one step, then one sync; range(0): 1 fused (one
// cooperative launch), 0 one launch per sweep.
void BM_DeviceSweeps(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const bool fused = state.range(0) == 1;
  const int64_t k = 50;
  const nefi::HeatOperator op(paper_config("jacobi", k), kGrid);
  fk::Generator gen(7);
  const fk::Tensor alpha = fk::uniform(kGrid, 0.1, 0.2, {fk::DType::F32}, &gen);
  const nefi::heat::StepGeometry& g = op.step_geometry();
  nefi::heat::DeviceFlatSweeper sw(alpha.to(kGpu), g);
  if (sw.set_fused(fused) != fused) {
    state.SkipWithError("no cooperative launch on this device");
    return;
  }
  const fk::Tensor x = fk::ones(kGrid, {fk::DType::F32, kGpu});
  sw.load(x);
  sw.set_rhs(x);
  const double triad = triad_gbps(kGrid.numel());
  timed([&] { sw.jacobi(k); });
  double seconds = 0;
  for (auto _ : state) {
    const double s = timed([&] { sw.jacobi(k); });
    state.SetIterationTime(s);
    seconds += s;
  }
  const double iters = static_cast<double>(state.iterations());
  const double gb = static_cast<double>(k * kGrid.numel()) * 24 / 1e9;
  state.counters["us/sweep"] = 1e6 * seconds / iters / static_cast<double>(k);
  state.counters["sweep_GB/s"] = gb * iters / seconds;
  state.counters["sweep/triad"] = gb * iters / seconds / triad;
  state.SetLabel(fused ? "fused: 1 launch" : "1 launch per sweep");
}
BENCHMARK(BM_DeviceSweeps)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMicrosecond);

// range(0): elements (f32); kBurst copies (one read and one write per
// element) per iteration, then one sync.
void BM_DeviceCopy(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const int64_t n = state.range(0);
  fk::Tensor src = fk::ones({n}, {fk::DType::F32, kGpu});
  fk::Tensor dst = fk::empty({n}, {fk::DType::F32, kGpu});
  for (auto _ : state)
    state.SetIterationTime(timed([&] {
      for (int i = 0; i < kBurst; ++i)
        fk::cuda::detail::check_cuda(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), 4 * n,
                                                     cudaMemcpyDeviceToDevice, stream()),
                                     "cudaMemcpyAsync");
    }));
  state.SetBytesProcessed(state.iterations() * kBurst * 8 * n);
}
BENCHMARK(BM_DeviceCopy)
    ->Arg(64 * 64 * 16)
    ->Arg(int64_t{1} << 26)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void BM_DeviceTriad(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const int64_t n = state.range(0);
  fk::Tensor a = fk::empty({n}, {fk::DType::F32, kGpu});
  fk::Tensor b = fk::ones({n}, {fk::DType::F32, kGpu}), c = fk::ones({n}, {fk::DType::F32, kGpu});
  for (auto _ : state)
    state.SetIterationTime(timed([&] {
      for (int i = 0; i < kBurst; ++i) triad(a, b, c, n);
    }));
  state.SetBytesProcessed(state.iterations() * kBurst * 12 * n);
}
BENCHMARK(BM_DeviceTriad)
    ->Arg(64 * 64 * 16)
    ->Arg(int64_t{1} << 26)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
