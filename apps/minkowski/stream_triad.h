#pragma once
// The machine's memory bandwidth, measured in the run that reports a
// memory-bound kernel's speed: STREAM's triad a[i] = b[i] + s * c[i] over
// three f64 arrays far larger than the caches, split statically over the
// threads. A kernel that moves B bytes in t seconds is judged as
// (B / t) / triad. Single passes, so that a benchmark can interleave them
// with the kernels it judges (on a shared machine both then see the same load).
#include <cstdint>
#include <memory>

namespace minkowski_app {

class StreamTriad {
 public:
  // Three arrays of `array_mib` MiB each, initialised.
  explicit StreamTriad(int64_t array_mib);
  // One pass at `threads` threads: bytes per second, counted as STREAM does
  // (24 bytes per element; the write-allocate read of a is not counted).
  double pass(int threads);

 private:
  int64_t n_;
  std::unique_ptr<double[]> a_, b_, c_;
};

}  // namespace minkowski_app
