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
// Reductions and row copies (BM_RedSum*, BM_Cat*, BM_IndexSelectRows*, one
// thread): --benchmark_filter='RedSum|Cat|IndexSelect' likewise.
// Machine limit (../shared/reference/machine.md, triad): ~160 / 300 GB/s in
// L1/L2 and ~110 / 210 GB/s in L3 on 1 / 2 threads. Rates are per CPU second
// on one thread, per wall second on two.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

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

void report(benchmark::State& state, int64_t n, double bytes_per_element) {
  state.SetBytesProcessed(
      static_cast<int64_t>(static_cast<double>(state.iterations() * n) * bytes_per_element));
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

// One thread: timed per CPU second (robust when the machine is shared); two
// threads: by the wall clock.
void args(benchmark::internal::Benchmark* b) {
  b->ArgsProduct({{65536, 1048576}, {1}})->ArgNames({"n", "threads"});
}
void args_mt(benchmark::internal::Benchmark* b) {
  b->ArgsProduct({{65536, 1048576}, {2}})->ArgNames({"n", "threads"})->UseRealTime();
}

// The operands every case draws from, as tensors (fk) and raw pointers (loops).
struct Operands {
  explicit Operands(int64_t n)
      : a(operand(grid(n), 1)),
        b(operand(grid(n), 2)),
        c(operand(grid(n), 3)),
        row(operand({16}, 4)),
        mask(fk::lt(a, b)),
        a64(a.to(fk::DType::F64)),
        b64(b.to(fk::DType::F64)),
        out(fk::empty(grid(n))),
        out64(fk::empty(grid(n), {fk::DType::F64})),
        out_bool(fk::empty(grid(n), {fk::DType::Bool})) {}
  fk::Tensor a, b, c, row, mask, a64, b64, out, out64, out_bool;
};

// Fk: the op as nefi calls it (a fresh result each call, from the caching
// allocator). Loop: the same arithmetic into a preallocated result.
struct Case {
  const char* name;
  double bytes_per_element;  // operands read + result written
  std::function<void(Operands&)> fk;
  std::function<void(Operands&, int64_t, int64_t)> loop;
};

const std::vector<Case>& cases() {
  using O = Operands;
  using I = int64_t;
  static const std::vector<Case> k = {
      {"Add", 12, [](O& o) { benchmark::DoNotOptimize(fk::add(o.a, o.b)); },
       [](O& o, I lo, I hi) {
         float* r = o.out.data<float>();
         const float *x = o.a.data<float>(), *y = o.b.data<float>();
         for (I i = lo; i < hi; ++i) r[i] = x[i] + y[i];
       }},
      {"AddF64", 24, [](O& o) { benchmark::DoNotOptimize(fk::add(o.a64, o.b64)); },
       [](O& o, I lo, I hi) {
         double* r = o.out64.data<double>();
         const double *x = o.a64.data<double>(), *y = o.b64.data<double>();
         for (I i = lo; i < hi; ++i) r[i] = x[i] + y[i];
       }},
      {"AddScalar", 8, [](O& o) { benchmark::DoNotOptimize(fk::add(o.a, 0.5)); },
       [](O& o, I lo, I hi) {
         float* r = o.out.data<float>();
         const float* x = o.a.data<float>();
         for (I i = lo; i < hi; ++i) r[i] = x[i] + 0.5f;
       }},
      {"AddRow16", 8, [](O& o) { benchmark::DoNotOptimize(fk::add(o.a, o.row)); },
       [](O& o, I lo, I hi) {
         float* r = o.out.data<float>();
         const float *x = o.a.data<float>(), *y = o.row.data<float>();
         for (I i = lo; i < hi; ++i) r[i] = x[i] + y[i & 15];
       }},
      {"Mul", 12, [](O& o) { benchmark::DoNotOptimize(fk::mul(o.a, o.b)); },
       [](O& o, I lo, I hi) {
         float* r = o.out.data<float>();
         const float *x = o.a.data<float>(), *y = o.b.data<float>();
         for (I i = lo; i < hi; ++i) r[i] = x[i] * y[i];
       }},
      {"Addcmul", 16, [](O& o) { benchmark::DoNotOptimize(fk::addcmul(o.a, o.b, o.c, 0.5)); },
       [](O& o, I lo, I hi) {
         float* r = o.out.data<float>();
         const float *x = o.a.data<float>(), *y = o.b.data<float>(), *z = o.c.data<float>();
         for (I i = lo; i < hi; ++i) r[i] = x[i] + 0.5f * y[i] * z[i];
       }},
      // In place: no result to allocate; tiny factors keep the values bounded.
      {"AddcmulInplace", 16, [](O& o) { fk::addcmul_(o.out, o.b, o.c, 1e-30); },
       [](O& o, I lo, I hi) {
         float* r = o.out.data<float>();
         const float *y = o.b.data<float>(), *z = o.c.data<float>();
         for (I i = lo; i < hi; ++i) r[i] = r[i] + 1e-30f * y[i] * z[i];
       }},
      {"LerpInplace", 12, [](O& o) { fk::lerp_(o.out, o.b, 0.25); },
       [](O& o, I lo, I hi) {
         float* r = o.out.data<float>();
         const float* y = o.b.data<float>();
         for (I i = lo; i < hi; ++i) r[i] = r[i] + 0.25f * (y[i] - r[i]);
       }},
      {"LerpInplaceTensorW", 16, [](O& o) { fk::lerp_(o.out, o.b, o.c); },
       [](O& o, I lo, I hi) {
         float* r = o.out.data<float>();
         const float *y = o.b.data<float>(), *w = o.c.data<float>();
         for (I i = lo; i < hi; ++i) r[i] = r[i] + w[i] * (y[i] - r[i]);
       }},
      {"Where", 13, [](O& o) { benchmark::DoNotOptimize(fk::where(o.mask, o.a, o.b)); },
       [](O& o, I lo, I hi) {
         float* r = o.out.data<float>();
         const float *x = o.a.data<float>(), *y = o.b.data<float>();
         const bool* m = o.mask.data<bool>();
         for (I i = lo; i < hi; ++i) r[i] = m[i] ? x[i] : y[i];
       }},
      {"Lt", 9, [](O& o) { benchmark::DoNotOptimize(fk::lt(o.a, o.b)); },
       [](O& o, I lo, I hi) {
         bool* r = o.out_bool.data<bool>();
         const float *x = o.a.data<float>(), *y = o.b.data<float>();
         for (I i = lo; i < hi; ++i) r[i] = x[i] < y[i];
       }},
      {"ToF64", 12, [](O& o) { benchmark::DoNotOptimize(o.a.to(fk::DType::F64)); },
       [](O& o, I lo, I hi) {
         double* r = o.out64.data<double>();
         const float* x = o.a.data<float>();
         for (I i = lo; i < hi; ++i) r[i] = x[i];
       }},
      {"Exp", 8, [](O& o) { benchmark::DoNotOptimize(fk::exp(o.a)); },
       [](O& o, I lo, I hi) {
         float* r = o.out.data<float>();
         const float* x = o.a.data<float>();
         for (I i = lo; i < hi; ++i) r[i] = std::exp(x[i]);
       }},
      {"Tanh", 8, [](O& o) { benchmark::DoNotOptimize(fk::tanh(o.a)); },
       [](O& o, I lo, I hi) {
         float* r = o.out.data<float>();
         const float* x = o.a.data<float>();
         for (I i = lo; i < hi; ++i) r[i] = std::tanh(x[i]);
       }},
      {"Sigmoid", 8, [](O& o) { benchmark::DoNotOptimize(fk::sigmoid(o.a)); },
       [](O& o, I lo, I hi) {
         float* r = o.out.data<float>();
         const float* x = o.a.data<float>();
         for (I i = lo; i < hi; ++i) r[i] = 1.0f / (1.0f + std::exp(-x[i]));
       }},
      {"Softplus", 8, [](O& o) { benchmark::DoNotOptimize(fk::softplus(o.a)); },
       [](O& o, I lo, I hi) {
         float* r = o.out.data<float>();
         const float* x = o.a.data<float>();
         for (I i = lo; i < hi; ++i) r[i] = x[i] > 20.0f ? x[i] : std::log1p(std::exp(x[i]));
       }},
      {"Log", 8, [](O& o) { benchmark::DoNotOptimize(fk::log(o.a)); },
       [](O& o, I lo, I hi) {
         float* r = o.out.data<float>();
         const float* x = o.a.data<float>();
         for (I i = lo; i < hi; ++i) r[i] = std::log(x[i]);
       }},
      {"Sqrt", 8, [](O& o) { benchmark::DoNotOptimize(fk::sqrt(o.a)); },
       [](O& o, I lo, I hi) {
         float* r = o.out.data<float>();
         const float* x = o.a.data<float>();
         for (I i = lo; i < hi; ++i) r[i] = std::sqrt(x[i]);
       }},
      {"Relu", 8, [](O& o) { benchmark::DoNotOptimize(fk::relu(o.a)); },
       [](O& o, I lo, I hi) {
         float* r = o.out.data<float>();
         const float* x = o.a.data<float>();
         for (I i = lo; i < hi; ++i) r[i] = x[i] > 0.0f ? x[i] : 0.0f;
       }},
      // The loop for a transposed copy is a straight copy: the floor of its traffic.
      {"ContiguousT", 8,
       [](O& o) {
         const int64_t n = o.a.numel();
         benchmark::DoNotOptimize(fk::contiguous(o.a.reshape({n / 256, 256}).t()));
       },
       [](O& o, I lo, I hi) {
         float* r = o.out.data<float>();
         const float* x = o.a.data<float>();
         for (I i = lo; i < hi; ++i) r[i] = x[i];
       }},
  };
  return k;
}

void run_fk(benchmark::State& state, const Case& c) {
  const int64_t n = state.range(0);
  threads_of(state);
  Operands o(n);
  for (auto _ : state) c.fk(o);
  report(state, n, c.bytes_per_element);
}

void run_loop(benchmark::State& state, const Case& c) {
  const int64_t n = state.range(0);
  const int threads = threads_of(state);
  Operands o(n);
  for (auto _ : state) {
    plain_for(n, threads, [&](int64_t lo, int64_t hi) { c.loop(o, lo, hi); });
    benchmark::ClobberMemory();
  }
  report(state, n, c.bytes_per_element);
}

// BM_Ew<case>_Fk and BM_Ew<case>_Loop side by side.
void register_cases() {
  for (const Case& c : cases()) {
    std::string name = std::string("BM_Ew") + c.name;
    for (auto apply : {args, args_mt}) {
      benchmark::RegisterBenchmark((name + "_Fk").c_str(), run_fk, c)->Apply(apply);
      benchmark::RegisterBenchmark((name + "_Loop").c_str(), run_loop, c)->Apply(apply);
    }
  }
}

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
  report(state, n, 8);
}
void roll_fk(benchmark::State& state, std::vector<int64_t> shifts, std::vector<int64_t> dims) {
  int64_t n = state.range(0);
  threads_of(state);
  fk::Tensor a = operand(grid(n), 1);
  for (auto _ : state) benchmark::DoNotOptimize(fk::roll(a, shifts, dims));
  report(state, n, 8);
}
// softmax of (n / 256) x 256 f32 along `dim`, with the vector exp (auto) or
// glibc's (generic): the same op, the ISA knob flipped.
void softmax_case(benchmark::State& state, int dim, const char* isa) {
  int64_t n = state.range(0);
  threads_of(state);
  fk::Tensor a = operand({n / 256, 256}, 1);
  {
    fk::KnobOverride cap("FK_CPU_ISA", isa);
    for (auto _ : state) benchmark::DoNotOptimize(fk::softmax(a, dim));
  }
  report(state, n, 8);
}
void BM_SoftmaxLast_Avx2(benchmark::State& state) {
  softmax_case(state, 1, "auto");
}
void BM_SoftmaxLast_Generic(benchmark::State& state) {
  softmax_case(state, 1, "generic");
}
void BM_SoftmaxDim0_Avx2(benchmark::State& state) {
  softmax_case(state, 0, "auto");
}
void BM_SoftmaxDim0_Generic(benchmark::State& state) {
  softmax_case(state, 0, "generic");
}
BENCHMARK(BM_SoftmaxLast_Avx2)->Apply(args);
BENCHMARK(BM_SoftmaxLast_Generic)->Apply(args);
BENCHMARK(BM_SoftmaxDim0_Avx2)->Apply(args);
BENCHMARK(BM_SoftmaxDim0_Generic)->Apply(args);

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
BENCHMARK(BM_EwRollDim0_Fk)->Apply(args_mt);
BENCHMARK(BM_EwRollDim0_Loop)->Apply(args);
BENCHMARK(BM_EwRollDim0_Loop)->Apply(args_mt);
BENCHMARK(BM_EwRollLast_Fk)->Apply(args);
BENCHMARK(BM_EwRollLast_Fk)->Apply(args_mt);
BENCHMARK(BM_EwRollLast_Loop)->Apply(args);
BENCHMARK(BM_EwRollLast_Loop)->Apply(args_mt);
BENCHMARK(BM_EwRoll2d_Fk)->Apply(args);
BENCHMARK(BM_EwRoll2d_Fk)->Apply(args_mt);
BENCHMARK(BM_EwRoll2d_Loop)->Apply(args);
BENCHMARK(BM_EwRoll2d_Loop)->Apply(args_mt);

// Full sum: the loop keeps 8 partial sums so it vectorises without -ffast-math.
void BM_EwSum_Fk(benchmark::State& state) {
  int64_t n = state.range(0);
  threads_of(state);
  fk::Tensor a = operand(grid(n), 1);
  for (auto _ : state) benchmark::DoNotOptimize(fk::sum(a));
  report(state, n, 4);
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
  report(state, n, 4);
}
BENCHMARK(BM_EwSum_Fk)->Apply(args);
BENCHMARK(BM_EwSum_Fk)->Apply(args_mt);
BENCHMARK(BM_EwSum_Loop)->Apply(args);
BENCHMARK(BM_EwSum_Loop)->Apply(args_mt);

// --- reductions and row copies: fk op vs plain loop, one thread -----------------
// Operand: grid(n) = [n / 1024, 64, 16] f32. The loops accumulate in f64 like
// fk (8 independent partial sums for a contiguous run, one per output lane
// across rows) and write f32 results.

void BM_RedSumFull_Fk(benchmark::State& state) {
  int64_t n = state.range(0);
  threads_of(state);
  fk::Tensor a = operand(grid(n), 1);
  for (auto _ : state) benchmark::DoNotOptimize(fk::sum(a));
  report(state, n, 4);
}
void BM_RedSumFull_Loop(benchmark::State& state) {
  int64_t n = state.range(0);
  threads_of(state);
  fk::Tensor ta = operand(grid(n), 1);
  const float* a = ta.data<float>();
  for (auto _ : state) {
    double acc[8] = {};
    for (int64_t i = 0; i + 8 <= n; i += 8) {
      for (int j = 0; j < 8; ++j) acc[j] += a[i + j];
    }
    float s = static_cast<float>(((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                                 ((acc[4] + acc[5]) + (acc[6] + acc[7])));
    benchmark::DoNotOptimize(s);
  }
  report(state, n, 4);
}
void BM_RedSumDim0_Fk(benchmark::State& state) {
  int64_t n = state.range(0);
  threads_of(state);
  fk::Tensor a = operand(grid(n), 1);
  for (auto _ : state) benchmark::DoNotOptimize(fk::sum(a, {0}));
  report(state, n, 4);
}
void BM_RedSumDim0_Loop(benchmark::State& state) {
  int64_t n = state.range(0);
  threads_of(state);
  fk::Tensor ta = operand(grid(n), 1), to = fk::empty({64, 16});
  const float* a = ta.data<float>();
  float* o = to.data<float>();
  const int64_t C = 64 * 16, R = n / C;
  std::vector<double> acc(C);
  for (auto _ : state) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t r = 0; r < R; ++r) {
      for (int64_t c = 0; c < C; ++c) acc[c] += a[r * C + c];
    }
    for (int64_t c = 0; c < C; ++c) o[c] = static_cast<float>(acc[c]);
    benchmark::ClobberMemory();
  }
  report(state, n, 4);
}
void BM_RedSumLast_Fk(benchmark::State& state) {
  int64_t n = state.range(0);
  threads_of(state);
  fk::Tensor a = operand(grid(n), 1);
  for (auto _ : state) benchmark::DoNotOptimize(fk::sum(a, {2}));
  report(state, n, 4);
}
void BM_RedSumLast_Loop(benchmark::State& state) {
  int64_t n = state.range(0);
  threads_of(state);
  fk::Tensor ta = operand(grid(n), 1), to = fk::empty({n / 16});
  const float* a = ta.data<float>();
  float* o = to.data<float>();
  for (auto _ : state) {
    for (int64_t row = 0; row < n / 16; ++row) {
      const float* x = a + row * 16;
      double acc[8];
      for (int j = 0; j < 8; ++j) acc[j] = static_cast<double>(x[j]) + x[j + 8];
      o[row] = static_cast<float>(((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                                  ((acc[4] + acc[5]) + (acc[6] + acc[7])));
    }
    benchmark::ClobberMemory();
  }
  report(state, n, 4);
}
BENCHMARK(BM_RedSumFull_Fk)->Apply(args);
BENCHMARK(BM_RedSumFull_Loop)->Apply(args);
BENCHMARK(BM_RedSumDim0_Fk)->Apply(args);
BENCHMARK(BM_RedSumDim0_Loop)->Apply(args);
BENCHMARK(BM_RedSumLast_Fk)->Apply(args);
BENCHMARK(BM_RedSumLast_Loop)->Apply(args);

// max/argmax/logsumexp of (n / 256) x 256 f32 (256x256 and 4096x256): max
// and argmax along dim 0 (rows of lanes) and the last dim (runs of 256),
// logsumexp along the last dim. _Fk: FK_CPU_ISA=auto (AVX2 kernels where the
// CPU has them); _Generic: the knob at generic (the scalar path); _Loop: the
// plain loop (max and argmax share one per dim: both track the values).
// Bytes: the operand read once.
// Reproduce: build/h/bin/fk_bench --benchmark_filter='RedMax|RedArgmax|RedLse'
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
template <typename F>
void with_isa(benchmark::State& state, const char* isa, const F& op) {
  int64_t n = state.range(0);
  threads_of(state);
  fk::Tensor a = operand({n / 256, 256}, 1);
  {
    fk::KnobOverride cap("FK_CPU_ISA", isa);
    for (auto _ : state) benchmark::DoNotOptimize(op(a));
  }
  report(state, n, 4);
}
auto max_dim0 = [](const fk::Tensor& a) { return fk::max(a, 0); };
auto argmax_last = [](const fk::Tensor& a) { return fk::argmax(a, 1); };
auto argmax_dim0 = [](const fk::Tensor& a) { return fk::argmax(a, 0); };
auto max_last = [](const fk::Tensor& a) { return fk::max(a, 1); };
auto lse_last = [](const fk::Tensor& a) { return fk::logsumexp(a, {1}); };
void BM_RedMaxDim0_Fk(benchmark::State& state) {
  with_isa(state, "auto", max_dim0);
}
void BM_RedMaxDim0_Generic(benchmark::State& state) {
  with_isa(state, "generic", max_dim0);
}
void BM_RedMaxDim0_Loop(benchmark::State& state) {
  int64_t n = state.range(0);
  threads_of(state);
  const int64_t C = 256, R = n / C;
  fk::Tensor ta = operand({R, C}, 1), tv = fk::empty({C}), ti = fk::empty({C}, {fk::DType::I64});
  const float* a = ta.data<float>();
  float* best = tv.data<float>();
  int64_t* idx = ti.data<int64_t>();
  for (auto _ : state) {
    for (int64_t c = 0; c < C; ++c) best[c] = a[c], idx[c] = 0;
    for (int64_t r = 1; r < R; ++r) {
      for (int64_t c = 0; c < C; ++c) {
        if (a[r * C + c] > best[c]) best[c] = a[r * C + c], idx[c] = r;
      }
    }
    benchmark::ClobberMemory();
  }
  report(state, n, 4);
}
void BM_RedArgmaxDim0_Fk(benchmark::State& state) {
  with_isa(state, "auto", argmax_dim0);
}
void BM_RedArgmaxDim0_Generic(benchmark::State& state) {
  with_isa(state, "generic", argmax_dim0);
}
void BM_RedMaxLast_Fk(benchmark::State& state) {
  with_isa(state, "auto", max_last);
}
void BM_RedMaxLast_Generic(benchmark::State& state) {
  with_isa(state, "generic", max_last);
}
void BM_RedArgmaxLast_Fk(benchmark::State& state) {
  with_isa(state, "auto", argmax_last);
}
void BM_RedArgmaxLast_Generic(benchmark::State& state) {
  with_isa(state, "generic", argmax_last);
}
void BM_RedArgmaxLast_Loop(benchmark::State& state) {
  int64_t n = state.range(0);
  threads_of(state);
  fk::Tensor ta = operand({n / 256, 256}, 1), ti = fk::empty({n / 256}, {fk::DType::I64});
  const float* a = ta.data<float>();
  int64_t* idx = ti.data<int64_t>();
  for (auto _ : state) {
    for (int64_t row = 0; row < n / 256; ++row) {
      const float* x = a + row * 256;
      int64_t bi = 0;
      for (int64_t j = 1; j < 256; ++j) bi = x[j] > x[bi] ? j : bi;
      idx[row] = bi;
    }
    benchmark::ClobberMemory();
  }
  report(state, n, 4);
}
void BM_RedLseLast_Fk(benchmark::State& state) {
  with_isa(state, "auto", lse_last);
}
void BM_RedLseLast_Generic(benchmark::State& state) {
  with_isa(state, "generic", lse_last);
}
// The max, then the f64 sum of glibc's expf(x - max), in one chain.
void BM_RedLseLast_Loop(benchmark::State& state) {
  int64_t n = state.range(0);
  threads_of(state);
  fk::Tensor ta = operand({n / 256, 256}, 1), to = fk::empty({n / 256});
  const float* a = ta.data<float>();
  float* o = to.data<float>();
  for (auto _ : state) {
    for (int64_t row = 0; row < n / 256; ++row) {
      const float* x = a + row * 256;
      float m = x[0];
      for (int64_t j = 1; j < 256; ++j) m = x[j] > m ? x[j] : m;
      double s = 0;
      for (int64_t j = 0; j < 256; ++j) s += std::exp(x[j] - m);
      o[row] = static_cast<float>(m + std::log(s));
    }
    benchmark::ClobberMemory();
  }
  report(state, n, 4);
}
BENCHMARK(BM_RedMaxDim0_Fk)->Apply(args);
BENCHMARK(BM_RedMaxDim0_Generic)->Apply(args);
BENCHMARK(BM_RedMaxDim0_Loop)->Apply(args);
BENCHMARK(BM_RedArgmaxDim0_Fk)->Apply(args);
BENCHMARK(BM_RedArgmaxDim0_Generic)->Apply(args);
BENCHMARK(BM_RedMaxLast_Fk)->Apply(args);
BENCHMARK(BM_RedMaxLast_Generic)->Apply(args);
BENCHMARK(BM_RedArgmaxLast_Fk)->Apply(args);
BENCHMARK(BM_RedArgmaxLast_Generic)->Apply(args);
BENCHMARK(BM_RedArgmaxLast_Loop)->Apply(args);
BENCHMARK(BM_RedLseLast_Fk)->Apply(args);
BENCHMARK(BM_RedLseLast_Generic)->Apply(args);
BENCHMARK(BM_RedLseLast_Loop)->Apply(args);

// cat of two 64x64x16 f32 tensors along dim 0 (two 256 KiB runs) and dim 2
// (4096 x 2 runs of 64 B); the loop copies the same runs element by element.
// The second operand is an offset view's copy so its rows sit 4 bytes off the
// result's (the misaligned case).
void cat_fk(benchmark::State& state, int64_t dim) {
  fk::set_num_threads(1);
  fk::Tensor a = operand({64, 64, 16}, 1);
  fk::Tensor b = operand({64 * 64 * 16 + 1}, 2).narrow(0, 1, 64 * 64 * 16).reshape({64, 64, 16});
  for (auto _ : state) benchmark::DoNotOptimize(fk::cat({a, b}, dim));
  report(state, 2 * 65536, 8);
}
void cat_loop(benchmark::State& state, int64_t rows, int64_t row_len) {
  fk::set_num_threads(1);
  fk::Tensor ta = operand({64, 64, 16}, 1), tb = operand({64, 64, 16}, 2);
  fk::Tensor to = fk::empty({2 * 65536});
  const float *a = ta.data<float>(), *b = tb.data<float>();
  float* o = to.data<float>();
  for (auto _ : state) {
    for (int64_t r = 0; r < rows; ++r) {
      float* d = o + 2 * r * row_len;
      const float *x = a + r * row_len, *y = b + r * row_len;
      for (int64_t j = 0; j < row_len; ++j) d[j] = x[j];
      for (int64_t j = 0; j < row_len; ++j) d[row_len + j] = y[j];
    }
    benchmark::ClobberMemory();
  }
  report(state, 2 * 65536, 8);
}
void BM_CatDim0_Fk(benchmark::State& state) {
  cat_fk(state, 0);
}
void BM_CatDim0_Loop(benchmark::State& state) {
  cat_loop(state, 1, 65536);
}
void BM_CatDim2_Fk(benchmark::State& state) {
  cat_fk(state, 2);
}
void BM_CatDim2_Loop(benchmark::State& state) {
  cat_loop(state, 4096, 16);
}
BENCHMARK(BM_CatDim0_Fk);
BENCHMARK(BM_CatDim0_Loop);
BENCHMARK(BM_CatDim2_Fk);
BENCHMARK(BM_CatDim2_Loop);

// index_select of 64 rows (4 KiB each, a permutation) from a [64, 1024] f32 matrix.
fk::Tensor row_permutation() {
  std::vector<int64_t> idx(64);
  for (int64_t i = 0; i < 64; ++i) idx[static_cast<size_t>(i)] = (i * 37 + 5) % 64;
  return fk::from_vector(idx, {64});
}
void BM_IndexSelectRows_Fk(benchmark::State& state) {
  fk::set_num_threads(1);
  fk::Tensor a = operand({64 * 1024 + 1}, 1).narrow(0, 1, 64 * 1024).reshape({64, 1024});
  fk::Tensor idx = row_permutation();
  for (auto _ : state) benchmark::DoNotOptimize(fk::index_select(a, 0, idx));
  report(state, 65536, 8);
}
void BM_IndexSelectRows_Loop(benchmark::State& state) {
  fk::set_num_threads(1);
  fk::Tensor ta = operand({64, 1024}, 1), to = fk::empty({64, 1024});
  fk::Tensor idx = row_permutation();
  const float* a = ta.data<float>();
  const int64_t* ip = idx.data<int64_t>();
  float* o = to.data<float>();
  for (auto _ : state) {
    for (int64_t i = 0; i < 64; ++i) {
      const float* s = a + ip[i] * 1024;
      for (int64_t j = 0; j < 1024; ++j) o[i * 1024 + j] = s[j];
    }
    benchmark::ClobberMemory();
  }
  report(state, 65536, 8);
}
BENCHMARK(BM_IndexSelectRows_Fk);
BENCHMARK(BM_IndexSelectRows_Loop);

}  // namespace

int main(int argc, char** argv) {
  benchmark::AddCustomContext("command", "build/bin/fk_bench (make bench)");
  benchmark::AddCustomContext(
      "machine limits",
      "raw cblas_sgemm (BM_GemmRaw*), raw FFTW (BM_Fftw*) and plain loops (BM_Ew*_Loop) in the "
      "same run");
  register_cases();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
