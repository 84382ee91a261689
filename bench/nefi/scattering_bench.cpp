// Born / Rytov and Lippmann-Schwinger benchmarks (operators/scattering.h,
// operators/lippmann_schwinger.h). Run (one thread):
//   OMP_NUM_THREADS=1 build/bin/nefi_bench --benchmark_filter='Born|Lippmann'
//   BM_BornTables          the Hankel and phase tables of one resolution;
//   BM_BornForward/Adjoint one host application, f64, batch 1;
//   BM_LippmannSchwinger   the data generator on the supersampled grid;
// each at the smoke preset (arg 0: 32², 16 views × 64 receivers, LS on 64²)
// and the full one (arg 1: 96² over 8 um, 64 × 192, LS on 192²).
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "nefi/operators/lippmann_schwinger.h"
#include "nefi/operators/scattering.h"

namespace {

struct Preset {
  int64_t n;
  double extent;
  nefi::ScatteringGeometry geometry;
};

Preset preset(int64_t which) {
  if (which == 0) return {32, 4.0, {1.0, 1.0, 16, 64, 3.0, false}};
  return {96, 8.0, {1.0, 1.0, 64, 192, 6.0, false}};
}

// A Gaussian of contrast 0.02 and width D / 8 at the centre, point-sampled on m x m.
std::vector<double> blob(int64_t m, double D) {
  std::vector<double> v(m * m);
  const double h = D / m, s = D / 8;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j) {
      const double a = (i + 0.5) * h - D / 2, b = (j + 0.5) * h - D / 2;
      v[i * m + j] = 0.02 * std::exp(-(a * a + b * b) / (2 * s * s));
    }
  return v;
}

nefi::BornOperator born(const Preset& p) {
  return nefi::BornOperator(nefi::Domain({p.n, p.n}, {p.extent, p.extent}), p.geometry);
}

void BM_BornTables(benchmark::State& state) {
  const Preset p = preset(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(born(p));
}
BENCHMARK(BM_BornTables)->DenseRange(0, 1)->Unit(benchmark::kMillisecond);

void BM_BornForward(benchmark::State& state) {
  const Preset p = preset(state.range(0));
  const nefi::BornOperator op = born(p);
  const std::vector<double> chi = blob(p.n, p.extent);
  for (auto _ : state) benchmark::DoNotOptimize(op.project(chi, 1));
}
BENCHMARK(BM_BornForward)->DenseRange(0, 1)->Unit(benchmark::kMillisecond);

void BM_BornAdjoint(benchmark::State& state) {
  const Preset p = preset(state.range(0));
  const nefi::BornOperator op = born(p);
  const std::vector<double> data = op.project(blob(p.n, p.extent), 1);
  for (auto _ : state) benchmark::DoNotOptimize(op.adjoint(data, 1));
}
BENCHMARK(BM_BornAdjoint)->DenseRange(0, 1)->Unit(benchmark::kMillisecond);

void BM_LippmannSchwinger(benchmark::State& state) {
  const Preset p = preset(state.range(0));
  const int64_t m = 2 * p.n;  // the instances' supersample 2
  const std::vector<double> chi = blob(m, p.extent);
  for (auto _ : state)
    benchmark::DoNotOptimize(nefi::lippmann_schwinger(chi, m, p.extent, p.geometry, {}));
}
BENCHMARK(BM_LippmannSchwinger)->DenseRange(0, 1)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
