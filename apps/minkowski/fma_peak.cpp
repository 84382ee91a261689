#include "fma_peak.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#include "fk/cpu_isa.h"

namespace minkowski_app {

namespace {

// 12 independent accumulator chains: enough to cover the FMA latency (4–5
// cycles) on two FMA pipes. Multiplier ~1 keeps the values finite.
constexpr int kChains = 12;

__attribute__((target("avx2,fma"), noinline)) float fma_chains(long iters) {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(0.001f * static_cast<float>(i));
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], m, a);
  }
  __m256 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0];
}

// The same with 16-wide vectors (24 chains: AVX-512 has 32 registers and
// some CPUs issue two 512-bit FMAs a cycle).
constexpr int kChains512 = 24;

__attribute__((target("avx512f"), noinline)) float fma_chains512(long iters) {
  __m512 acc[kChains512];
  for (int i = 0; i < kChains512; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < kChains512; ++i) acc[i] = _mm512_fmadd_ps(acc[i], m, a);
  }
  __m512 s = acc[0];
  for (int i = 1; i < kChains512; ++i) s = _mm512_add_ps(s, acc[i]);
  float out[16];
  _mm512_storeu_ps(out, s);
  return out[0];
}

double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

}  // namespace

const char* fma_peak_isa() {
  return fk::cpu_isa_name(fk::cpu_isa());
}

FmaPeak fma_peak(int threads) {
  FmaPeak best;
  if (fk::cpu_isa() < fk::CpuIsa::Avx2) return best;
  const bool wide = fk::cpu_isa() >= fk::CpuIsa::Avx512;
  const long iters = wide ? 500'000 : 2'000'000;  // ~10 ms per thread
  const double flop =
      2.0 * (wide ? 16 * kChains512 : 8 * kChains) * static_cast<double>(iters) * threads;
  volatile float sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    float s = 0;
    double cpu_rate = 0;  // sum over threads of each one's flop / its own CPU time
#pragma omp parallel num_threads(threads) reduction(+ : s, cpu_rate)
    {
      const double c0 = thread_cpu_seconds();
      s += wide ? fma_chains512(iters) : fma_chains(iters);
      cpu_rate += flop / threads / (thread_cpu_seconds() - c0) / 1e9;
    }
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sink = sink + s;
    best.wall = std::max(best.wall, flop / sec / 1e9);
    best.cpu = std::max(best.cpu, cpu_rate);
  }
  (void)sink;
  return best;
}

double fma_peak_gflops(int threads) {
  return fma_peak(threads).wall;
}

}  // namespace minkowski_app
