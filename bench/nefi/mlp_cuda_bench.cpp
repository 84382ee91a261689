// NeuralField's MLP on a CUDA device: the fused kernel (NEFI_FUSED_MLP=1,
// fused_mlp_device.h) against one cuBLAS GEMM + one epilogue kernel per layer
// (NEFI_FUSED_MLP=0), on 65,536 rows (a 256 x 256 domain), hidden 32, 64 and
// 128, depth 4 with the skip at 2, tanh, 2-D features with 12 octaves (50
// columns), two heads; f32 products (TF32 off, as the tests), or the hidden
// layers' products on bf16 / f16 operands (autocast: the fused kernel rounds
// its operands and keeps f32 FMA; cuBLAS runs them on tensor cores).
//   BM_DeviceMlpRows/side/width/fused/autocast: forward + backward on
//                        side x side rows (4,096 to 262,144), f32 and bf16
//                        autocast, for NEFI_FUSED_MLP=auto's rule.
//   BM_DeviceMlp/width/fused/backward/autocast  (autocast 0 f32, 1 bf16,
//                        2 f16) one raw() (encoding: zero ops once the
//                        gates are open) and, with backward, the gradient of
//                        sum(raw) into the flat parameters; ms per call,
//                        launches per call and the MLP's f32 rate (2 flops
//                        per multiply-add: forward N sum(rows x fan_in), and
//                        twice that again backward) as GFLOP/s.
// Each iteration is timed with CUDA events around the work on fk's stream
// (host gaps between launches included; fk syncs after every op by default,
// ME_LAZY_SYNC=1 for the lazy policy). The machine limit to read it against:
// the GPU's f32 FMA peak (an H100/H200 SXM: ~67 TFLOP/s without tensor cores;
// the fused kernel's bound under autocast too, cuBLAS's being the tensor
// cores' ~990 TFLOP/s dense bf16/f16).
// Reproduce (on a GPU machine; scripts/gpu-check runs it):
//   cmake --build build/release --target nefi_cuda_bench &&
//   build/bin/nefi_cuda_bench --benchmark_filter=BM_DeviceMlp
#include <benchmark/benchmark.h>

#include <optional>
#include <string>

#include "../cuda_event_timer.h"
#include "fk/amp.h"
#include "fk/autograd.h"
#include "fk/knobs.h"
#include "fk/ops/reduce.h"
#include "fk/profile.h"
#include "nefi/domain.h"
#include "nefi/field/heads.h"
#include "nefi/field/neural_field.h"

namespace {

using fk_bench::skip_without_device;

constexpr int kDepth = 4, kSkip = 2, kOctaves = 12;

nefi::NeuralField bench_field(int hidden, std::optional<fk::DType> autocast) {
  nefi::NeuralFieldConfig cfg;
  cfg.autocast = autocast;
  cfg.hidden = hidden;
  cfg.depth = kDepth;
  cfg.skip_at = kSkip;
  cfg.activation = "tanh";
  cfg.n_octaves = kOctaves;
  nefi::NeuralField f(2, {nefi::softplus_head("a", 0.3), nefi::identity_head("b", 0.1)}, cfg, 1);
  f.to(fk::cuda_device(0));
  return f;
}

// Multiply-adds per row of the network (hidden layers and the 2-wide head).
double macs_per_row(int hidden) {
  const double in = 2 + 2.0 * kOctaves * 2;
  double macs = hidden * in + 2.0 * hidden;
  for (int l = 1; l < kDepth; ++l) macs += hidden * (l == kSkip ? hidden + in : hidden);
  return macs;
}

// One MLP row: hidden width, fused (1) or per layer (0), with the backward,
// autocast (nullopt: f32), on a side x side domain.
void run_mlp(benchmark::State& state, int hidden, bool fused, bool backward,
             std::optional<fk::DType> autocast, int64_t side) {
  if (skip_without_device(state)) return;
  const fk::KnobOverride path("NEFI_FUSED_MLP", fused ? "1" : "0"), no_tf32("FK_ALLOW_TF32", "0");
  {
    nefi::NeuralField f = bench_field(hidden, autocast);
    const nefi::Domain d({side, side});
    auto call = [&] {
      if (backward) {
        f.params().flat().set_grad(fk::Tensor());
        fk::sum(f.raw(d, 1.0)).backward();
      } else {
        fk::autograd::NoGradGuard ng;
        f.raw(d, 1.0);
      }
    };
    call();  // the encoding's cache and the pool
    fk_bench::EventTimer timer;
    const auto before = fk::profile::counters();
    double seconds = 0;
    for (auto _ : state) {
      const double s = timer.seconds(call);
      state.SetIterationTime(s);
      seconds += s;
    }
    const auto after = fk::profile::counters();
    const double iters = static_cast<double>(state.iterations());
    const double flops =
        2 * macs_per_row(hidden) * static_cast<double>(d.numel()) * (backward ? 3 : 1);
    state.counters["ms/call"] = 1e3 * seconds / iters;
    state.counters["launches/call"] = static_cast<double>(after.launches - before.launches) / iters;
    state.counters["GFLOP/s"] = flops * iters / seconds / 1e9;
    state.SetLabel(std::string(fused ? "fused" : "per-layer cuBLAS") +
                   (backward ? " forward+backward" : " forward") + ", " +
                   std::to_string(d.numel()) + " rows" +
                   (autocast ? std::string(", ") + fk::name(*autocast) + " autocast" : ""));
  }
}

std::optional<fk::DType> autocast_of(int64_t code) {
  return code == 1   ? std::optional(fk::DType::BF16)
         : code == 2 ? std::optional(fk::DType::F16)
                     : std::nullopt;
}

// range(0): hidden width; range(1): 1 fused, 0 per layer; range(2): 1 with
// the backward; range(3): 0 f32, 1 bf16 autocast, 2 f16 autocast.
void BM_DeviceMlp(benchmark::State& state) {
  run_mlp(state, static_cast<int>(state.range(0)), state.range(1) == 1, state.range(2) == 1,
          autocast_of(state.range(3)), 256);
}
BENCHMARK(BM_DeviceMlp)
    ->ArgNames({"width", "fused", "backward", "autocast"})
    ->ArgsProduct({{32, 64, 128}, {0, 1}, {0, 1}, {0, 1, 2}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// The training call (forward + backward) at other row counts, for the
// fused-MLP rule (NEFI_FUSED_MLP=auto, measured at 65,536 rows only): a
// small batch may favour the one launch, a large one cuBLAS. range(0): the
// domain's side (64: 4,096 rows; 128: 16,384; 512: 262,144); range(1) width;
// range(2) fused; range(3) autocast (0 f32, 1 bf16).
void BM_DeviceMlpRows(benchmark::State& state) {
  run_mlp(state, static_cast<int>(state.range(1)), state.range(2) == 1, true,
          autocast_of(state.range(3)), state.range(0));
}
BENCHMARK(BM_DeviceMlpRows)
    ->ArgNames({"side", "width", "fused", "autocast"})
    ->ArgsProduct({{64, 128, 512}, {32, 64, 128}, {0, 1}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
