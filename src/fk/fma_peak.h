#pragma once
// The machine's f32 multiply-add ceiling, measured in the run that reports a
// kernel's speed: a compute-bound kernel is judged against it (GEMM-like code
// cannot beat it), the way a memory-bound one is judged against a stream
// triad. Used by `minkowski bench-conv` and bench/nefi/dense_bench.
#include "fk/cpu_isa.h"

namespace fk {

// One thread's independent FMA chains in registers at `isa` (16-wide on
// Avx512, 8-wide on Avx2; Generic has none and returns 0 at once): `rounds`
// rounds of one FMA per chain. Returns a sum over the chains so the work
// cannot be optimised away.
float fma_chains(CpuIsa isa, long rounds);
// The flop one round of fma_chains(isa, ...) does (2 per lane per chain).
double fma_chains_round_flop(CpuIsa isa);

// GFLOP/s of `threads` threads together, each running fma_chains at
// fk::cpu_isa() (after an untimed warm-up run on every thread, so no core is
// measured before it has reached its working clock), best of a few short
// runs, as wall-clock and as CPU-time rates: `cpu` is the
// sum over the threads of each one's flop / its own CPU seconds, which a
// shared machine's other work does not lower (time spent descheduled, or
// waiting at the barrier for a descheduled thread, is not counted). Both 0 on
// a CPU without AVX2 + FMA.
struct FmaPeak {
  double wall = 0, cpu = 0;
};
FmaPeak measure_fma_peak(int threads);
// The ISA measure_fma_peak uses ("avx512", "avx2" or "generic").
const char* fma_peak_isa();

}  // namespace fk
