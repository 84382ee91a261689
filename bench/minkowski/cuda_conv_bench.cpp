// GPU benchmarks of minkowski's device convolution (minkowski_cuda) on a
// 100k-voxel indoor scene: the device kernel-map build, and the forward and
// backward of a 3x3x3 submanifold convolution at C_in = C_out = C in
// {32, 64, 128, 256}, fused (one gather and scatter per group of offsets)
// against per-offset (ME_FUSED_COPY=0), beside the convolution's cuBLAS
// GEMMs alone on the same staged shapes (the bound the copies add to).
// f32 with TF32 off; atomics (set_deterministic off). Each iteration is timed
// with CUDA events on the current stream (manual time), including the host
// gaps and the sync at the end of each op (ME_LAZY_SYNC unset). FLOPS count
// 2 x pairs x C_in x C_out per pass (the backward's two GEMMs: twice that).
// Scene: $MINKOWSKI_CUDA_BENCH_SCENE, else ../shared/data/indoor_scene_100k.npy
// or /work/shared/data/indoor_scene_100k.npy when present, else the synthetic
// 100k scene of `minkowski bench conv --points 100000`; the label names it.
// Without a usable device every benchmark reports an error and skips.
// Reproduce (on a GPU machine; scripts/gpu-check runs it):
//   cmake --build build --target minkowski_cuda_bench && build/bin/minkowski_cuda_bench
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../../apps/minkowski/scene.h"
#include "fk/cuda/blas.h"
#include "fk/cuda/kernels.h"
#include "fk/cuda/runtime.h"
#include "fk/fk.h"
#include "minkowski/cuda/device_conv.h"
#include "minkowski/cuda/device_kernel_map.h"
#include "minkowski/minkowski.h"

namespace {

const fk::Device kGpu = fk::cuda_device(0);

bool skip_without_device(benchmark::State& state) {
  if (fk::cuda::device_count() > 0) return false;
  state.SkipWithError("no usable CUDA device");
  return true;
}

cudaStream_t current_stream() {
  return static_cast<cudaStream_t>(fk::cuda::current_stream(0));
}

// Times each iteration with a pair of events on the current stream, after
// one untimed warm-up call.
template <typename Body>
void run_timed(benchmark::State& state, Body&& body) {
  body();
  cudaStreamSynchronize(current_stream());
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (auto _ : state) {
    cudaEventRecord(start, current_stream());
    body();
    cudaEventRecord(stop, current_stream());
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    state.SetIterationTime(static_cast<double>(ms) * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) state.SkipWithError(cudaGetErrorString(e));
}

struct Scene {
  std::string source;
  std::shared_ptr<minkowski::CoordinateMap> map;
  std::vector<int32_t> offsets;
  std::optional<minkowski::cuda::DeviceKernelMap> dev;
};

std::string scene_path() {
  if (const char* p = std::getenv("MINKOWSKI_CUDA_BENCH_SCENE")) return p;
  for (const char* p :
       {"../shared/data/indoor_scene_100k.npy", "/work/shared/data/indoor_scene_100k.npy"})
    if (std::filesystem::exists(p)) return p;
  return "";
}

Scene& scene() {
  static Scene s = [] {
    Scene r;
    const std::string path = scene_path();
    std::vector<int32_t> rows;
    if (path.empty()) {
      rows = minkowski_app::synthetic_scene(100000).rows;
      r.source = "synthetic(100000)";
    } else {
      rows = minkowski_app::read_scene(path);
      r.source = path;
    }
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

struct ConvOperands {
  fk::Tensor f, w, g;
};
ConvOperands conv_operands(const Scene& s, int64_t c) {
  fk::Generator gen(7);
  const fk::TensorOptions o{fk::DType::F32, kGpu};
  return {fk::uniform({s.map->size(), c}, -1, 1, o, &gen),
          fk::uniform({27, c, c}, -0.03, 0.03, o, &gen),
          fk::uniform({s.map->size(), c}, -1, 1, o, &gen)};
}

// Args: C, fused (1) or per-offset (0); backward (1) or forward (0).
void BM_DeviceConv(benchmark::State& state) {
  if (skip_without_device(state)) return;
  fk::amp::set_allow_tf32(false);
  Scene& s = scene();
  const int64_t c = state.range(0);
  const bool fused = state.range(1) != 0, backward = state.range(2) != 0;
  fk::mutable_knob("ME_FUSED_COPY").set_override(fused ? "1" : "0");
  const ConvOperands op = conv_operands(s, c);
  if (backward)
    run_timed(state, [&] { minkowski::cuda::conv_backward(op.g, op.f, op.w, *s.dev, true, true); });
  else
    run_timed(state, [&] { minkowski::cuda::conv_forward(op.f, op.w, *s.dev); });
  fk::mutable_knob("ME_FUSED_COPY").set_override(std::nullopt);
  const double flops = 2.0 * static_cast<double>(s.dev->pairs()) * static_cast<double>(c * c);
  report_flops(state, backward ? 2 * flops : flops);
  state.counters["launch_groups"] =
      static_cast<double>(minkowski::cuda::last_device_conv_call().groups);
  state.SetLabel(s.source);
}
BENCHMARK(BM_DeviceConv)
    ->ArgsProduct({{32, 64, 128, 256}, {1, 0}, {0, 1}})
    ->ArgNames({"C", "fused", "backward"})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// The forward's GEMMs alone: one cuBLAS call per offset on staged buffers of
// the map's shapes (no gather, no scatter).
void BM_DeviceConvGemmsOnly(benchmark::State& state) {
  if (skip_without_device(state)) return;
  fk::amp::set_allow_tf32(false);
  Scene& s = scene();
  const int64_t c = state.range(0), P = s.dev->pairs();
  const ConvOperands op = conv_operands(s, c);
  const fk::Tensor a = fk::zeros({P, c}, {fk::DType::F32, kGpu}), out = fk::zeros_like(a);
  run_timed(state, [&] {
    for (int64_t k = 0; k < s.dev->volume; ++k) {
      const int64_t n = s.dev->count(k), p = s.dev->offset_begin[k];
      if (n == 0) continue;
      fk::cuda::gemm(0, fk::cuda::kF32, false, false, n, c, c, 1.0, a.data<float>() + p * c, c,
                     op.w.data<float>() + k * c * c, c, 0.0, out.data<float>() + p * c, c,
                     current_stream(), false);
    }
  });
  report_flops(state, 2.0 * static_cast<double>(P) * static_cast<double>(c * c));
  state.SetLabel(s.source);
}
BENCHMARK(BM_DeviceConvGemmsOnly)
    ->Arg(32)
    ->Arg(64)
    ->Arg(128)
    ->Arg(256)
    ->ArgName("C")
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
