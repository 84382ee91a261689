// fk elementwise-class op benchmarks, each beside a plain C loop that moves the
// same bytes in the same run, so the ratio fk/loop is the figure (it survives a
// shared machine better than either time alone). Sizes: 65,536 f32 elements
// (64x64x16, 256 KiB per operand: L2-resident) and 1,048,576 (256x256x16,
// 4 MiB: L3). Second argument: threads (fk::set_num_threads; the loops use an
// OpenMP team of that size). GB/s counts every operand read plus the result
// written once.
// Reproduce:
//   cmake --build build/h -j2 --target fk_bench
//   build/h/bin/fk_bench --benchmark_filter='Ew' --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true   (one line)
// Machine limit (../shared/reference/machine.md, triad): ~160 / 300 GB/s in
// L1/L2 and ~110 / 210 GB/s in L3 on 1 / 2 threads. Rates are per wall second.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cmath>
#include <cstring>

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

// --- elementwise class: fk op vs plain loop -----------------------------------

fk::Dims grid(int64_t n) {
  return n == 65536 ? fk::Dims{64, 64, 16} : fk::Dims{n / (64 * 16), 64, 16};
}

fk::Tensor operand(const fk::Dims& shape, unsigned seed) {
  fk::Generator g(seed);
  return fk::uniform(shape, 0.5, 1.5, {}, &g);
}

void report(benchmark::State& state, int64_t n, int operands) {
  state.SetBytesProcessed(state.iterations() * n * operands * static_cast<int64_t>(sizeof(float)));
}

// Sets the thread count for both fk and the plain loops, and returns it.
int threads_of(benchmark::State& state) {
  int t = static_cast<int>(state.range(1));
  fk::set_num_threads(t);
  return t;
}

// A plain OpenMP loop over [0, n) with `threads` threads (one thread: no team).
template <typename F>
void plain_for(int64_t n, int threads, const F& body) {
  if (threads == 1) return body(int64_t{0}, n);
#pragma omp parallel num_threads(threads)
  {
    int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    body(n * t / nt, n * (t + 1) / nt);
  }
}

void args(benchmark::internal::Benchmark* b) {
  b->ArgsProduct({{65536, 1048576}, {1, 2}})->ArgNames({"n", "threads"})->UseRealTime();
}

// Fk: the op as nefi calls it (fresh result each call, from the caching allocator).
// Loop: the same arithmetic into a preallocated result.
#define FK_EW_PAIR(Name, operands, fk_expr, loop_body)                                       \
  void BM_Ew##Name##_Fk(benchmark::State& state) {                                           \
    int64_t n = state.range(0);                                                              \
    threads_of(state);                                                                       \
    fk::Tensor a = operand(grid(n), 1), b = operand(grid(n), 2), c = operand(grid(n), 3);    \
    for (auto _ : state) benchmark::DoNotOptimize(fk_expr);                                  \
    report(state, n, operands);                                                              \
  }                                                                                          \
  BENCHMARK(BM_Ew##Name##_Fk)->Apply(args);                                                  \
  void BM_Ew##Name##_Loop(benchmark::State& state) {                                         \
    int64_t n = state.range(0);                                                              \
    int threads = threads_of(state);                                                         \
    fk::Tensor ta = operand(grid(n), 1), tb = operand(grid(n), 2), tc = operand(grid(n), 3), \
               to = fk::empty(grid(n));                                                      \
    const float *a = ta.data<float>(), *b = tb.data<float>(), *c = tc.data<float>();         \
    float* o = to.data<float>();                                                             \
    (void)a, (void)b, (void)c;                                                               \
    for (auto _ : state) {                                                                   \
      plain_for(n, threads, [&](int64_t lo, int64_t hi) {                                    \
        for (int64_t i = lo; i < hi; ++i) loop_body;                                         \
      });                                                                                    \
      benchmark::ClobberMemory();                                                            \
    }                                                                                        \
    report(state, n, operands);                                                              \
  }                                                                                          \
  BENCHMARK(BM_Ew##Name##_Loop)->Apply(args)

FK_EW_PAIR(Add, 3, fk::add(a, b), o[i] = a[i] + b[i]);
FK_EW_PAIR(Mul, 3, fk::mul(a, b), o[i] = a[i] * b[i]);
FK_EW_PAIR(Addcmul, 4, fk::addcmul(a, b, c, 0.5), o[i] = a[i] + 0.5f * b[i] * c[i]);
FK_EW_PAIR(Exp, 2, fk::exp(a), o[i] = std::exp(a[i]));
FK_EW_PAIR(Tanh, 2, fk::tanh(a), o[i] = std::tanh(a[i]));
// The loop for a transposed copy is a straight copy: the floor of its traffic.
FK_EW_PAIR(ContiguousT, 2, fk::contiguous(a.reshape({n / 256, 256}).t()), o[i] = a[i]);
// Same arithmetic in place: no result to allocate.
FK_EW_PAIR(AddcmulInplace, 4, fk::addcmul_(a, b, c, 1e-30), o[i] = o[i] + 1e-30f * b[i] * c[i]);

// roll along one dim (0 or the last) and along two dims, as nefi's heat
// reference stencil calls it; the loop copies the same bytes as runs.
void roll_loop(benchmark::State& state, int64_t rows, int64_t row_len, int64_t shift) {
  int64_t n = state.range(0);
  int threads = threads_of(state);
  fk::Tensor ta = operand(grid(n), 1), to = fk::empty(grid(n));
  const float* a = ta.data<float>();
  float* o = to.data<float>();
  for (auto _ : state) {
    plain_for(rows, threads, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const float* s = a + r * row_len;
        float* d = o + r * row_len;
        std::memcpy(d + shift, s, sizeof(float) * (row_len - shift));
        std::memcpy(d, s + row_len - shift, sizeof(float) * shift);
      }
    });
    benchmark::ClobberMemory();
  }
  report(state, n, 2);
}
void roll_fk(benchmark::State& state, std::vector<int64_t> shifts, std::vector<int64_t> dims) {
  int64_t n = state.range(0);
  threads_of(state);
  fk::Tensor a = operand(grid(n), 1);
  for (auto _ : state) benchmark::DoNotOptimize(fk::roll(a, shifts, dims));
  report(state, n, 2);
}
void BM_EwRollDim0_Fk(benchmark::State& state) {
  roll_fk(state, {1}, {0});
}
void BM_EwRollDim0_Loop(benchmark::State& state) {
  roll_loop(state, 1, state.range(0), 64 * 16);
}
void BM_EwRollLast_Fk(benchmark::State& state) {
  roll_fk(state, {1}, {2});
}
void BM_EwRollLast_Loop(benchmark::State& state) {
  roll_loop(state, state.range(0) / 16, 16, 1);
}
void BM_EwRoll2d_Fk(benchmark::State& state) {
  roll_fk(state, {1, 1}, {0, 1});
}
void BM_EwRoll2d_Loop(benchmark::State& state) {
  roll_loop(state, 1, state.range(0), 64 * 16 + 16);  // same bytes in two runs
}
BENCHMARK(BM_EwRollDim0_Fk)->Apply(args);
BENCHMARK(BM_EwRollDim0_Loop)->Apply(args);
BENCHMARK(BM_EwRollLast_Fk)->Apply(args);
BENCHMARK(BM_EwRollLast_Loop)->Apply(args);
BENCHMARK(BM_EwRoll2d_Fk)->Apply(args);
BENCHMARK(BM_EwRoll2d_Loop)->Apply(args);

// Full sum: the loop keeps 8 partial sums so it vectorises without -ffast-math.
void BM_EwSum_Fk(benchmark::State& state) {
  int64_t n = state.range(0);
  threads_of(state);
  fk::Tensor a = operand(grid(n), 1);
  for (auto _ : state) benchmark::DoNotOptimize(fk::sum(a));
  report(state, n, 1);
}
void BM_EwSum_Loop(benchmark::State& state) {
  int64_t n = state.range(0);
  int threads = threads_of(state);
  fk::Tensor ta = operand(grid(n), 1);
  const float* a = ta.data<float>();
  for (auto _ : state) {
    float part[2] = {0, 0};
    plain_for(n, threads, [&](int64_t lo, int64_t hi) {
      float acc[8] = {};
      for (int64_t i = lo; i + 8 <= hi; i += 8) {
        for (int j = 0; j < 8; ++j) acc[j] += a[i + j];
      }
      float s = 0;
      for (float v : acc) s += v;
      part[lo == 0 ? 0 : 1] = s;
    });
    benchmark::DoNotOptimize(part[0] + part[1]);
  }
  report(state, n, 1);
}
BENCHMARK(BM_EwSum_Fk)->Apply(args);
BENCHMARK(BM_EwSum_Loop)->Apply(args);

}  // namespace

int main(int argc, char** argv) {
  benchmark::AddCustomContext("command", "build/bin/fk_bench (make bench)");
  benchmark::AddCustomContext(
      "machine limits",
      "raw cblas_sgemm (BM_GemmRaw*), raw FFTW (BM_Fftw*) and plain loops (BM_Ew*_Loop) in the "
      "same run");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
