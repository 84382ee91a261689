#pragma once
// fk's memory: a caching allocator per device. CPU blocks are 64-byte aligned and
// kept in size-class free lists, so an op on a small tensor never reaches malloc;
// free blocks over 4 MiB are reused by best fit (a quarter of waste at most) and
// kept only up to the most such bytes live at once (at least 64 MiB), the
// largest going back to the system first. CUDA blocks come from the stream-ordered pool of the
// current stream.
#include <cstddef>
#include <cstdint>

#include "fk/device.h"

namespace fk {

struct MemoryStats {
  int64_t allocated = 0;   // bytes in live blocks (as requested by tensors)
  int64_t peak = 0;        // highest `allocated` since start or the last reset_peak
  int64_t reserved = 0;    // bytes held from the system: live plus cached blocks
  int64_t num_allocs = 0;  // number of allocate() calls
  int64_t cache_hits = 0;  // of those, how many were served from the cache
};

void* allocate(Device d, size_t nbytes);
void deallocate(Device d, void* p, size_t nbytes);

MemoryStats memory_stats(Device d = kCPU);
void reset_peak_memory(Device d = kCPU);
// Returns cached (free) blocks to the system; live blocks are untouched. The
// large blocks' high water mark starts over from the live ones.
void empty_cache(Device d = kCPU);

}  // namespace fk
