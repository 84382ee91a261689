#pragma once
// The machine's f32 multiply-add ceiling, measured in the run that reports a
// kernel's speed: a compute-bound kernel is judged against it (GEMM-like code
// cannot beat it), the way a memory-bound one is judged against a stream triad.
namespace minkowski_app {

// GFLOP/s of `threads` threads each running independent FMA chains in
// registers, with the widest vectors the kernels may use (fk::cpu_isa():
// 16-wide on AVX-512, 8-wide on AVX2+FMA; 0 on a CPU without them). Best of a
// few short runs.
double fma_peak_gflops(int threads);
// The same as wall-clock and as CPU-time rates: the sum over the threads of
// each one's flop / its own CPU seconds, which a shared machine's other work
// does not lower (time spent descheduled, or waiting at the barrier for a
// descheduled thread, is not counted).
struct FmaPeak {
  double wall = 0, cpu = 0;
};
FmaPeak fma_peak(int threads);
// The ISA that ceiling is measured with ("avx512", "avx2" or "generic").
const char* fma_peak_isa();

}  // namespace minkowski_app
