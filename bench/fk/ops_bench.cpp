// fk op benchmarks. Run: build/bin/fk_bench
#include <benchmark/benchmark.h>

#include "fk/fk.h"

namespace {

void BM_AddSmall(benchmark::State& state) {
  fk::set_num_threads(1);
  fk::Tensor a = fk::ones({16}), b = fk::ones({16});
  for (auto _ : state) benchmark::DoNotOptimize(fk::add(a, b));
}
BENCHMARK(BM_AddSmall);

void BM_AddSmallBackward(benchmark::State& state) {
  fk::set_num_threads(1);
  fk::Tensor a = fk::ones({16}).set_requires_grad(true), b = fk::ones({16}).set_requires_grad(true);
  fk::Tensor seed = fk::ones({16});
  for (auto _ : state) fk::add(a, b).backward(seed);
}
BENCHMARK(BM_AddSmallBackward);

}  // namespace

int main(int argc, char** argv) {
  benchmark::AddCustomContext("command", "build/bin/fk_bench (make bench)");
  benchmark::AddCustomContext(
      "machine limits", "raw cblas_sgemm (BM_GemmRaw*) and raw FFTW (BM_Fftw*) in the same run");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
