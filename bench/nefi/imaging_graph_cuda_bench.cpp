// The imaging operators' device paths inside a device solve's training step,
// eager and as one replayed CUDA graph (solve/step_graph.h): neural
// sparse_view_ct (2-D Radon: one gather kernel forward, one back), ct3d (the
// same per z slice), poisson_source (DST solve through cuFFT: 3 kernels and
// 2 FFTs each way), diffraction_tomography (Born: 2 kernels around one
// cuBLAS zgemm each way), reaction_diffusion (Gray-Scott: one kernel per
// Euler substep forward, one per substep recomputed and one per adjoint
// substep back), wave_fwi (all shots' leapfrog with checkpoints,
// 3 kernels a step and one a sample; its discrete adjoint about twice that)
// and photoacoustic3d (one initial-value leapfrog, a sample every step, the
// sensor's low-pass; the exact adjoint back), each at its default grid and field:
//   BM_DeviceImagingStep/instance:I/graph:G
//     I 0: sparse_view_ct (n 64, 20 views), 1: ct3d (64 x 64 x 32, 30 views),
//       2: poisson_source (n 64), 3: diffraction_tomography (n 32, 16 views,
//       64 receivers), 4: reaction_diffusion (n 32, 200 substeps),
//       5: wave_fwi (n 24, 6 shots, 32 receivers, 61 samples),
//       6: photoacoustic3d (48 x 48 x 32, 16 x 16 sensors, 49 samples)
//     G 0: every step eager; 1: captured after a warm-up step and replayed
// Each iteration is one solve of kSteps steps (setup excluded); the counters
// are over its steps after the first kSkip (warm-up and capture), with the
// graph over its replays only: ms/step, launches/step (fk's launch counter),
// eager_steps (graph rows: measured steps that were not replays, a warm-up
// and a capture after the step changed shape) and graph_steps (graph launches in
// the stage).
// Reproduce (on a GPU machine; scripts/gpu-check runs every nefi_cuda_bench row):
//   cmake --build build --target nefi_cuda_bench
//   build/bin/nefi_cuda_bench --benchmark_filter=BM_DeviceImagingStep
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "../cuda_event_timer.h"
#include "device_step_timing.h"
#include "nefi/instances/instance.h"

namespace {

using fk_bench::skip_without_device;

constexpr int kSteps = 40;
constexpr int kSkip = 5;

const char* instance_name(int64_t i) {
  const char* names[] = {
      "sparse_view_ct",     "ct3d",     "poisson_source", "diffraction_tomography",
      "reaction_diffusion", "wave_fwi", "photoacoustic3d"};
  return names[i];
}

void BM_DeviceImagingStep(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const std::string name = instance_name(state.range(0));
  const bool graph = state.range(1) != 0;
  nefi::Params p = nefi::find_instance(name)->default_config();
  p.set_value("steps", std::vector<double>{kSteps});
  nefi_bench::DeviceStepTotals totals;
  for (auto _ : state)
    state.SetIterationTime(1e-3 * nefi_bench::timed_device_solve(name, p, graph, kSkip, totals));
  state.SetLabel(name);
  nefi_bench::set_step_counters(state, totals);
}
BENCHMARK(BM_DeviceImagingStep)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6}, {0, 1}})
    ->ArgNames({"instance", "graph"})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// reaction_diffusion's device_fused_cells (default 1024 cells, the largest
// grid where fused won on an H200): the captured step with the whole rollout
// and the whole adjoint as one single-block launch each (fused:1,
// device_fused_cells at its largest) against one launch per substep over the
// device (fused:0), at n x n cells for n 32, 64 and 96 (200, 800 and 1800
// substeps: the stability bound grows with n^2). The n where fused:0 starts
// to win is the threshold.
void BM_DeviceReactionDiffusionFusedCells(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const int64_t n = state.range(0);
  const bool fused = state.range(1) != 0;
  nefi::Params p = nefi::find_instance("reaction_diffusion")->default_config();
  p.set_value("steps", std::vector<double>{kSteps});
  p.set("n", std::to_string(n));
  p.set("device_fused_cells", fused ? "65536" : "0");
  nefi_bench::DeviceStepTotals totals;
  for (auto _ : state) {
    state.SetIterationTime(
        1e-3 * nefi_bench::timed_device_solve("reaction_diffusion", p, true, kSkip, totals));
  }
  state.SetLabel(std::to_string(n * n) + " cells, " + (fused ? "fused" : "per substep"));
  nefi_bench::set_step_counters(state, totals);
}
BENCHMARK(BM_DeviceReactionDiffusionFusedCells)
    ->ArgsProduct({{32, 64, 96}, {0, 1}})
    ->ArgNames({"n", "fused"})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
