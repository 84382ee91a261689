// The emulated CUDA runtime's copies and fills, by where their memory lies
// (emulated_runtime.h's Place): a copy into pageable memory returns when it
// is done, one from pageable memory stages the bytes at the call, one
// between device and pinned memory is the stream's work. The emulator's
// launchers reach these too (fkemu::set_runtime_calls, at static
// initialization).
#include <cuda_runtime.h>

#include <cstring>
#include <memory>
#include <vector>

#include "emulated_runtime.h"

using fkemu::runtime::find_stream;
using fkemu::runtime::Lock;
using fkemu::runtime::mutex;
using fkemu::runtime::Place;
using fkemu::runtime::record;
using fkemu::runtime::Stream;

extern "C" {

// A copy into pageable memory returns when it is done (the stream's earlier
// work runs first); one from pageable memory stages the bytes at the call
// and runs in the stream's order; one between device and pinned memory runs
// in the stream's order. A capture refuses pageable memory.
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
    return record(cudaErrorInvalidMemcpyDirection);
  Lock lock(mutex());
  Stream* s = find_stream(stream);
  if (s == nullptr) return record(cudaErrorInvalidResourceHandle);
  if (count == 0) return cudaSuccess;
  cudaError_t e = cudaSuccess;
  const Place from = fkemu::runtime::place_of(src, count, &e);
  const Place to = fkemu::runtime::place_of(dst, count, &e);
  if (e != cudaSuccess) return record(e);
  // Each side must be what the kind names: device memory (pinned memory is
  // mapped into the device's address space) or host memory.
  if (kind != cudaMemcpyDefault) {
    const bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    const bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    const auto wrong = [](bool device, Place p) {
      return device ? p == Place::kPageable : p == Place::kDevice;
    };
    if (wrong(src_device, from) || wrong(dst_device, to)) return record(cudaErrorInvalidValue);
  }
  if (from != Place::kPageable && to != Place::kPageable)
    return record(fkemu::runtime::enqueue(*s, [=] { std::memmove(dst, src, count); }));
  if (s->capture) {
    s->capture->invalidated = true;
    return record(cudaErrorStreamCaptureUnsupported);
  }
  if (to == Place::kPageable) {
    if (const cudaError_t w = fkemu::runtime::refuse_wait_on(*s)) return record(w);
    fkemu::runtime::drain(*s);
    std::memmove(dst, src, count);
    return cudaSuccess;
  }
  const auto* bytes = static_cast<const unsigned char*>(src);
  auto staged = std::make_shared<std::vector<unsigned char>>(bytes, bytes + count);
  return record(fkemu::runtime::enqueue(
      *s, [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); }));
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  Lock lock(mutex());
  Stream* s = find_stream(stream);
  if (s == nullptr) return record(cudaErrorInvalidResourceHandle);
  if (count == 0) return cudaSuccess;
  cudaError_t e = cudaSuccess;
  if (fkemu::runtime::place_of(devPtr, count, &e) == Place::kPageable) e = cudaErrorInvalidValue;
  if (e != cudaSuccess) return record(e);
  return record(fkemu::runtime::enqueue(*s, [=] { std::memset(devPtr, value, count); }));
}

// The synchronous copy and fill run on the legacy stream and wait for it.
cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  Lock lock(mutex());
  if (const cudaError_t e = fkemu::runtime::refuse_unsafe_call()) return record(e);
  if (const cudaError_t e = cudaMemcpyAsync(dst, src, count, kind, cudaStreamLegacy)) return e;
  return cudaStreamSynchronize(cudaStreamLegacy);
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  Lock lock(mutex());
  if (const cudaError_t e = fkemu::runtime::refuse_unsafe_call()) return record(e);
  if (const cudaError_t e = cudaMemsetAsync(devPtr, value, count, cudaStreamLegacy)) return e;
  return cudaStreamSynchronize(cudaStreamLegacy);
}

}  // extern "C"

namespace {
[[maybe_unused]] const bool g_installed = [] {
  fkemu::set_runtime_calls(
      {&cudaMemcpyAsync, &cudaMemsetAsync, &cudaMallocAsync, &cudaFreeAsync, &cudaGetLastError});
  return true;
}();
}  // namespace
