#include "fk/fma_peak.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <ctime>

namespace fk {

namespace {

// 12 independent accumulator chains cover the FMA latency (4–5 cycles) on two
// FMA pipes. The multiplier ~1 keeps the values finite.
constexpr int kChains256 = 12;

__attribute__((target("avx2,fma"), noinline)) float fma_chains256(long rounds) {
  __m256 acc[kChains256];
  for (int i = 0; i < kChains256; ++i) acc[i] = _mm256_set1_ps(0.001f * static_cast<float>(i));
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < rounds; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains256; ++i) acc[i] = _mm256_fmadd_ps(acc[i], m, a);
  }
  __m256 s = acc[0];
  for (int i = 1; i < kChains256; ++i) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0];
}

// 16-wide vectors, 24 chains: AVX-512 has 32 registers and some CPUs issue two
// 512-bit FMAs a cycle.
constexpr int kChains512 = 24;

__attribute__((target("avx512f"), noinline)) float fma_chains512(long rounds) {
  __m512 acc[kChains512];
  for (int i = 0; i < kChains512; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < rounds; ++it) {
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

float fma_chains(CpuIsa isa, long rounds) {
  if (isa >= CpuIsa::Avx512) return fma_chains512(rounds);
  if (isa >= CpuIsa::Avx2) return fma_chains256(rounds);
  return 0;
}

double fma_chains_round_flop(CpuIsa isa) {
  if (isa >= CpuIsa::Avx512) return 2.0 * 16 * kChains512;
  if (isa >= CpuIsa::Avx2) return 2.0 * 8 * kChains256;
  return 0;
}

const char* fma_peak_isa() {
  return cpu_isa_name(cpu_isa());
}

FmaPeak measure_fma_peak(int threads) {
  FmaPeak best;
  const CpuIsa isa = cpu_isa();
  if (isa < CpuIsa::Avx2) return best;
  const long rounds = isa >= CpuIsa::Avx512 ? 500'000 : 2'000'000;  // ~10 ms per thread
  const double flop = fma_chains_round_flop(isa) * static_cast<double>(rounds) * threads;
  volatile float sink = 0;
  // Every thread first runs the chains for ~50 ms untimed, so the team is
  // awake and every core at its working clock before the timed runs: on a
  // quiet 2-vCPU VM a 2-thread peak without it read 1.25 x the 1-thread one
  // while the convolution after it ran at 1.9 x (most likely the idle second
  // core, still slow during the ~50 ms of timed runs).
  float warm = 0;
#pragma omp parallel num_threads(threads) reduction(+ : warm)
  warm += fma_chains(isa, 5 * rounds);
  sink = sink + warm;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    float s = 0;
    double cpu_rate = 0;  // sum over threads of each one's flop / its own CPU time
#pragma omp parallel num_threads(threads) reduction(+ : s, cpu_rate)
    {
      const double c0 = thread_cpu_seconds();
      s += fma_chains(isa, rounds);
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

}  // namespace fk
