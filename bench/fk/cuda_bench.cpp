// GPU benchmarks of fk's CUDA backend, each beside the raw library call or
// copy that bounds it, in the same binary and on the same stream:
//   elementwise add of 2^24 f32 and a sum of 2^24 f32   vs a raw device-to-device cudaMemcpy
//   fk::matmul 4096^3 f32 (TF32 off/on), f16, bf16      vs raw cublasGemmEx, same types
//   rfftn + irfftn of 256^2 and 1024^2 f32              vs raw cuFFT R2C + C2R plans
// Each iteration is timed with CUDA events around it on the current stream
// (manual time), so it counts the device time of the work plus fk's host-side
// gaps between launches, including the sync after every op of the default
// policy (ME_LAZY_SYNC unset). Bandwidth rows count bytes read plus bytes
// written (bytes_per_second); GEMM rows report FLOPS (2 m n k per product).
// Without a usable device every benchmark reports an error and skips.
// Reproduce (on a GPU machine; scripts/gpu-check runs it):
//   cmake --build build --target fk_cuda_bench
//   build/bin/fk_cuda_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>

#include <cstdint>
#include <string>

#include "../cuda_event_timer.h"
#include "fk/cuda/runtime.h"
#include "fk/fk.h"

namespace {

using fk_bench::current_stream;
using fk_bench::EventTimer;
using fk_bench::skip_without_device;

const fk::Device kGpu = fk::cuda_device(0);

// False (and the benchmark stopped with the error's text) when e is an error.
bool cuda_ok(benchmark::State& state, cudaError_t e) {
  if (e == cudaSuccess) return true;
  state.SkipWithError(cudaGetErrorString(e));
  return false;
}

// Runs `body` once untimed (plans, handles and pool blocks are made on first
// use), then once per iteration between events. Stops with an error when the
// device reports one (body returns false, or a CUDA error is pending).
template <typename Body>
void run_timed(benchmark::State& state, Body&& body) {
  if (!body()) {
    state.SkipWithError("the warm-up call failed");
    return;
  }
  if (!cuda_ok(state, cudaStreamSynchronize(current_stream()))) return;
  EventTimer timer;
  for (auto _ : state) {
    timer.start();
    const bool ok = body();
    state.SetIterationTime(timer.stop_seconds());
    if (!ok) {
      state.SkipWithError("a timed call failed");
      break;
    }
  }
  cuda_ok(state, cudaGetLastError());
}

void report_bytes(benchmark::State& state, int64_t bytes_per_iteration) {
  state.SetBytesProcessed(state.iterations() * bytes_per_iteration);
}

void report_flops(benchmark::State& state, int64_t m, int64_t n, int64_t k) {
  const double flops =
      2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  state.counters["FLOPS"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

fk::Tensor device_uniform(const fk::Dims& shape, fk::DType dtype, uint64_t seed) {
  fk::Generator g(seed);
  return fk::uniform(shape, -1.0, 1.0, {fk::DType::F32, kGpu}, &g).to(dtype);
}

// --- bandwidth: elementwise add, sum, and the raw copy that bounds them ------

constexpr int64_t kStreamN = int64_t{1} << 24;

void BM_CudaAddF32_16M(benchmark::State& state) {
  if (skip_without_device(state)) return;
  fk::Tensor a = device_uniform({kStreamN}, fk::DType::F32, 1);
  fk::Tensor b = device_uniform({kStreamN}, fk::DType::F32, 2);
  run_timed(state, [&] {
    benchmark::DoNotOptimize(fk::add(a, b));
    return true;
  });
  report_bytes(state, 3 * 4 * kStreamN);  // two reads, one write
}
BENCHMARK(BM_CudaAddF32_16M)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_CudaSumF32_16M(benchmark::State& state) {
  if (skip_without_device(state)) return;
  fk::Tensor a = device_uniform({kStreamN}, fk::DType::F32, 3);
  run_timed(state, [&] {
    benchmark::DoNotOptimize(fk::sum(a));
    return true;
  });
  report_bytes(state, 4 * kStreamN);  // one read
}
BENCHMARK(BM_CudaSumF32_16M)->UseManualTime()->Unit(benchmark::kMicrosecond);

// The bandwidth reference: 2^24 f32 copied device to device (one read, one write).
void BM_CudaRawMemcpyD2D_16M(benchmark::State& state) {
  if (skip_without_device(state)) return;
  fk::Tensor src = device_uniform({kStreamN}, fk::DType::F32, 4);
  fk::Tensor dst = fk::empty({kStreamN}, {fk::DType::F32, kGpu});
  run_timed(state, [&] {
    return cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), 4 * kStreamN, cudaMemcpyDeviceToDevice,
                           current_stream()) == cudaSuccess;
  });
  report_bytes(state, 2 * 4 * kStreamN);
}
BENCHMARK(BM_CudaRawMemcpyD2D_16M)->UseManualTime()->Unit(benchmark::kMicrosecond);

// --- GEMM 4096^3: fk::matmul and raw cublasGemmEx ----------------------------

constexpr int64_t kGemmN = 4096;

// fk::matmul with the TF32 switch set as asked (restored afterwards).
void fk_matmul(benchmark::State& state, fk::DType dtype, bool tf32) {
  if (skip_without_device(state)) return;
  fk::Tensor a = device_uniform({kGemmN, kGemmN}, dtype, 5);
  fk::Tensor b = device_uniform({kGemmN, kGemmN}, dtype, 6);
  {
    const fk::KnobOverride switch_tf32("FK_ALLOW_TF32", tf32 ? "1" : "0");
    run_timed(state, [&] {
      benchmark::DoNotOptimize(fk::matmul(a, b));
      return true;
    });
  }
  report_flops(state, kGemmN, kGemmN, kGemmN);
}

// cublasGemmEx on its own handle (with the 32 MiB workspace fk gives its
// handle), the same data and compute types as fk uses: f32 accumulation.
void raw_gemm(benchmark::State& state, fk::DType dtype, cublasComputeType_t compute) {
  if (skip_without_device(state)) return;
  const cudaDataType_t data = dtype == fk::DType::F32   ? CUDA_R_32F
                              : dtype == fk::DType::F16 ? CUDA_R_16F
                                                        : CUDA_R_16BF;
  fk::Tensor a = device_uniform({kGemmN, kGemmN}, dtype, 5);
  fk::Tensor b = device_uniform({kGemmN, kGemmN}, dtype, 6);
  fk::Tensor c = fk::empty({kGemmN, kGemmN}, {dtype, kGpu});
  constexpr size_t kWorkspaceBytes = size_t{32} << 20;
  fk::Tensor workspace = fk::empty({int64_t{kWorkspaceBytes / 4}}, {fk::DType::I32, kGpu});
  cublasHandle_t h = nullptr;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
    state.SkipWithError("cublasCreate failed");
    return;
  }
  cublasSetStream(h, current_stream());
  cublasSetWorkspace(h, workspace.data_ptr(), kWorkspaceBytes);
  const float one = 1.0f, zero = 0.0f;
  const int n = static_cast<int>(kGemmN);
  // Row-major C = A B is column-major C^T = B^T A^T: B goes first, as in fk.
  run_timed(state, [&] {
    return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b.data_ptr(), data, n,
                        a.data_ptr(), data, n, &zero, c.data_ptr(), data, n, compute,
                        CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
  });
  cublasDestroy(h);
  report_flops(state, kGemmN, kGemmN, kGemmN);
}

void BM_CudaMatmulF32_4096(benchmark::State& state) {
  fk_matmul(state, fk::DType::F32, false);
}
void BM_CudaRawGemmF32_4096(benchmark::State& state) {
  raw_gemm(state, fk::DType::F32, CUBLAS_COMPUTE_32F);
}
void BM_CudaMatmulTF32_4096(benchmark::State& state) {
  fk_matmul(state, fk::DType::F32, true);
}
void BM_CudaRawGemmTF32_4096(benchmark::State& state) {
  raw_gemm(state, fk::DType::F32, CUBLAS_COMPUTE_32F_FAST_TF32);
}
void BM_CudaMatmulF16_4096(benchmark::State& state) {
  fk_matmul(state, fk::DType::F16, false);
}
void BM_CudaRawGemmF16_4096(benchmark::State& state) {
  raw_gemm(state, fk::DType::F16, CUBLAS_COMPUTE_32F);
}
void BM_CudaMatmulBF16_4096(benchmark::State& state) {
  fk_matmul(state, fk::DType::BF16, false);
}
void BM_CudaRawGemmBF16_4096(benchmark::State& state) {
  raw_gemm(state, fk::DType::BF16, CUBLAS_COMPUTE_32F);
}
BENCHMARK(BM_CudaMatmulF32_4096)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CudaRawGemmF32_4096)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CudaMatmulTF32_4096)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CudaRawGemmTF32_4096)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CudaMatmulF16_4096)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CudaRawGemmF16_4096)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CudaMatmulBF16_4096)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CudaRawGemmBF16_4096)->UseManualTime()->Unit(benchmark::kMillisecond);

// --- FFT: rfftn + irfftn round trip, and raw cuFFT R2C + C2R -----------------

// fk's round trip includes irfftn's 1/N scaling (the "backward" norm); the raw
// pair leaves its output unscaled.
void BM_CudaRfftnIrfftnF32(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const int64_t n = state.range(0);
  fk::Tensor x = device_uniform({n, n}, fk::DType::F32, 7);
  run_timed(state, [&] {
    benchmark::DoNotOptimize(fk::irfftn(fk::rfftn(x), {n, n}));
    return true;
  });
  state.SetItemsProcessed(state.iterations() * n * n);
}
BENCHMARK(BM_CudaRfftnIrfftnF32)
    ->Arg(256)
    ->Arg(1024)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void BM_CudaRawCufftR2CC2RF32(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const int n = static_cast<int>(state.range(0));
  fk::Tensor x = device_uniform({n, n}, fk::DType::F32, 7);
  fk::Tensor spectrum = fk::empty({n, n / 2 + 1}, {fk::DType::C64, kGpu});
  fk::Tensor y = fk::empty({n, n}, {fk::DType::F32, kGpu});
  cufftHandle r2c = 0, c2r = 0;
  if (cufftPlan2d(&r2c, n, n, CUFFT_R2C) != CUFFT_SUCCESS) {
    state.SkipWithError("cufftPlan2d (R2C) failed");
    return;
  }
  if (cufftPlan2d(&c2r, n, n, CUFFT_C2R) != CUFFT_SUCCESS) {
    cufftDestroy(r2c);
    state.SkipWithError("cufftPlan2d (C2R) failed");
    return;
  }
  cufftSetStream(r2c, current_stream());
  cufftSetStream(c2r, current_stream());
  auto* xr = static_cast<cufftReal*>(x.data_ptr());
  auto* sc = static_cast<cufftComplex*>(spectrum.data_ptr());
  auto* yr = static_cast<cufftReal*>(y.data_ptr());
  run_timed(state, [&] {
    return cufftExecR2C(r2c, xr, sc) == CUFFT_SUCCESS && cufftExecC2R(c2r, sc, yr) == CUFFT_SUCCESS;
  });
  cufftDestroy(r2c);
  cufftDestroy(c2r);
  state.SetItemsProcessed(state.iterations() * n * n);
}
BENCHMARK(BM_CudaRawCufftR2CC2RF32)
    ->Arg(256)
    ->Arg(1024)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::AddCustomContext("command", "build/bin/fk_cuda_bench (scripts/gpu-check)");
  benchmark::AddCustomContext(
      "machine limits",
      "raw cudaMemcpy D2D (BM_CudaRawMemcpy*), raw cublasGemmEx (BM_CudaRawGemm*) and raw cuFFT "
      "(BM_CudaRawCufft*) in the same run");
  cudaDeviceProp prop{};
  const bool has_device =
      fk::cuda::device_count() > 0 && cudaGetDeviceProperties(&prop, 0) == cudaSuccess;
  benchmark::AddCustomContext("cuda device", has_device ? std::string(prop.name) : "none usable");
  benchmark::AddCustomContext("fk_cuda archs", fk::cuda::archs());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
