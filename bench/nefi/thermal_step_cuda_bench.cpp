// The thermal paper's whole training step on a CUDA device, the figure the
// reference reports (57.5 ms per step: NeFTY Tab. 5, its GPU, compiled
// sweeps, the MLP included): thermal_tomography's nefty method, i.e. the
// neural field on every cell, the heat rollout over the frames with its
// discrete adjoint, the loss and AdamW, eager and as one replayed CUDA graph
// (solve/step_graph.h). heat_cuda_bench.cpp times the heat operator alone.
//   BM_DeviceThermalStep/size:S/graph:G
//     S 0: a small copy (8 x 8 x 4, 6 frames, Jacobi K = 10, MLP 32 x 2), the
//          code path at a size the emulated device runs in CI;
//       1: the paper configuration, the instance's defaults
//          (configs/thermal_tomography_paper.yaml: 64 x 64 x 16, 100 frames,
//          Jacobi K = 50, MLP 512 wide x 10 deep, f32)
//     G 0: every step eager; 1: captured after a warm-up step and replayed
// Counters as device_step_timing.h's: ms/step, launches/step, eager_steps,
// graph_steps. The data are simulated on the host before the timed steps.
// Reproduce (on a GPU machine; scripts/gpu-check runs every nefi_cuda_bench row):
//   cmake --build build --target nefi_cuda_bench
//   build/bin/nefi_cuda_bench --benchmark_filter=BM_DeviceThermalStep
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "../cuda_event_timer.h"
#include "device_step_timing.h"
#include "nefi/instances/instance.h"

namespace {

using fk_bench::skip_without_device;

constexpr int kSteps = 25;
constexpr int kSkip = 5;

nefi::Params thermal_params(int64_t size) {
  nefi::Params p = nefi::find_instance("thermal_tomography")->default_config();
  if (size == 0) {
    p.set_value("extent", std::vector<double>{4, 4, 1});
    p.set_value("grid", std::vector<double>{8, 8, 4});
    p.set("n_frames", "6");
    p.set("jacobi_iters", "10");
    p.set("flash_width_xy", "1.0");
    p.set("hidden", "32");
    p.set("depth", "2");
    p.set("n_octaves", "3");
  }
  p.set("steps", std::to_string(kSteps));
  return p;
}

void BM_DeviceThermalStep(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const int64_t size = state.range(0);
  const bool graph = state.range(1) != 0;
  const nefi::Params p = thermal_params(size);
  nefi_bench::DeviceStepTotals totals;
  for (auto _ : state) {
    state.SetIterationTime(1e-3 * nefi_bench::timed_device_solve("thermal_tomography", p, graph,
                                                                 kSkip, totals, "nefty"));
  }
  state.SetLabel(size == 0 ? "8x8x4, 6 frames" : "paper: 64x64x16, 100 frames (reference 57.5 ms)");
  nefi_bench::set_step_counters(state, totals);
}
BENCHMARK(BM_DeviceThermalStep)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->ArgNames({"size", "graph"})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
