// GEMM benchmarks: fk::matmul against raw cblas_sgemm (OpenBLAS) on the same
// shapes, so the ratio is fk's overhead (checks, allocation, dispatch, the
// skinny row split) and, for f16/bf16, the cost of converting in bulk.
// Reproduce:
//   cmake --build build/h -j2 --target fk_bench
//   build/h/bin/fk_bench --benchmark_filter='Gemm|Matmul' --benchmark_repetitions=5
//   (add --benchmark_report_aggregates_only=true for the summary rows only)
// Machine limit (../shared/reference/machine.md, OPENBLAS_CORETYPE=Haswell):
// sgemm 1024^3 ~124 GFLOP/s on 1 thread; 100000x64·64x64 ~76 (1 thread) and
// ~220 with rows split over 2 threads. One thread unless the name says threads.
// Single-thread rates are per CPU second (robust when the machine is shared);
// the threads:N runs are timed by the wall clock.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <vector>

#include "fk/fk.h"

namespace {

void report_flops(benchmark::State& state, int64_t m, int64_t n, int64_t k) {
  double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  state.counters["GFLOPS"] = benchmark::Counter(
      flops * 1e-9 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

fk::Tensor operand(int64_t rows, int64_t cols, unsigned seed) {
  // Any values will do; fk's own generator keeps this free of test helpers.
  fk::Generator g(seed);
  return fk::uniform({rows, cols}, -1.0, 1.0, {}, &g);
}

// With --benchmark_repetitions, also reports the best repetition ("_max": the
// highest GFLOPS), the least disturbed by other work on a shared machine.
void best_of(benchmark::internal::Benchmark* b) {
  b->ComputeStatistics(
      "max", [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); });
}

void raw_sgemm(benchmark::State& state, int64_t m, int64_t n, int64_t k, int threads) {
  fk::set_num_threads(threads);  // also sets OpenBLAS's thread count
  fk::Tensor a = operand(m, k, 1), b = operand(k, n, 2), c = fk::empty({m, n});
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, a.data<float>(), static_cast<int>(k), b.data<float>(),
                static_cast<int>(n), 0.0f, c.data<float>(), static_cast<int>(n));
    benchmark::ClobberMemory();
  }
  report_flops(state, m, n, k);
}

void fk_matmul(benchmark::State& state, int64_t m, int64_t n, int64_t k, int threads,
               fk::DType dtype) {
  fk::set_num_threads(threads);
  fk::Tensor a = operand(m, k, 1).to(dtype), b = operand(k, n, 2).to(dtype);
  for (auto _ : state) benchmark::DoNotOptimize(fk::matmul(a, b));
  report_flops(state, m, n, k);
}

void BM_GemmRawF32_1024(benchmark::State& state) {
  raw_sgemm(state, 1024, 1024, 1024, 1);
}
BENCHMARK(BM_GemmRawF32_1024)->Unit(benchmark::kMillisecond)->Apply(best_of);

void BM_MatmulF32_1024(benchmark::State& state) {
  fk_matmul(state, 1024, 1024, 1024, 1, fk::DType::F32);
}
BENCHMARK(BM_MatmulF32_1024)->Unit(benchmark::kMillisecond)->Apply(best_of);

void BM_MatmulF16_1024(benchmark::State& state) {
  fk_matmul(state, 1024, 1024, 1024, 1, fk::DType::F16);
}
BENCHMARK(BM_MatmulF16_1024)->Unit(benchmark::kMillisecond)->Apply(best_of);

void BM_MatmulBF16_1024(benchmark::State& state) {
  fk_matmul(state, 1024, 1024, 1024, 1, fk::DType::BF16);
}
BENCHMARK(BM_MatmulBF16_1024)->Unit(benchmark::kMillisecond)->Apply(best_of);

// Sparse convolution's shape: tall and skinny, memory-bound.
void BM_GemmRawF32_Skinny(benchmark::State& state) {
  raw_sgemm(state, 100000, 64, 64, 1);
}
BENCHMARK(BM_GemmRawF32_Skinny)->Unit(benchmark::kMillisecond)->Apply(best_of);

void BM_MatmulF32_Skinny(benchmark::State& state) {
  fk_matmul(state, 100000, 64, 64, 1, fk::DType::F32);
}
BENCHMARK(BM_MatmulF32_Skinny)->Unit(benchmark::kMillisecond)->Apply(best_of);

void BM_GemmRawF32_Skinny_2threads(benchmark::State& state) {
  raw_sgemm(state, 100000, 64, 64, 2);
}
BENCHMARK(BM_GemmRawF32_Skinny_2threads)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Apply(best_of);

void BM_MatmulF32_Skinny_2threads(benchmark::State& state) {
  fk_matmul(state, 100000, 64, 64, 2, fk::DType::F32);
}
BENCHMARK(BM_MatmulF32_Skinny_2threads)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Apply(best_of);

// Per-op overhead: a product small enough that checks, allocation and the
// BLAS call's setup dominate.
void BM_MatmulF32_16(benchmark::State& state) {
  fk_matmul(state, 16, 16, 16, 1, fk::DType::F32);
}
BENCHMARK(BM_MatmulF32_16)->Apply(best_of);

void BM_GemmRawF32_16(benchmark::State& state) {
  raw_sgemm(state, 16, 16, 16, 1);
}
BENCHMARK(BM_GemmRawF32_16)->Apply(best_of);

}  // namespace
