// capture_running_on and stream_key (see blas_stream.h): the CUDA queries
// behind cuBLAS's and cuFFT's stream binding.
#include <cuda_runtime.h>

#include <cstdint>

#include "fk/cuda/blas_stream.h"
#include "fk/cuda/capture_marks.h"
#include "fk/cuda/device_guard.h"

namespace fk::cuda {
namespace {

// nullptr, cudaStreamLegacy (1) and cudaStreamPerThread (2).
bool default_stream(void* stream) {
  return reinterpret_cast<std::uintptr_t>(stream) <= 2;
}

}  // namespace

bool capture_running_on(int device, void* stream) {
  if (capture_marks().captured_stream(device) != nullptr) return true;
  if (default_stream(stream)) return false;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  detail::check_cuda(cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &status),
                     "cudaStreamIsCapturing");
  return status != cudaStreamCaptureStatusNone;
}

StreamKey stream_key(void* stream, bool capture_running) {
  StreamKey key{stream, 0, false};
  // CUDA refuses the id of a stream under capture.
  if (capture_running || default_stream(stream)) return key;
  detail::check_cuda(cudaStreamGetId(static_cast<cudaStream_t>(stream), &key.id),
                     "cudaStreamGetId");
  key.id_known = true;
  return key;
}

}  // namespace fk::cuda
