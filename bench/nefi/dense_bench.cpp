// nefi dense-layer GEMM benchmarks: the GEMMs of one training step of the
// MLP-bound configs, issued by three engines, beside the machine's multiply-
// add ceilings measured in the same run. Run at one thread:
//   OMP_NUM_THREADS=1 build/bin/nefi_dense_bench
//   BM_MlpStepGemms/C/E  every layer's forward x W^T, backward gz W (not for
//                        the first layer) and gz^T x, as a step makes them.
//                        C: 0 deconvolution full (64^2 = 4096 rows, 4 x 128
//                        tanh, skip at 2, 30 encoding features), 1 the thermal
//                        paper network (10 x 512 relu, skip at 4, 72 features)
//                        at 8192 of its 65536 rows (the rates carry; the step
//                        is 8 x the work), 2 the ct3d / deconvolution3d full
//                        presets (64 x 64 x 32 = 131072 rows, 4 x 128 tanh,
//                        skip at 2, 39 encoding features). E: 0 OpenBLAS sgemm through fk::gemm
//                        (its AVX2 kernels where OPENBLAS_CORETYPE=Haswell
//                        pins them), 1 nefi's fused f32 kernel (dense_gemm.h,
//                        bias + activation in the forward's epilogue), 2 the
//                        fused bf16 kernel (dense_gemm_bf16.h). GFLOP/s on CPU
//                        time. pass: 0 all, 1 forwards, 2 input gradients,
//                        3 weight gradients.
//   BM_FmaPeak           f32 FMA chains in zmm registers (16 lanes, 2 flop;
//                        fk::fma_chains, the ceiling minkowski bench-conv uses).
//   BM_Dpbf16Peak        vdpbf16ps chains (16 lanes x 2 products, 4 flop).
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <vector>

#include "fk/blas.h"
#include "fk/cpu_isa.h"
#include "fk/factory.h"
#include "fk/fma_peak.h"
#include "fk/parallel.h"
#include "fk/random.h"
#include "nefi/field/dense_gemm.h"
#include "nefi/field/dense_gemm_bf16.h"

namespace {

struct Layer {
  int64_t in, out;
};

struct MlpShape {
  int64_t rows;
  std::vector<Layer> layers;
  nefi::DenseActivation act;
};

MlpShape mlp_shape(int64_t config) {
  if (config == 0)
    return {4096, {{30, 128}, {128, 128}, {158, 128}, {128, 128}}, nefi::DenseActivation::Tanh};
  if (config == 2)
    return {131072, {{39, 128}, {128, 128}, {167, 128}, {128, 128}}, nefi::DenseActivation::Tanh};
  MlpShape s{8192, {}, nefi::DenseActivation::Relu};
  for (int i = 0; i < 10; ++i) s.layers.push_back({i == 0 ? 72 : i == 4 ? 584 : 512, 512});
  return s;
}

std::vector<float> random_floats(int64_t n, uint64_t seed) {
  fk::Generator g(seed);
  return fk::randn({n}, {fk::DType::F32}, &g).to_vector<float>();
}

// C (m, n) = op(A) op(B) by the chosen engine; the epilogue (bias, act) only
// where the engine fuses it.
void product(int64_t engine, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
             int64_t lda, const float* b, int64_t ldb, float* c, const float* bias,
             nefi::DenseActivation act) {
  if (engine == 0) {
    fk::gemm(fk::DType::F32, ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, n);
  } else if (engine == 1) {
    nefi::dense_gemm(ta, tb, m, n, k, a, lda, b, ldb, c, n, false, bias, act);
  } else {
    nefi::dense_gemm_bf16(ta, tb, m, n, k, a, lda, b, ldb, c, n, false, bias, act);
  }
}

void BM_MlpStepGemms(benchmark::State& state) {
  const int64_t engine = state.range(1);
  if (engine == 1 && !fk::cpu_avx512()) return state.SkipWithError("no AVX-512");
  if (engine == 2 && !nefi::dense_gemm_bf16_native()) return state.SkipWithError("no AVX512_BF16");
  fk::set_num_threads(1);
  const MlpShape s = mlp_shape(state.range(0));
  int64_t widest = 0;
  for (const Layer& l : s.layers) widest = std::max({widest, l.in, l.out});
  const std::vector<float> x = random_floats(s.rows * widest, 1),
                           w = random_floats(widest * widest, 2);
  const std::vector<float> g = random_floats(s.rows * widest, 3), bias(widest, 0.1f);
  std::vector<float> y(s.rows * widest), dx(s.rows * widest), dw(widest * widest);
  // pass: 0 all three products, 1 the forwards, 2 the input gradients, 3 the
  // weight gradients.
  const int64_t pass = state.range(2);
  double flop = 0;
  for (auto _ : state) {
    flop = 0;
    for (size_t i = 0; i < s.layers.size(); ++i) {
      const Layer l = s.layers[i];
      const double layer_flop = 2.0 * s.rows * l.in * l.out;
      if (pass == 0 || pass == 1) {
        product(engine, false, true, s.rows, l.out, l.in, x.data(), l.in, w.data(), l.in, y.data(),
                bias.data(), s.act);
        flop += layer_flop;
      }
      if (i > 0 && (pass == 0 || pass == 2)) {
        product(engine, false, false, s.rows, l.in, l.out, g.data(), l.out, w.data(), l.in,
                dx.data(), nullptr, nefi::DenseActivation::None);
        flop += layer_flop;
      }
      if (pass == 0 || pass == 3) {
        product(engine, true, false, l.out, l.in, s.rows, g.data(), l.out, x.data(), l.in,
                dw.data(), nullptr, nefi::DenseActivation::None);
        flop += layer_flop;
      }
    }
    benchmark::DoNotOptimize(dw.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(flop * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_MlpStepGemms)
    ->ArgsProduct({{0, 1, 2}, {0, 1, 2}, {0, 1, 2, 3}})
    ->ArgNames({"config", "engine", "pass"})
    ->Unit(benchmark::kMillisecond);

// vdpbf16ps chains, as many as fk::fma_chains runs at AVX-512: they cover the
// latency on two 512-bit pipes.
constexpr int kChains = 24;

__attribute__((target("avx512f,avx512bw,avx512bf16"), noinline)) float dpbf16_chains(long iters) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-4f), _mm512_set1_ps(1e-4f));
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
  alignas(64) float out[16];
  _mm512_store_ps(out, s);
  return out[0];
}

void BM_FmaPeak(benchmark::State& state) {
  if (!fk::cpu_avx512()) return state.SkipWithError("no AVX-512");
  const long iters = 100'000;
  for (auto _ : state) {
    long n = iters;  // opaque: the pure call may not be hoisted out of the loop
    benchmark::DoNotOptimize(n);
    benchmark::DoNotOptimize(fk::fma_chains(fk::CpuIsa::Avx512, n));
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(fk::fma_chains_round_flop(fk::CpuIsa::Avx512) * iters * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_FmaPeak);

void BM_Dpbf16Peak(benchmark::State& state) {
  if (!fk::cpu_avx512_bf16()) return state.SkipWithError("no AVX512_BF16");
  const long iters = 100'000;
  for (auto _ : state) {
    long n = iters;  // opaque: the pure call may not be hoisted out of the loop
    benchmark::DoNotOptimize(n);
    benchmark::DoNotOptimize(dpbf16_chains(n));
  }
  state.counters["GFLOP/s"] = benchmark::Counter(4.0 * 16 * kChains * iters * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Dpbf16Peak);

}  // namespace

int main(int argc, char** argv) {
  benchmark::AddCustomContext("command", "OMP_NUM_THREADS=1 build/bin/nefi_dense_bench");
  benchmark::AddCustomContext("machine limit",
                              "BM_FmaPeak (f32) and BM_Dpbf16Peak (bf16) in the same run");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
