#pragma once
// Shared by the CUDA benchmarks: the skip where no device is usable, fk's
// current stream on device 0, and a pair of CUDA events timing work enqueued
// on it (seconds between start() and stop_seconds(), or of one body call).
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <string>

#include "fk/cuda/runtime.h"

namespace fk_bench {

inline bool skip_without_device(benchmark::State& state) {
  if (fk::cuda::device_count() > 0) return false;
  static const std::string why =
      std::string("no usable CUDA device: ") + fk::cuda::no_device_reason();
  state.SkipWithError(why.c_str());
  return true;
}

inline cudaStream_t current_stream() {
  return static_cast<cudaStream_t>(fk::cuda::current_stream(0));
}

class EventTimer {
 public:
  EventTimer() {
    cudaEventCreate(&start_);
    cudaEventCreate(&stop_);
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start() { cudaEventRecord(start_, current_stream()); }
  double stop_seconds() {
    cudaEventRecord(stop_, current_stream());
    cudaEventSynchronize(stop_);
    float ms = 0;
    cudaEventElapsedTime(&ms, start_, stop_);
    return static_cast<double>(ms) * 1e-3;
  }
  template <typename Body>
  double seconds(Body&& body) {
    start();
    body();
    return stop_seconds();
  }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace fk_bench
