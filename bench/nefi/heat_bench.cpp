// nefi heat operator benchmarks. Run (one thread, as the reference):
//   OMP_NUM_THREADS=1 build/bin/nefi_bench [--benchmark_filter=...]
// Reproduces ../shared/reference/nefi.md §7.2–§7.4:
//   BM_PaperStencil  64×64×16, 20 frames, K = 50, forward + adjoint, f32, at
//                    1 and 2 threads, flat / roll / flat + Chebyshev K = 20,
//                    with cell updates per second and the bandwidth they imply
//                    (24 B per cell update for the graph-free flat f32 sweep:
//                    3 face weights, c, the iterate read once and written once);
//   BM_Sweep         one sweep at 64×64×16 f32 per backend, with ops and
//                    launches per sweep (graph-free flat, the differentiable
//                    flat node, the roll reference);
//   BM_SmokeOperator 16×16×6, 30 frames, Jacobi K = 20 / Chebyshev K = 13,
//                    forward + adjoint, with ops per application;
//   BM_StreamTriad   a[i] = b[i] + s c[i] over 3 × 32 MiB (the machine limit);
// and prints the saved-memory-by-grad-mode table (32×32×16, 20 steps, K = 50)
// and Jacobi K = 50's error against CG at the paper config.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "nefi/operators/heat/flat_stencil.h"
#include "nefi/operators/heat/heat_operator.h"
#include "nefi/operators/heat/inner_solvers.h"

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

// state.range(0): 0 flat Jacobi K=50, 1 roll Jacobi K=50, 2 flat Chebyshev K=20,
// 3 flat CG (cg_tol 1e-6); range(1): threads.
void BM_PaperStencil(benchmark::State& state) {
  static const char* kStencil[] = {"flat", "roll", "flat", "flat"};
  static const char* kSolver[] = {"jacobi", "jacobi", "chebyshev", "cg"};
  static const int64_t kIters[] = {50, 50, 20, 1};  // K is unused by CG
  const int v = static_cast<int>(state.range(0));
  fk::set_num_threads(static_cast<int>(state.range(1)));
  const fk::Dims s{64, 64, 16};
  nefi::HeatOperator op(paper_config(kStencil[v], kSolver[v], kIters[v]), s);
  const fk::Tensor alpha = uniform_alpha(s, 0.15);
  forward_backward(op, alpha);  // warm the allocator and the team
  const auto before = fk::profile::counters();
  for (auto _ : state) forward_backward(op, alpha);
  const auto after = fk::profile::counters();
  const double updates = double(s.numel()) * 2 * 20 * kIters[v];  // sweeps (not for CG)
  if (v != 3)  // CG's iteration count varies per step
    state.counters["cell_updates/s"] =
        benchmark::Counter(updates * state.iterations(), benchmark::Counter::kIsRate);
  if (v == 0 || v == 2)  // the graph-free flat sweep's traffic; roll moves ~12 grids per sweep
    state.counters["sweep_GB/s"] =
        benchmark::Counter(updates * 24 * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.counters["ops/apply"] = double(after.ops - before.ops) / state.iterations();
  state.counters["launches/apply"] = double(after.launches - before.launches) / state.iterations();
  state.SetLabel(std::string(kStencil[v]) + " " + kSolver[v] +
                 (v == 3 ? " tol=1e-6" : " K=" + std::to_string(kIters[v])));
  fk::set_num_threads(1);
}
BENCHMARK(BM_PaperStencil)
    ->ArgsProduct({{0, 1, 2, 3}, {1, 2}})
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

// state.range(0): 0 graph-free flat (FlatSweeper), 1 differentiable flat op, 2 roll.
void BM_Sweep(benchmark::State& state) {
  const int v = static_cast<int>(state.range(0));
  fk::set_num_threads(static_cast<int>(state.range(1)));
  // range(2): 0 the paper grid, 1 the smoke grid (16×16×6, where per-op overhead shows).
  const nefi::heat::StepGeometry g =
      state.range(2) == 0
          ? nefi::heat::StepGeometry{64, 64, 16, 10.0 / 64, 10.0 / 64, 1.0 / 16, 0.05, 0}
          : nefi::heat::StepGeometry{16, 16, 6, 10.0 / 16, 10.0 / 16, 1.0 / 6, 0.1, 0};
  const fk::Tensor alpha = uniform_alpha(g.shape(), 0.15);
  const auto sys = nefi::heat::build_system(alpha, g);
  const fk::Tensor x = fk::ones(g.shape()), c = fk::ones(g.shape());
  nefi::heat::FlatSweeper sweeper(sys, g);
  sweeper.load(x);
  sweeper.set_rhs(c);
  const auto before = fk::profile::counters();
  for (auto _ : state) {
    if (v == 0)
      sweeper.jacobi(1);
    else if (v == 1)
      benchmark::DoNotOptimize(nefi::heat::flat_sweep(x, c, sys.weights, g).data_ptr());
    else
      benchmark::DoNotOptimize(nefi::heat::roll_sweep(x, c, sys.weights).data_ptr());
  }
  const auto after = fk::profile::counters();
  static const char* kName[] = {"flat (graph-free)", "flat (differentiable op)", "roll"};
  state.SetLabel(std::string(kName[v]) + (state.range(2) == 0 ? " 64x64x16" : " 16x16x6"));
  state.counters["ops/sweep"] = double(after.ops - before.ops) / state.iterations();
  state.counters["launches/sweep"] = double(after.launches - before.launches) / state.iterations();
  state.counters["cell_updates/s"] =
      benchmark::Counter(double(g.numel()) * state.iterations(), benchmark::Counter::kIsRate);
  fk::set_num_threads(1);
}
BENCHMARK(BM_Sweep)
    ->ArgsProduct({{0, 1, 2}, {1, 2}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

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

// Jacobi K = 50 against CG at 1e-13 at the paper config (64×64×16, Δt 0.05,
// 100 frames, α = 0.15, f64), like the reference's 3.0e-6 on the first
// post-flash step and 3.0e-5 accumulated over 100 frames.
void print_jacobi_accuracy() {
  fk::set_num_threads(1);
  const fk::Dims s{64, 64, 16};
  nefi::HeatConfig c;
  c.n_frames = 100;
  nefi::HeatConfig exact = c;
  exact.solver = "cg";
  exact.cg_tol = 1e-13;
  exact.cg_max_iter = 1000;
  const fk::Tensor alpha = fk::full(s, 0.15, {fk::DType::F64});
  const auto a = nefi::HeatOperator(c, s).simulate(alpha).to_vector<double>();
  const auto b = nefi::HeatOperator(exact, s).simulate(alpha).to_vector<double>();
  const int64_t grid = s.numel();
  auto rel = [&](int64_t f) {
    double num = 0, den = 0;
    for (int64_t i = f * grid; i < (f + 1) * grid; ++i) {
      num += (a[i] - b[i]) * (a[i] - b[i]);
      den += b[i] * b[i];
    }
    return std::sqrt(num / den);
  };
  std::printf(
      "Jacobi K = 50 vs CG 1e-13 (64x64x16, dt 0.05, alpha 0.15, f64): relative error "
      "%.1e at frame 1, %.1e at frame 100\n\n",
      rel(1), rel(100));
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
  print_jacobi_accuracy();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
