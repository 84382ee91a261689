// GPU benchmark of one MinkUNet18 training step (nn::train_step: zero_grad,
// forward, cross-entropy, backward, Adam) on the 100k-voxel scene of
// cuda_bench_scene.h: 3 input channels, 20 classes, the network moved to the
// device with Module::to, features and labels on the device. Each step builds
// a fresh SparseTensor (a new coordinate manager, so every coordinate and
// kernel map is built again, as when each step brings a new scene), from
// coordinates on the host (maps built on the host, kernel maps uploaded) or
// on the device (maps and kernel maps built there). Rows: f32, TF32 (f32 with
// fk::amp::allow_tf32) and bf16 (autocast: bf16 convolutions, f32 master
// weights, norms and loss) with host coordinates; f32 with device
// coordinates; f32 with ME_LAZY_SYNC=1; then f32, TF32 and bf16 again with
// ME_CONV_DATAFLOW=gather pinned, beside the default auto (the cost model's
// per-layer choice of gather or implicit GEMM). Atomics (set_deterministic
// off).
// Counters: the time per step (ms, CUDA events on the current stream around
// the whole step, host gaps and syncs included), points/s, and per step fk's
// op, launch and sync counters (fk::profile: fk's device ops and copies, and
// every kernel, GEMM, gather and scatter minkowski's device dispatch issues; a
// CUB sort counts as one; a sync is a host wait for the stream, after an op
// unless ME_LAZY_SYNC=1, and for every host read). `minkowski bench train
// --device cuda --ops N` lists where such a step's host time goes.
// Without a usable device every row reports an error and skips.
// Reproduce (on a GPU machine; scripts/gpu-check runs it):
//   build/bin/minkowski_cuda_bench --benchmark_filter=BM_DeviceMinkUNet18Step
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../cuda_event_timer.h"
#include "cuda_bench_scene.h"
#include "fk/cuda/runtime.h"
#include "fk/fk.h"
#include "fk/profile.h"
#include "minkowski/minkowski.h"
#include "minkowski/nn/minkunet.h"
#include "minkowski/nn/optim.h"
#include "minkowski/nn/segmentation.h"

namespace {

using fk_bench::current_stream;
using fk_bench::EventTimer;
using fk_bench::skip_without_device;

const fk::Device kGpu = fk::cuda_device(0);

enum Precision : int64_t { kFp32 = 0, kTf32 = 1, kBf16 = 2 };
const char* precision_name(int64_t p) {
  static const char* names[] = {"f32", "tf32", "bf16"};
  return names[p];
}

struct TrainScene {
  std::string source;
  fk::Tensor coords;            // N x 4 int32 on the host
  fk::Tensor features, labels;  // on the device
};

const TrainScene& train_scene() {
  static const TrainScene s = [] {
    const minkowski_bench::SceneRows loaded = minkowski_bench::load_scene_rows();
    TrainScene r;
    r.source = loaded.source;
    const int64_t n = static_cast<int64_t>(loaded.rows.size()) / 4;
    r.coords = fk::from_vector(loaded.rows, fk::Dims{n, 4});
    fk::Generator gen(11);
    r.features = fk::rand({n, 3}, {fk::DType::F32}, &gen).to(kGpu);
    r.labels = fk::randint(0, 20, {n}, {fk::DType::I64}, &gen).to(kGpu);
    return r;
  }();
  return s;
}

// The TF32 switch and the sync knob of one row, for its scope.
struct RowSettings {
  RowSettings(int64_t precision, bool lazy, bool gather, int64_t grouped)
      : tf32("FK_ALLOW_TF32", precision == kTf32 ? "1" : "0"),
        lazy_sync("ME_LAZY_SYNC", lazy ? "1" : "0"),
        dataflow("ME_CONV_DATAFLOW", gather ? "gather" : "auto"),
        grouped_gemm("ME_CONV_GROUPED_GEMM", grouped == 2   ? "all"
                                             : grouped == 1 ? "features"
                                                            : "off") {}
  fk::KnobOverride tf32, lazy_sync, dataflow, grouped_gemm;
};

const char* grouped_name(int64_t grouped) {
  return grouped == 2 ? " grouped all" : grouped == 1 ? " grouped features" : "";
}

// Args: precision (0 f32, 1 tf32, 2 bf16); coordinates on the device (1) or
// the host (0); ME_LAZY_SYNC (1) or not (0); ME_CONV_DATAFLOW gather (1) or
// auto (0); ME_CONV_GROUPED_GEMM off (0), features (1) or all (2).
void BM_DeviceMinkUNet18Step(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const int64_t precision = state.range(0);
  const bool device_coords = state.range(1) != 0;
  const bool gather = state.range(3) != 0;
  const RowSettings settings(precision, state.range(2) != 0, gather, state.range(4));
  const TrainScene& s = train_scene();
  const fk::Tensor coords = device_coords ? s.coords.to(kGpu) : s.coords;
  fk::manual_seed(0);
  minkowski::nn::MinkUNet net(minkowski::nn::minkunet_options("18", 3, 20, 3));
  net.to(kGpu);
  minkowski::nn::Adam adam(net.parameters(), {});
  minkowski::nn::StepOptions options;
  options.precision = precision == kBf16 ? fk::DType::BF16 : fk::DType::F32;
  double loss = 0;
  auto step = [&] {
    loss = minkowski::nn::train_step(net, adam, minkowski::SparseTensor(s.features, coords),
                                     s.labels, options)
               .loss;
  };
  step();  // warm-up: the pools, cuBLAS handles, the moments
  cudaStreamSynchronize(current_stream());
  EventTimer timer;
  const fk::profile::Counters before = fk::profile::counters();
  int64_t steps = 0;
  for (auto _ : state) {
    state.SetIterationTime(timer.seconds(step));
    ++steps;
  }
  const fk::profile::Counters after = fk::profile::counters();
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) state.SkipWithError(cudaGetErrorString(e));
  const double per = steps > 0 ? 1.0 / static_cast<double>(steps) : 0.0;
  state.counters["launches_per_step"] = static_cast<double>(after.launches - before.launches) * per;
  state.counters["ops_per_step"] = static_cast<double>(after.ops - before.ops) * per;
  state.counters["syncs_per_step"] = static_cast<double>(after.syncs - before.syncs) * per;
  state.counters["points/s"] = benchmark::Counter(static_cast<double>(s.coords.size(0)),
                                                  benchmark::Counter::kIsIterationInvariantRate);
  state.counters["loss"] = loss;
  state.SetLabel(s.source + " " + precision_name(precision) + " coordinates on " +
                 (device_coords ? "device" : "host") + (state.range(2) != 0 ? " lazy sync" : "") +
                 (gather ? " gather" : " auto") + grouped_name(state.range(4)));
}
// Beside device_coords:1's f32 row: the same under ME_LAZY_SYNC=1, and with
// the grouped GEMMs, where the per-offset GEMMs' dispatch is the host time
// left (docs/performance.md, session 28).
BENCHMARK(BM_DeviceMinkUNet18Step)
    ->Args({kFp32, 0, 0, 0, 0})
    ->Args({kTf32, 0, 0, 0, 0})
    ->Args({kBf16, 0, 0, 0, 0})
    ->Args({kFp32, 1, 0, 0, 0})
    ->Args({kFp32, 0, 1, 0, 0})
    ->Args({kFp32, 0, 0, 1, 0})
    ->Args({kTf32, 0, 0, 1, 0})
    ->Args({kBf16, 0, 0, 1, 0})
    ->Args({kFp32, 1, 1, 0, 0})
    ->Args({kFp32, 1, 0, 0, 1})
    ->Args({kFp32, 1, 0, 0, 2})
    ->ArgNames({"precision", "device_coords", "lazy", "gather", "grouped"})
    ->Iterations(6)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
