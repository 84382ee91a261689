// GPU benchmarks of minkowski's device convolution (minkowski_cuda) on a
// 100k-voxel indoor scene: the device kernel-map build, and the forward and
// backward of a 3x3x3 submanifold convolution at C_in = C_out = C in
// {32, 64, 128, 256}, in f32, TF32 (f32 with fk::amp::allow_tf32), bf16 and
// f16 (tensor cores, f32 accumulation), and f64 (cuBLAS DGEMM, f64
// accumulation; gather only, the implicit dataflow refuses f64; H200 FP64
// peak 67 TFLOPS on tensor cores), fused (one gather and scatter per
// group of offsets) against per-offset (ME_FUSED_COPY=0), and fused with
// ME_LAZY_SYNC off and on (these two ablations at C = 128, or at every C with
// --conv_ablations_at_every_width). Each row also times, in the same run, the
// convolution's cuBLAS GEMMs alone on staged buffers of the same shapes and
// dtype (one per offset forward, two backward; the bound the gather and
// scatter add to): gemm_FLOPS is their rate, of_gemm = (GEMM time) /
// (convolution time), the fraction of cuBLAS's own rate the convolution
// reaches. Rows with implicit:1 run the implicit-GEMM dataflow
// (ME_CONV_DATAFLOW=implicit; the others gather) on its f32 FMA tiles
// (ME_CONV_IMPLICIT_MMA=0), implicit:2 on tensor cores (f16, bf16, TF32),
// beside the same GEMM-only rate; the label ends with the dataflow that ran
// (and "mma" where tensor cores did). Every row also reports the `auto` cost
// model's predictions for its product (the forward; backward rows: the
// input gradient) -- model_gather_s, model_implicit_s -- and the tiles'
// density (pairs / padded slots, conv_dataflow.h): measured times against
// these calibrate the model's constants (docs/performance.md, session 11).
// Rows with grouped:1 (grouped:2) make each staging group's forward and
// input-gradient GEMMs (and the weight gradient's) one grouped cuBLAS call
// (ME_CONV_GROUPED_GEMM); gemm_calls counts the cuBLAS calls of a call.
// Atomics (set_deterministic off). Each iteration is timed with CUDA
// events on the current stream (manual time), including the host gaps and,
// with ME_LAZY_SYNC off, the sync at the end of each op. FLOPS count
// 2 x pairs x C_in x C_out per pass (the backward's two GEMMs: twice that).
// Scene: cuda_bench_scene.h's (the 100k indoor scene, or the synthetic one);
// the label names it and the precision. The MinkUNet18 training step's rows
// are cuda_train_bench.cpp's, in the same executable.
// Without a usable device every benchmark reports an error and skips.
// Reproduce (on a GPU machine; scripts/gpu-check runs it):
//   cmake --build build --target minkowski_cuda_bench && build/bin/minkowski_cuda_bench
//   build/bin/minkowski_cuda_bench --conv_ablations_at_every_width   # every row, as gpu-check
//   build/bin/minkowski_cuda_bench --benchmark_filter='BM_DeviceConv/C:128/precision:2'
//   build/bin/minkowski_cuda_bench --benchmark_filter='BM_DeviceConv/.*/precision:4'
//   build/bin/minkowski_cuda_bench --benchmark_filter='BM_DeviceConv/C:32/.*/implicit:1'
//   build/bin/minkowski_cuda_bench --benchmark_filter='BM_DeviceConv/.*/lazy:0/implicit'
//   build/bin/minkowski_cuda_bench --benchmark_filter='BM_DeviceConv/.*/grouped'
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "../cuda_event_timer.h"
#include "cuda_bench_scene.h"
#include "fk/cuda/blas.h"
#include "fk/cuda/kernels.h"
#include "fk/cuda/runtime.h"
#include "fk/fk.h"
#include "minkowski/cuda/device_conv.h"
#include "minkowski/cuda/device_kernel_map.h"
#include "minkowski/cuda/implicit_conv.h"
#include "minkowski/minkowski.h"

namespace {

using fk_bench::current_stream;
using fk_bench::EventTimer;
using fk_bench::skip_without_device;

const fk::Device kGpu = fk::cuda_device(0);

// Times each iteration with events, after one untimed warm-up call; returns
// the mean seconds per iteration.
template <typename Body>
double run_timed(benchmark::State& state, Body&& body) {
  body();
  cudaStreamSynchronize(current_stream());
  EventTimer timer;
  double total = 0;
  int64_t n = 0;
  for (auto _ : state) {
    const double s = timer.seconds(body);
    state.SetIterationTime(s);
    total += s;
    ++n;
  }
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) state.SkipWithError(cudaGetErrorString(e));
  return n > 0 ? total / static_cast<double>(n) : 0.0;
}

// The median seconds of `reps` calls of body, after one warm-up call.
template <typename Body>
double median_seconds(Body&& body, int reps = 15) {
  body();
  cudaStreamSynchronize(current_stream());
  EventTimer timer;
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) t.push_back(timer.seconds(body));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Scene {
  std::string source;
  std::shared_ptr<minkowski::CoordinateMap> map;
  std::vector<int32_t> offsets;
  std::optional<minkowski::cuda::DeviceKernelMap> dev;
};

Scene& scene() {
  static Scene s = [] {
    Scene r;
    const minkowski_bench::SceneRows loaded = minkowski_bench::load_scene_rows();
    const std::vector<int32_t>& rows = loaded.rows;
    r.source = loaded.source;
    r.map = std::make_shared<minkowski::CoordinateMap>(
        rows.data(), static_cast<int64_t>(rows.size()) / 4, 4, std::vector<int32_t>{1, 1, 1});
    r.offsets = minkowski::KernelRegion::cube({3}).offsets({1, 1, 1});
    return r;
  }();
  if (!s.dev && fk::cuda::device_count() > 0)
    s.dev = minkowski::cuda::build_device_kernel_map(*s.map, *s.map, s.offsets);
  return s;
}

void report_flops(benchmark::State& state, double flops_per_iteration) {
  state.counters["FLOPS"] =
      benchmark::Counter(flops_per_iteration, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_DeviceKernelMapCube3(benchmark::State& state) {
  if (skip_without_device(state)) return;
  Scene& s = scene();
  run_timed(state, [&] { minkowski::cuda::build_device_kernel_map(*s.map, *s.map, s.offsets); });
  state.counters["pairs"] = static_cast<double>(s.dev->pairs());
  state.SetLabel(s.source);
}
BENCHMARK(BM_DeviceKernelMapCube3)->UseManualTime()->Unit(benchmark::kMillisecond);

// The precision columns: storage dtype, and TF32 for f32.
enum Precision : int64_t { kFp32 = 0, kTf32 = 1, kBf16 = 2, kFp16 = 3, kFp64 = 4 };
fk::DType dtype_of(int64_t p) {
  return p == kBf16   ? fk::DType::BF16
         : p == kFp16 ? fk::DType::F16
         : p == kFp64 ? fk::DType::F64
                      : fk::DType::F32;
}
const char* precision_name(int64_t p) {
  static const char* names[] = {"f32", "tf32", "bf16", "f16", "f64"};
  return names[p];
}

// The knobs and the TF32 switch of one row, for its scope.
struct RowSettings {
  // implicit: 0 gather, 1 implicit on FMA tiles, 2 implicit on tensor cores.
  // grouped: ME_CONV_GROUPED_GEMM 0 off, 1 features, 2 all.
  RowSettings(int64_t precision, bool fused, bool lazy, int64_t implicit, int64_t grouped)
      : tf32("FK_ALLOW_TF32", precision == kTf32 ? "1" : "0"),
        dataflow("ME_CONV_DATAFLOW", implicit > 0 ? "implicit" : "gather"),
        mma("ME_CONV_IMPLICIT_MMA", implicit == 2 ? "1" : "0"),
        fused_copy("ME_FUSED_COPY", fused ? "1" : "0"),
        lazy_sync("ME_LAZY_SYNC", lazy ? "1" : "0"),
        grouped_gemm("ME_CONV_GROUPED_GEMM", grouped == 2   ? "all"
                                             : grouped == 1 ? "features"
                                                            : "off") {}
  fk::KnobOverride tf32, dataflow, mma, fused_copy, lazy_sync, grouped_gemm;
};

struct ConvOperands {
  fk::Tensor f, w, g;
};
ConvOperands conv_operands(const Scene& s, int64_t c, fk::DType dtype) {
  fk::Generator gen(7);
  const fk::TensorOptions o{fk::DType::F32, kGpu};
  return {fk::uniform({s.map->size(), c}, -1, 1, o, &gen).to(dtype),
          fk::uniform({27, c, c}, -0.03, 0.03, o, &gen).to(dtype),
          fk::uniform({s.map->size(), c}, -1, 1, o, &gen).to(dtype)};
}

// Seconds of the convolution's GEMMs alone, as device_conv.cpp issues them
// (forward: staged_in_k W_k; backward: staged_in_k^T staged_out_k and
// staged_out_k W_k^T), on staged buffers of all pairs (no gather, no
// scatter), in the row's dtype and TF32 setting: one cuBLAS call per offset,
// or, as the row's ME_CONV_GROUPED_GEMM groups them (grouped: 1 the forward
// and the input gradient, 2 the weight gradient too), one grouped call per
// direction. The grouped rows' gemm_FLOPS beside the grouped:0 rows' is
// cuBLAS's grouped rate against its per-offset rate on the same products.
// Measured once per shape, precision, direction and grouping, and kept for
// the rows that share them.
double gemm_seconds(const Scene& s, int64_t c, int64_t precision, bool backward, int64_t grouped,
                    const ConvOperands& op) {
  static std::map<std::tuple<int64_t, int64_t, bool, int64_t>, double> measured;
  const auto key = std::make_tuple(c, precision, backward, grouped);
  if (auto it = measured.find(key); it != measured.end()) return it->second;
  const fk::DType dtype = dtype_of(precision);
  const int code = static_cast<int>(dtype), es = static_cast<int>(fk::itemsize(dtype));
  const int64_t P = s.dev->pairs();
  // Random rows, not zeros: tensor cores draw less power (and may clock
  // higher) on zeros.
  fk::Generator gen(8);
  const fk::TensorOptions o{fk::DType::F32, kGpu};
  const fk::Tensor in = fk::uniform({P, c}, -1, 1, o, &gen).to(dtype);
  const fk::Tensor out = fk::uniform({P, c}, -1, 1, o, &gen).to(dtype);
  const fk::Tensor gw = fk::zeros({27, c, c}, {dtype, kGpu});
  const bool tf32 = precision == kTf32;
  auto at = [&](const fk::Tensor& t, int64_t elements) {
    return static_cast<char*>(t.data_ptr()) + elements * es;
  };
  // The products of each direction: forward, weight gradient, input gradient.
  fk::cuda::GemmList fwd, dw, dx;
  for (int64_t k = 0; k < s.dev->volume; ++k) {
    const int64_t n = s.dev->count(k), p = s.dev->offset_begin[k];
    if (n == 0) continue;
    fwd.add({false, false, n, c, c, c, c, c}, at(in, p * c), at(op.w, k * c * c), at(out, p * c));
    dw.add({true, false, c, c, n, c, c, c}, at(in, p * c), at(out, p * c), at(gw, k * c * c));
    dx.add({false, true, n, c, c, c, c, c}, at(out, p * c), at(op.w, k * c * c), at(in, p * c));
  }
  auto run = [&](const fk::cuda::GemmList& l, bool group) {
    fk::cuda::gemm_list(0, code, l, group, current_stream(), tf32);
  };
  const double seconds = median_seconds([&] {
    if (!backward) return run(fwd, grouped >= 1);
    run(dw, grouped == 2);
    run(dx, grouped >= 1);
  });
  measured[key] = seconds;
  return seconds;
}

// Args: C; precision (0 f32, 1 tf32, 2 bf16, 3 f16, 4 f64); fused (1) or per-offset
// (0); backward (1) or forward (0); ME_LAZY_SYNC (1) or not (0);
// ME_CONV_DATAFLOW gather (0), implicit on FMA tiles (1) or on tensor cores (2);
// ME_CONV_GROUPED_GEMM off (0), features (1) or all (2).
void BM_DeviceConv(benchmark::State& state) {
  if (skip_without_device(state)) return;
  Scene& s = scene();
  const int64_t c = state.range(0), precision = state.range(1);
  const bool fused = state.range(2) != 0, backward = state.range(3) != 0;
  const RowSettings settings(precision, fused, state.range(4) != 0, state.range(5), state.range(6));
  const ConvOperands op = conv_operands(s, c, dtype_of(precision));
  const double conv_s =
      backward
          ? run_timed(state,
                      [&] { minkowski::cuda::conv_backward(op.g, op.f, op.w, *s.dev, true, true); })
          : run_timed(state, [&] { minkowski::cuda::conv_forward(op.f, op.w, *s.dev); });
  const minkowski::cuda::DeviceConvInfo info = minkowski::cuda::last_device_conv_call();
  const double pass = 2.0 * static_cast<double>(s.dev->pairs()) * static_cast<double>(c * c);
  const double flops = backward ? 2 * pass : pass;
  const double gemm_s = gemm_seconds(s, c, precision, backward, state.range(6), op);
  report_flops(state, flops);
  state.counters["gemm_FLOPS"] = benchmark::Counter(flops / gemm_s);
  state.counters["of_gemm"] = benchmark::Counter(conv_s > 0 ? gemm_s / conv_s : 0.0);
  state.counters["launch_groups"] = static_cast<double>(info.groups);
  state.counters["gemm_calls"] = static_cast<double>(info.gemm_calls);
  // The cost model's view of this row's product (the input gradient's onto
  // by_in for backward rows; the weight gradient is gather's either way);
  // none for f64, which the model does not cover (implicit refuses it).
  if (info.implicit_refused == nullptr) {
    const minkowski::cuda::DataflowProblem problem =
        minkowski::cuda::dataflow_problem(*s.dev, backward, c, c, dtype_of(precision));
    const minkowski::cuda::DataflowCosts model = minkowski::cuda::dataflow_costs(problem);
    state.counters["model_gather_s"] = benchmark::Counter(model.gather_s);
    state.counters["model_implicit_s"] = benchmark::Counter(model.implicit_s);
    state.counters["tile_density"] =
        benchmark::Counter(problem.padded_slots > 0 ? static_cast<double>(s.dev->pairs()) /
                                                          static_cast<double>(problem.padded_slots)
                                                    : 0.0);
  }
  state.SetLabel(s.source + " " + precision_name(precision) + " " +
                 minkowski::cuda::name(info.dataflow) + (info.tensor_cores ? " mma" : ""));
}

// The rows, in two families under BM_DeviceConv's one name (so a filter
// reads them alike; google-benchmark warns past 100 rows a family):
// - dataflows, every C, precision and direction: gather-GEMM-scatter fused
//   (lazy sync off), implicit GEMM on FMA tiles (f32, bf16, f16: TF32 does
//   not apply to them) and on tensor cores (TF32, bf16, f16: FP32 has none);
//   the backward's weight gradient is gather-GEMM's; f64 gathers only. The
//   cost model's calibration product (88 rows).
// - ablations of the fused gather: per-offset (fused:0) and ME_LAZY_SYNC on
//   (lazy:1; not for f64), each beside the dataflows' fused lazy:0 row, at
//   C = 128 (18 rows), or at every C with --conv_ablations_at_every_width
//   (72 rows; scripts/gpu-check passes it).
constexpr int64_t kWidths[] = {32, 64, 128, 256};
constexpr int64_t kAblationWidth = 128;
constexpr int64_t kPrecisions[] = {kFp32, kTf32, kBf16, kFp16, kFp64};

void dataflow_rows(benchmark::internal::Benchmark* b) {
  for (int64_t c : kWidths)
    for (int64_t p : kPrecisions)
      for (int64_t backward : {0, 1}) {
        b->Args({c, p, 1, backward, 0, 0, 0});
        if (p == kFp64) continue;
        if (p != kTf32) b->Args({c, p, 1, backward, 0, 1, 0});
        if (p != kFp32) b->Args({c, p, 1, backward, 0, 2, 0});
      }
}

void ablation_rows(benchmark::internal::Benchmark* b, bool every_width) {
  for (int64_t c : kWidths) {
    if (!every_width && c != kAblationWidth) continue;
    for (int64_t p : kPrecisions)
      for (int64_t backward : {0, 1}) {
        if (p != kFp64) b->Args({c, p, 1, backward, 1, 0, 0});
        b->Args({c, p, 0, backward, 0, 0, 0});
      }
  }
}

// The grouped GEMMs (ME_CONV_GROUPED_GEMM) beside the fused gather's
// grouped:0 rows of the same C and precision: the forward grouped, the
// backward with its input gradient grouped (features) and with both
// gradients grouped (all), at a narrow and a wide C, f32 and bf16 (12 rows).
void grouped_rows(benchmark::internal::Benchmark* b) {
  for (int64_t c : {int64_t{32}, kAblationWidth})
    for (int64_t p : {kFp32, kBf16}) {
      b->Args({c, p, 1, 0, 0, 0, 1});
      b->Args({c, p, 1, 1, 0, 0, 1});
      b->Args({c, p, 1, 1, 0, 0, 2});
    }
}

benchmark::internal::Benchmark* register_conv_family() {
  return benchmark::RegisterBenchmark("BM_DeviceConv", BM_DeviceConv)
      ->ArgNames({"C", "precision", "fused", "backward", "lazy", "implicit", "grouped"})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

// Removes `flag` from argv; true when it was there.
bool take_flag(int& argc, char** argv, const std::string& flag) {
  const auto end = std::remove_if(argv + 1, argv + argc, [&](const char* a) { return a == flag; });
  const bool found = end != argv + argc;
  argc = static_cast<int>(end - argv);
  return found;
}

}  // namespace

int main(int argc, char** argv) {
  const bool every_width = take_flag(argc, argv, "--conv_ablations_at_every_width");
  dataflow_rows(register_conv_family());
  ablation_rows(register_conv_family(), every_width);
  grouped_rows(register_conv_family());
  benchmark::AddCustomContext("command",
                              "build/bin/minkowski_cuda_bench [--conv_ablations_at_every_width] "
                              "(scripts/gpu-check passes it)");
  benchmark::AddCustomContext("machine limits",
                              "each convolution row's cuBLAS GEMMs alone on staged buffers "
                              "(BM_DeviceConv's gemm_FLOPS, of_gemm), in the same run");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
