#pragma once
// The machine's f32 multiply-add ceiling, measured in the run that reports a
// kernel's speed: a compute-bound kernel is judged against it (GEMM-like code
// cannot beat it), the way a memory-bound one is judged against a stream triad.
namespace minkowski_app {

// GFLOP/s of `threads` threads each running independent 8-wide FMA chains in
// registers (AVX2+FMA; 0 on a CPU without them). Best of a few short runs.
double fma_peak_gflops(int threads);

}  // namespace minkowski_app
