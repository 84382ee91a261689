// nefi heat operator benchmarks. Run (one thread, as the reference):
//   OMP_NUM_THREADS=1 build/bin/nefi_bench [--benchmark_filter=...]
// Reproduces ../shared/reference/nefi.md §7.2–§7.4:
//   BM_PaperStencil  64×64×16, 20 frames, K = 50, forward + adjoint, f32, at
//                    1 and 2 threads, flat / roll / flat + Chebyshev K = 20,
//                    with cell updates per second and the bandwidth they imply
//                    (36 B per cell update for the flat f32 sweep: 6 weights,
//                    c, the iterate read once and written once);
//   BM_SmokeOperator 16×16×6, 30 frames, Jacobi K = 20 / Chebyshev K = 13,
//                    forward + adjoint, with ops per application;
//   BM_StreamTriad   a[i] = b[i] + s c[i] over 3 × 32 MiB (the machine limit);
// and prints the saved-memory-by-grad-mode table (32×32×16, 20 steps, K = 50).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <vector>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "nefi/operators/heat/heat_operator.h"

namespace {

fk::Tensor uniform_alpha(const fk::Dims& s, double value) {
  return fk::full(s, value, {fk::DType::F32});
}

// One forward + adjoint (or unrolled) gradient of sum(apply(α)).
void forward_backward(const nefi::HeatOperator& op, const fk::Tensor& alpha) {
  fk::Tensor a = alpha.detach();
  a.set_requires_grad(true);
  fk::sum(op.apply(a)).backward();
  benchmark::DoNotOptimize(a.grad().data_ptr());
}

nefi::HeatConfig paper_config(const char* stencil, const char* solver, int64_t k) {
  nefi::HeatConfig c;  // extent 10×10×1, dt 0.05 (the paper's)
  c.n_frames = 20;
  c.stencil = stencil;
  c.solver = solver;
  c.jacobi_iters = k;
  return c;
}

// state.range(0): 0 flat Jacobi K=50, 1 roll Jacobi K=50, 2 flat Chebyshev K=20; range(1): threads.
void BM_PaperStencil(benchmark::State& state) {
  static const char* kStencil[] = {"flat", "roll", "flat"};
  static const char* kSolver[] = {"jacobi", "jacobi", "chebyshev"};
  static const int64_t kIters[] = {50, 50, 20};
  const int v = static_cast<int>(state.range(0));
  fk::set_num_threads(static_cast<int>(state.range(1)));
  const fk::Dims s{64, 64, 16};
  nefi::HeatOperator op(paper_config(kStencil[v], kSolver[v], kIters[v]), s);
  const fk::Tensor alpha = uniform_alpha(s, 0.15);
  forward_backward(op, alpha);  // warm the allocator and the team
  const auto before = fk::profile::counters();
  for (auto _ : state) forward_backward(op, alpha);
  const auto after = fk::profile::counters();
  const double updates = double(s.numel()) * 2 * 20 * kIters[v];
  state.counters["cell_updates/s"] =
      benchmark::Counter(updates * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["sweep_GB/s"] =
      benchmark::Counter(updates * 36 * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.counters["ops/apply"] = double(after.ops - before.ops) / state.iterations();
  state.counters["launches/apply"] = double(after.launches - before.launches) / state.iterations();
  state.SetLabel(std::string(kStencil[v]) + " " + kSolver[v] + " K=" + std::to_string(kIters[v]));
  fk::set_num_threads(1);
}
BENCHMARK(BM_PaperStencil)
    ->ArgsProduct({{0, 1, 2}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0)
    ->UseRealTime();

// state.range(0): 0 Jacobi K=20, 1 Chebyshev K=13, 2 roll Jacobi K=20.
void BM_SmokeOperator(benchmark::State& state) {
  const int v = static_cast<int>(state.range(0));
  fk::set_num_threads(1);
  nefi::HeatConfig c;
  c.n_frames = 30;
  c.dt = 0.1;
  c.flash.width_xy = 4.0;
  c.solver = v == 1 ? "chebyshev" : "jacobi";
  c.jacobi_iters = v == 1 ? 13 : 20;
  c.stencil = v == 2 ? "roll" : "flat";
  const fk::Dims s{16, 16, 6};
  nefi::HeatOperator op(c, s);
  const fk::Tensor alpha = uniform_alpha(s, 0.15);
  forward_backward(op, alpha);
  const auto before = fk::profile::counters();
  for (auto _ : state) forward_backward(op, alpha);
  const auto after = fk::profile::counters();
  state.counters["ops/apply"] = double(after.ops - before.ops) / state.iterations();
  state.SetLabel(c.stencil + " " + c.solver + " K=" + std::to_string(c.jacobi_iters));
}
BENCHMARK(BM_SmokeOperator)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_StreamTriad(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  fk::set_num_threads(threads);
  const int64_t n = int64_t(32) << 20 >> 3;  // 32 MiB of doubles per array
  std::vector<double> a(n), b(n, 1.0), c(n, 2.0);
  for (auto _ : state) {
    fk::parallel_for(0, n, 1 << 16, [&](int64_t lo, int64_t hi) {
      double* __restrict pa = a.data();
      const double* __restrict pb = b.data();
      const double* __restrict pc = c.data();
      for (int64_t i = lo; i < hi; ++i) pa[i] = pb[i] + 3.0 * pc[i];
    });
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] =
      benchmark::Counter(24.0 * n * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  fk::set_num_threads(1);
}
BENCHMARK(BM_StreamTriad)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// Saved tensors of one graph at 32×32×16, 20 steps, K = 50 (f32), like §7.4.
void print_memory_table() {
  fk::set_num_threads(1);
  const fk::Dims s{32, 32, 16};
  const double grid_bytes = double(s.numel()) * 4;
  std::printf(
      "\nSaved memory by grad_mode (32x32x16, 20 steps, K = 50, f32, per unique storage)\n");
  std::printf(
      "| grad_mode | stencil | MB | grids | saved tensors | nodes |\n|---|---|---|---|---|---|\n");
  struct Row {
    const char* mode;
    const char* stencil;
  };
  for (Row r : {Row{"adjoint", "flat"}, Row{"checkpoint", "flat"}, Row{"autograd", "flat"},
                Row{"autograd", "roll"}}) {
    nefi::HeatConfig c = paper_config(r.stencil, "jacobi", 50);
    c.grad_mode = r.mode;
    nefi::HeatOperator op(c, s);
    fk::Tensor a = uniform_alpha(s, 0.15);
    a.set_requires_grad(true);
    const auto st = fk::autograd::saved_stats(op.apply(a));
    std::printf("| %s | %s | %.1f | %.0f | %lld | %lld |\n", r.mode, r.stencil, st.bytes / 1e6,
                st.bytes / grid_bytes, static_cast<long long>(st.tensors),
                static_cast<long long>(st.nodes));
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::AddCustomContext("command", "OMP_NUM_THREADS=1 build/bin/nefi_bench");
  benchmark::AddCustomContext("machine limit",
                              "BM_StreamTriad (memory bandwidth) in the same run; compare "
                              "BM_PaperStencil's sweep_GB/s");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  print_memory_table();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
