// A device solve's training step eager and as one replayed CUDA graph
// (solve/step_graph.h), on neural toy1d (FFT convolution operator, MSE + L1,
// AdamW with clipping) at two sizes:
//   BM_DeviceSolverStep/graph:G/size:S
//     G 0: every step eager (each op launched from the host, fk's sync after
//          every op unless ME_LAZY_SYNC=1); 1: captured after a warm-up step
//          and replayed (one graph launch per step)
//     S 0: n 256, MLP 32 wide x 3 deep, 5 octaves (launch-bound);
//       1: n 4096, 256 x 6, 12 octaves (the NeuralField defaults)
// Each iteration is one solve of kSteps steps (setup excluded); the time and
// counters are over its steps after the first kSkip (warm-up and capture),
// with the graph over its replays only: ms/step (the solver's own step time:
// host work, launches and the step's one host read), launches/step (fk's
// launch counter: a replay counts one, plus the annealing gate's upload
// while bands still open), eager_steps (graph rows: measured steps that were
// not replays, a warm-up and a capture after the step changed shape) and
// graph_steps (how many of the stage's steps were graph launches).
// Reproduce (on a GPU machine; scripts/gpu-check runs it, also with ME_LAZY_SYNC=1):
//   cmake --build build --target nefi_cuda_bench
//   build/bin/nefi_cuda_bench --benchmark_filter=BM_DeviceSolverStep
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "../cuda_event_timer.h"
#include "device_step_timing.h"
#include "nefi/instances/instance.h"

namespace {

using fk_bench::skip_without_device;

constexpr int kSteps = 60;
constexpr int kSkip = 5;

nefi::Params toy1d_params(int64_t size) {
  nefi::Params p = nefi::find_instance("toy1d")->default_config();
  p.set("n", size == 0 ? "256" : "4096");
  p.set("hidden", size == 0 ? "32" : "256");
  p.set("depth", size == 0 ? "3" : "6");
  p.set("n_octaves", size == 0 ? "5" : "12");
  p.set_value("tv", 0.0);
  p.set_value("l1", 1e-3);
  p.set_value("steps", std::vector<double>{kSteps});
  return p;
}

void BM_DeviceSolverStep(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const bool graph = state.range(0) != 0;
  const nefi::Params p = toy1d_params(state.range(1));
  nefi_bench::DeviceStepTotals totals;
  for (auto _ : state)
    state.SetIterationTime(1e-3 * nefi_bench::timed_device_solve("toy1d", p, graph, kSkip, totals));
  nefi_bench::set_step_counters(state, totals);
}
BENCHMARK(BM_DeviceSolverStep)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->ArgNames({"graph", "size"})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
