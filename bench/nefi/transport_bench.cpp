// The advection-diffusion operator's substep (a CSR product over the 2-D
// stencil plus the Euler update), beside BM_StreamTriad (heat_bench.cpp,
// same binary): GB/s counts what one substep must move at least, per cell
// the row start (8 B), 5 entries of column and weight (60 B), the state read
// once and written once (16 B): 84 B. The CSR form reads ~4x a constant
// coefficient stencil's traffic; what it buys is one kernel for any flow
// field and boundary mix, and an exact transpose.
//   BM_AdvectionDiffusionSubstep/n/threads/rows/scheme  n x n cells, a swirling
//                                           flow per cell, forward only, a
//                                           batch of `rows` releases (8 step
//                                           together, reading the stencil
//                                           once): GB/s counts 84 B per cell
//                                           and row, as if each row streamed
//                                           alone, so rows 8 over rows 1 is
//                                           what sharing the stencil buys;
//                                           scheme 1 Lax-Wendroff (two 1-D
//                                           factors a substep of 3 entries a
//                                           row: 120 B a cell), 0 upwind;
//                                           per_substep compares the two
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "fk/factory.h"
#include "fk/parallel.h"
#include "nefi/operators/advection_diffusion.h"

namespace {

void BM_AdvectionDiffusionSubstep(benchmark::State& state) {
  const int64_t n = state.range(0), rows = state.range(2);
  const bool lax_wendroff = state.range(3) == 1;
  fk::set_num_threads(static_cast<int>(state.range(1)));
  std::vector<double> u(n * n), w(n * n), c(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double x = (i + 0.5) / n - 0.5, z = (j + 0.5) / n - 0.5;
      u[i * n + j] = std::sin(3 * z) + 0.2;
      w[i * n + j] = x - 0.1;
      c[i * n + j] = std::exp(-20 * (x * x + z * z));
    }
  nefi::AdvectionDiffusionOptions o;
  o.velocity = {fk::from_vector(u, {n, n}), fk::from_vector(w, {n, n})};
  o.diffusivity = 1e-4;
  o.scheme = lax_wendroff ? nefi::TransportScheme::kLaxWendroff : nefi::TransportScheme::kUpwind;
  // Time for 20 equal substeps, each 0.975 of the bound.
  nefi::AdvectionDiffusionOptions probe = o;
  probe.times = {1.0};
  const double tau = nefi::AdvectionDiffusionOperator(nefi::Domain({n, n}), probe).stable_substep();
  o.times = {19.5 * tau};
  const nefi::AdvectionDiffusionOperator op(nefi::Domain({n, n}), o);
  const int64_t substeps = op.substeps()[0];
  std::vector<double> batch;
  for (int64_t r = 0; r < rows; ++r) batch.insert(batch.end(), c.begin(), c.end());
  for (auto _ : state) benchmark::DoNotOptimize(op.forward_rows(batch, rows).data());
  const double cells = static_cast<double>(n * n) * rows * substeps * state.iterations();
  state.counters["substeps"] = static_cast<double>(substeps);
  // Upwind's one pass of 5 entries a row; Lax-Wendroff's two of 3 (8 + 36 +
  // 16 B each).
  state.counters["GB/s"] =
      benchmark::Counter((lax_wendroff ? 120.0 : 84.0) * cells / 1e9, benchmark::Counter::kIsRate);
  state.counters["per_substep"] =  // printed as a time
      benchmark::Counter(static_cast<double>(substeps * state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  fk::set_num_threads(1);
}
BENCHMARK(BM_AdvectionDiffusionSubstep)
    ->Args({256, 1, 1, 0})
    ->Args({256, 1, 8, 0})
    ->Args({1024, 1, 1, 0})
    ->Args({1024, 2, 1, 0})
    ->Args({1024, 1, 8, 0})
    ->Args({1024, 1, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
