#pragma once
// CUB's two-phase temporary-storage protocol, as the emulated device's CUB
// stand-ins (cub/device/*.cuh here) hold callers to it: the size query
// (d_temp_storage == nullptr) only writes temp_storage_bytes; the work call
// must bring at least that many bytes and no overlap between the scratch and
// any array CUB reads or writes. A broken promise is reported on stderr (the
// launcher only sees an error code) and answered with
// cudaErrorInvalidValue, CUB's code for too little scratch. The scratch is
// filled with a pattern when the work runs, so a caller that keeps live
// data in it sees that data destroyed.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>

namespace cub::emulated {

// Bytes every call asks for beyond its per-item share (CUB's histograms and
// tile descriptors), so that even one item needs an allocation.
inline constexpr size_t kFixedScratchBytes = 512;
inline constexpr unsigned char kScratchPattern = 0xa5;

// A device range CUB touches during the work call.
struct Range {
  const char* name;
  const void* begin;
  size_t bytes;
};

inline cudaError_t refuse(const char* call, const char* why) {
  std::fprintf(stderr, "emulated %s: %s\n", call, why);
  return cudaErrorInvalidValue;
}

// Refuses scratch smaller than `required` and any two overlapping ranges
// (empty ranges overlap nothing).
inline cudaError_t check_work_call(const char* call, size_t given, size_t required,
                                   std::initializer_list<Range> ranges) {
  if (given < required) {
    std::fprintf(stderr,
                 "emulated %s: temp_storage_bytes is %zu, but the size query asked for %zu\n", call,
                 given, required);
    return cudaErrorInvalidValue;
  }
  for (auto a = ranges.begin(); a != ranges.end(); ++a) {
    for (auto b = a + 1; b != ranges.end(); ++b) {
      if (a->bytes == 0 || b->bytes == 0) continue;
      const auto a0 = reinterpret_cast<uintptr_t>(a->begin),
                 b0 = reinterpret_cast<uintptr_t>(b->begin);
      if (a0 < b0 + b->bytes && b0 < a0 + a->bytes) {
        std::fprintf(stderr, "emulated %s: %s [%p, +%zu) overlaps %s [%p, +%zu)\n", call, a->name,
                     a->begin, a->bytes, b->name, b->begin, b->bytes);
        return cudaErrorInvalidValue;
      }
    }
  }
  return cudaSuccess;
}

inline void scribble(void* scratch, size_t bytes) {
  std::memset(scratch, kScratchPattern, bytes);
}

}  // namespace cub::emulated
