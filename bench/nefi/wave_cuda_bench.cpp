// One wave operator step on a CUDA device, against the same step on the CPU:
// the velocity → traces map of wave_fwi at its defaults (24 x 24 cells, a
// 0.25 km PML of order-4 leapfrog, 6 shots of a 4 Hz Ricker, 32 receivers,
// 61 samples at 16 ms), forward alone or forward with checkpoints plus the
// discrete adjoint (the velocity gradient), f32 and f64:
//   BM_DeviceWaveStep/dtype:D/gradient:G/device:V/fused:F
//     D 0: f32, 1: f64; G 0: forward, 1: forward + backward;
//     V 0: CPU (this machine's threads), 1: CUDA device 0;
//     F (device rows) NEFI_WAVE_FUSED: 1 each run of leapfrog steps as one
//     cooperative launch, 0 a launch per phase (CPU rows: 0)
// Counters: ms/step (CUDA events around the device step; wall clock on the
// CPU), launches/step (fk's launch counter) and leapfrog steps per solve.
// Reproduce (on a GPU machine; scripts/gpu-check runs every nefi_cuda_bench row):
//   cmake --build build --target nefi_cuda_bench
//   build/bin/nefi_cuda_bench --benchmark_filter=BM_DeviceWaveStep
#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "../cuda_event_timer.h"
#include "fk/autograd.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/knobs.h"
#include "fk/profile.h"
#include "nefi/instances/wave_fwi_data.h"
#include "nefi/operators/wave/wave_operator.h"

namespace {

using fk_bench::EventTimer;
using fk_bench::skip_without_device;

// wave_fwi's default operator (instances/wave_fwi.cpp's operator_config).
nefi::WaveOperatorConfig fwi_default_config() {
  nefi::WaveOperatorConfig o;
  o.wave.extent = {1.0, 1.0};
  o.wave.order = 4;
  o.wave.absorbing = nefi::wave::Absorbing::kPml;
  o.wave.absorb_width = 0.25;
  o.wave.absorb_R = 1e-3;
  o.wave.courant = 0.9;
  o.wave.c_max = 2.5;
  o.wave.dt_obs = 0.016;
  o.wave.n_t = 61;
  o.f0 = 4.0;
  const nefi::fwi::Acquisition acq = nefi::fwi::acquisition("surround", 1.0, 6, 32, 0.08);
  o.sources = acq.sources;
  o.receivers = acq.receivers;
  return o;
}

void BM_DeviceWaveStep(benchmark::State& state) {
  const fk::DType dtype = state.range(0) == 0 ? fk::DType::F32 : fk::DType::F64;
  const bool gradient = state.range(1) != 0, on_device = state.range(2) != 0;
  if (on_device && skip_without_device(state)) return;
  const fk::KnobOverride fused("NEFI_WAVE_FUSED", state.range(3) != 0 ? "1" : "0");
  const fk::Device device = on_device ? fk::cuda_device(0) : fk::kCPU;
  const nefi::WaveOperator op(fwi_default_config(), {24, 24});
  const fk::Tensor c = fk::full({24, 24}, 2.0, {dtype, device});
  const fk::Tensor g = fk::ones(op.output_shape({24, 24}), {dtype, device});
  auto step = [&] {
    fk::Tensor x = c.detach();
    if (gradient) x.set_requires_grad(true);
    const fk::Tensor y = op.apply(x);
    if (gradient) fk::autograd::backward({y}, {g});
  };
  step();  // uploads the device tables; warms the pools
  if (on_device) fk::cuda::synchronize(0);
  EventTimer timer;
  double seconds = 0, launches = 0, n = 0;
  for (auto _ : state) {
    const int64_t before = fk::profile::counters().launches;
    double s = 0;
    if (on_device) {
      s = timer.seconds(step);
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      step();
      s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    launches += static_cast<double>(fk::profile::counters().launches - before);
    seconds += s;
    n += 1;
    state.SetIterationTime(s);
  }
  state.counters["ms/step"] = n > 0 ? 1e3 * seconds / n : 0;
  state.counters["launches/step"] = n > 0 ? launches / n : 0;
  state.counters["leapfrog_steps"] = static_cast<double>(op.geometry().grid.n_steps());
}
BENCHMARK(BM_DeviceWaveStep)
    ->Apply([](benchmark::internal::Benchmark* b) {
      for (int64_t dtype : {0, 1})
        for (int64_t gradient : {0, 1}) {
          b->Args({dtype, gradient, 0, 0});
          b->Args({dtype, gradient, 1, 0});
          b->Args({dtype, gradient, 1, 1});
        }
    })
    ->ArgNames({"dtype", "gradient", "device", "fused"})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
