#include "fk/fma_peak.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

// What fma_chains computes, one lane in plain scalar code: `chains`
// accumulators x_i = 0.001 i, each stepped `rounds` times by x <- x * m + a
// with one rounding (fmaf), then summed in chain order.
float scalar_chains(int chains, long rounds) {
  float s = 0;
  for (int i = 0; i < chains; ++i) {
    float x = 0.001f * static_cast<float>(i);
    for (long r = 0; r < rounds; ++r) x = std::fmaf(x, 0.999999f, 1e-7f);
    s = i == 0 ? x : s + x;
  }
  return s;
}

TEST(FmaPeak, ChainsComputeTheScalarRecurrence) {
  for (long rounds : {0L, 1L, 1000L}) {
    if (fk::cpu_isa() >= fk::CpuIsa::Avx2) {
      EXPECT_EQ(fk::fma_chains(fk::CpuIsa::Avx2, rounds), scalar_chains(12, rounds));
    }
    if (fk::cpu_isa() >= fk::CpuIsa::Avx512) {
      EXPECT_EQ(fk::fma_chains(fk::CpuIsa::Avx512, rounds), scalar_chains(24, rounds));
    }
  }
  EXPECT_EQ(fk::fma_chains(fk::CpuIsa::Generic, 1000), 0.0f);
}

TEST(FmaPeak, RoundFlopIsTwoPerLanePerChain) {
  EXPECT_EQ(fk::fma_chains_round_flop(fk::CpuIsa::Avx512), 2.0 * 16 * 24);
  EXPECT_EQ(fk::fma_chains_round_flop(fk::CpuIsa::Avx2), 2.0 * 8 * 12);
  EXPECT_EQ(fk::fma_chains_round_flop(fk::CpuIsa::Generic), 0.0);
}

TEST(FmaPeak, MeasuredWhereTheIsaHasFma) {
  const fk::FmaPeak p = fk::measure_fma_peak(1);
  EXPECT_STREQ(fk::fma_peak_isa(), fk::cpu_isa_name(fk::cpu_isa()));
  if (fk::cpu_isa() < fk::CpuIsa::Avx2) {
    EXPECT_EQ(p.wall, 0.0);
    EXPECT_EQ(p.cpu, 0.0);
    return;
  }
  // The CPU-time rate above a scalar core's, below 100 GHz worth of one
  // thread's flop. The wall rate only has to exist: on a loaded machine (an
  // ASan run beside other jobs read 0.96) it is whatever share the thread got.
  EXPECT_GT(p.wall, 0.0);
  EXPECT_GT(p.cpu, 1.0);
  EXPECT_LT(p.cpu, 100.0 * fk::fma_chains_round_flop(fk::cpu_isa()));
}

// With several threads the rates are the team's: the CPU-time rate sums
// each thread's, so it is at least the wall rate (every thread's CPU time is
// at most the run's wall time).
TEST(FmaPeak, SeveralThreadsMeasuredTogether) {
  if (fk::cpu_isa() < fk::CpuIsa::Avx2) GTEST_SKIP() << "no FMA (this CPU, or FK_CPU_ISA=generic)";
  const fk::FmaPeak one = fk::measure_fma_peak(1), two = fk::measure_fma_peak(2);
  EXPECT_GE(two.cpu, two.wall * 0.999);
  EXPECT_GT(two.cpu, 1.0);
  // Each thread counts its own flop only: two threads' sum is at most twice
  // one thread's rate (3 x: clocks vary between the two measurements).
  EXPECT_LT(two.cpu, 3.0 * one.cpu);
}

}  // namespace
