// The emulated CUDA runtime's memory: device allocations (host memory,
// 0xff-filled so that a read before any write shows as NaN), the default
// stream-ordered pool and its counters, pinned host memory and graph
// allocations (copies and fills: cudart_copies.cpp). The device holds
// FKEMU_DEVICE_MEMORY_BYTES (default 141 GB, an H200's): an allocation past
// it fails with cudaErrorMemoryAllocation, so out-of-memory paths can be
// tested. Device memory is registered by address so that a copy or fill
// naming freed memory, a range past an allocation's end, or host memory
// where the copy's kind says device is refused (CUDA leaves those undefined).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unordered_map>

#include "emulated_runtime.h"

namespace fkemu::runtime {

uint64_t device_bytes() {
  const char* v = std::getenv("FKEMU_DEVICE_MEMORY_BYTES");
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : uint64_t{141'000'000'000};
}

namespace {

struct Allocation {
  size_t bytes = 0;
  enum class Kind { kMalloc, kPool, kGraph } kind = Kind::kMalloc;
  GraphBlock* block = nullptr;  // kGraph's
};

// The default pool's counters, as cudaMemPoolGetAttribute reports them: used
// is what live stream-ordered allocations hold (a free counts when it runs
// in its stream's order), reserved what the pool holds from the device.
struct Pool {
  uint64_t release_threshold = 0;
  uint64_t reserved = 0, reserved_high = 0;
  uint64_t used = 0, used_high = 0;
};

struct Memory {
  std::map<uintptr_t, Allocation> device;
  std::map<uintptr_t, std::pair<size_t, unsigned>> pinned;  // bytes, cudaHostAlloc flags
  std::unordered_map<void*, std::unique_ptr<GraphBlock>> graph_blocks;
  uint64_t malloc_bytes = 0;  // cudaMalloc's
  uint64_t graph_bytes = 0;
  Pool pool;
};

Memory& memory() {
  static Memory* m = new Memory;
  return *m;
}

cudaMemPool_t default_pool() {
  return reinterpret_cast<cudaMemPool_t>(&memory().pool);
}

// Whether `more` bytes fit beside what the device holds.
bool fits(uint64_t more) {
  const Memory& m = memory();
  return m.malloc_bytes + m.graph_bytes + m.pool.reserved + more <= device_bytes();
}

// CUDA aligns allocations to 256 bytes; the size stays exact so that ASan
// sees a read past the end.
void* allocate(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes) != 0) return nullptr;
  std::memset(p, 0xff, bytes);
  return p;
}

uintptr_t address(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

// The allocation of `ranges` that holds p; end() when none does.
template <typename Map>
auto holder(Map& ranges, const void* p) {
  auto it = ranges.upper_bound(address(p));
  if (it == ranges.begin()) return ranges.end();
  --it;
  const size_t bytes = [&] {
    if constexpr (std::is_same_v<typename Map::mapped_type, Allocation>)
      return it->second.bytes;
    else
      return it->second.first;
  }();
  return address(p) < it->first + std::max<size_t>(bytes, 1) ? it : ranges.end();
}

void release_if_unused(GraphBlock* b) {
  if (b->held || b->outstanding || b->pending_frees > 0) return;
  Memory& m = memory();
  const auto it = m.device.find(address(b->address));
  if (it != m.device.end() && it->second.block == b) m.device.erase(it);
  m.graph_bytes -= b->bytes;
  std::free(b->address);
  m.graph_blocks.erase(b->address);
}

void register_graph_block(GraphBlock* b) {
  memory().device[address(b->address)] = Allocation{b->bytes, Allocation::Kind::kGraph, b};
}

// cudaMallocAsync on a capturing stream: the graph's allocation node.
cudaError_t allocate_in_capture(Capture& c, void** p, size_t bytes) {
  if (c.invalidated) return cudaErrorStreamCaptureInvalidated;
  void* a = fits(bytes) ? allocate(bytes) : nullptr;
  if (a == nullptr) {
    c.invalidated = true;
    return cudaErrorMemoryAllocation;
  }
  Memory& m = memory();
  auto block = std::make_unique<GraphBlock>();
  block->address = a;
  block->bytes = bytes;
  GraphBlock* b = block.get();
  m.graph_blocks[a] = std::move(block);
  m.graph_bytes += bytes;
  register_graph_block(b);
  c.body->blocks.push_back(b);
  // Each launch allocates it afresh: its contents are undefined again.
  c.body->nodes.push_back([a, bytes] { std::memset(a, 0xff, bytes); });
  *p = a;
  return cudaSuccess;
}

// cudaFreeAsync on a capturing stream: the graph's free node, for one of the
// capture's own allocations only.
cudaError_t free_in_capture(Capture& c, const Allocation& a) {
  if (c.invalidated) return cudaErrorStreamCaptureInvalidated;
  const auto& blocks = c.body->blocks;
  if (a.kind != Allocation::Kind::kGraph || a.block->freed_in_graph ||
      std::find(blocks.begin(), blocks.end(), a.block) == blocks.end()) {
    c.invalidated = true;
    return cudaErrorInvalidValue;
  }
  a.block->freed_in_graph = true;
  memory().device.erase(address(a.block->address));
  c.body->nodes.push_back([] {});
  return cudaSuccess;
}

// The host frees what a graph launch allocated.
cudaError_t free_graph_allocation(GraphBlock* b) {
  if (!b->outstanding) return cudaErrorInvalidValue;
  b->outstanding = false;
  memory().device.erase(address(b->address));
  release_if_unused(b);
  return cudaSuccess;
}

// Frees `at` (an allocation of the device registry) at once.
void free_device(std::map<uintptr_t, Allocation>::iterator at) {
  Memory& m = memory();
  const Allocation a = at->second;
  void* p = reinterpret_cast<void*>(at->first);
  m.device.erase(at);
  if (a.kind == Allocation::Kind::kPool)
    m.pool.used -= a.bytes;
  else
    m.malloc_bytes -= a.bytes;
  std::free(p);
}

cudaError_t host_alloc(void** p, size_t bytes, unsigned flags) {
  if (p == nullptr ||
      (flags & ~unsigned{cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined}))
    return record(cudaErrorInvalidValue);
  Lock lock(mutex());
  if (const cudaError_t e = refuse_unsafe_call()) return record(e);
  *p = nullptr;
  if (bytes == 0) return cudaSuccess;
  *p = allocate(bytes);
  if (*p == nullptr) return record(cudaErrorMemoryAllocation);
  memory().pinned[address(*p)] = {bytes, flags};
  return cudaSuccess;
}

}  // namespace

Place place_of(const void* p, size_t bytes, cudaError_t* error) {
  Memory& m = memory();
  if (const auto it = holder(m.device, p); it != m.device.end()) {
    if (address(p) + bytes > it->first + it->second.bytes) *error = cudaErrorInvalidValue;
    return Place::kDevice;
  }
  if (const auto it = holder(m.pinned, p); it != m.pinned.end()) {
    if (address(p) + bytes > it->first + it->second.first) *error = cudaErrorInvalidValue;
    return Place::kPinned;
  }
  return Place::kPageable;
}

void release_pool_excess() {
  Pool& p = memory().pool;
  if (p.reserved > p.release_threshold) p.reserved = std::max(p.used, p.release_threshold);
}

cudaError_t launch_graph_blocks(const std::vector<GraphBlock*>& blocks, bool auto_free) {
  for (const GraphBlock* b : blocks)
    if (!b->freed_in_graph && b->outstanding && !auto_free) return cudaErrorInvalidValue;
  for (GraphBlock* b : blocks)
    if (!b->freed_in_graph) {
      b->outstanding = true;
      register_graph_block(b);
    }
  return cudaSuccess;
}

void release_graph_blocks(const std::vector<GraphBlock*>& blocks) {
  for (GraphBlock* b : blocks) {
    b->held = false;
    release_if_unused(b);
  }
}

}  // namespace fkemu::runtime

using fkemu::runtime::find_stream;
using fkemu::runtime::Lock;
using fkemu::runtime::mutex;
using fkemu::runtime::record;
using fkemu::runtime::Stream;

extern "C" {

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (devPtr == nullptr) return record(cudaErrorInvalidValue);
  Lock lock(mutex());
  if (const cudaError_t e = fkemu::runtime::refuse_unsafe_call()) return record(e);
  auto& m = fkemu::runtime::memory();
  *devPtr = nullptr;
  if (size == 0) return cudaSuccess;
  void* p = fkemu::runtime::fits(size) ? fkemu::runtime::allocate(size) : nullptr;
  if (p == nullptr) return record(cudaErrorMemoryAllocation);
  m.device[fkemu::runtime::address(p)] = {size, fkemu::runtime::Allocation::Kind::kMalloc, nullptr};
  m.malloc_bytes += size;
  *devPtr = p;
  return cudaSuccess;
}

// Waits for the whole device first, as CUDA's cudaFree does.
cudaError_t cudaFree(void* devPtr) {
  if (devPtr == nullptr) return cudaSuccess;
  Lock lock(mutex());
  if (const cudaError_t e = fkemu::runtime::refuse_unsafe_call()) return record(e);
  fkemu::runtime::drain_all();
  auto& m = fkemu::runtime::memory();
  const auto it = m.device.find(fkemu::runtime::address(devPtr));
  if (it == m.device.end()) return record(cudaErrorInvalidValue);
  if (it->second.kind == fkemu::runtime::Allocation::Kind::kGraph)
    return record(fkemu::runtime::free_graph_allocation(it->second.block));
  fkemu::runtime::free_device(it);
  return cudaSuccess;
}

cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  if (devPtr == nullptr) return record(cudaErrorInvalidValue);
  Lock lock(mutex());
  Stream* s = find_stream(hStream);
  if (s == nullptr) return record(cudaErrorInvalidResourceHandle);
  *devPtr = nullptr;
  if (size == 0) return cudaSuccess;
  if (s->capture) return record(fkemu::runtime::allocate_in_capture(*s->capture, devPtr, size));
  if (s->legacy) {
    if (Stream* b = fkemu::runtime::blocking_stream_capturing()) {
      b->capture->invalidated = true;
      return record(cudaErrorStreamCaptureImplicit);
    }
  }
  auto& pool = fkemu::runtime::memory().pool;
  const uint64_t used = pool.used + size;
  if (used > pool.reserved && !fkemu::runtime::fits(used - pool.reserved))
    return record(cudaErrorMemoryAllocation);
  void* p = fkemu::runtime::allocate(size);
  if (p == nullptr) return record(cudaErrorMemoryAllocation);
  pool.used = used;
  pool.used_high = std::max(pool.used_high, used);
  pool.reserved = std::max(pool.reserved, used);
  pool.reserved_high = std::max(pool.reserved_high, pool.reserved);
  fkemu::runtime::memory().device[fkemu::runtime::address(p)] = {
      size, fkemu::runtime::Allocation::Kind::kPool, nullptr};
  *devPtr = p;
  return cudaSuccess;
}

cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                    cudaStream_t stream) {
  if (memPool != fkemu::runtime::default_pool()) return record(cudaErrorInvalidValue);
  return cudaMallocAsync(ptr, size, stream);
}

// Freed in the stream's order; a use of the pointer after the call is
// refused at once.
cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  Lock lock(mutex());
  Stream* s = find_stream(hStream);
  if (s == nullptr) return record(cudaErrorInvalidResourceHandle);
  if (devPtr == nullptr) return cudaSuccess;
  auto& m = fkemu::runtime::memory();
  const auto it = m.device.find(fkemu::runtime::address(devPtr));
  if (it == m.device.end()) {
    if (s->capture) s->capture->invalidated = true;
    return record(cudaErrorInvalidValue);
  }
  if (s->capture) return record(fkemu::runtime::free_in_capture(*s->capture, it->second));
  if (it->second.kind == fkemu::runtime::Allocation::Kind::kGraph) {
    // Freed at once for the graph's next launch (after it in stream order),
    // its memory at the stream's turn: work queued before still reads it.
    fkemu::runtime::GraphBlock* const b = it->second.block;
    ++b->pending_frees;
    if (const cudaError_t e = fkemu::runtime::free_graph_allocation(b)) {
      --b->pending_frees;
      return record(e);
    }
    return record(fkemu::runtime::enqueue(*s, [b] {
      --b->pending_frees;
      fkemu::runtime::release_if_unused(b);
    }));
  }
  const fkemu::runtime::Allocation a = it->second;
  const cudaError_t e = fkemu::runtime::enqueue(*s, [devPtr, a] {
    auto& m = fkemu::runtime::memory();
    if (a.kind == fkemu::runtime::Allocation::Kind::kPool)
      m.pool.used -= a.bytes;
    else
      m.malloc_bytes -= a.bytes;
    std::free(devPtr);
  });
  if (e == cudaSuccess) m.device.erase(it);
  return record(e);
}

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  return fkemu::runtime::host_alloc(pHost, size, flags);
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  return fkemu::runtime::host_alloc(ptr, size, cudaHostAllocDefault);
}

// Waits for the whole device first, as CUDA's cudaFreeHost does.
cudaError_t cudaFreeHost(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  Lock lock(mutex());
  if (const cudaError_t e = fkemu::runtime::refuse_unsafe_call()) return record(e);
  fkemu::runtime::drain_all();
  auto& pinned = fkemu::runtime::memory().pinned;
  const auto it = pinned.find(fkemu::runtime::address(ptr));
  if (it == pinned.end()) return record(cudaErrorInvalidValue);
  pinned.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

// The device sees mapped pinned memory at its host address (unified
// addressing); memory allocated without cudaHostAllocMapped is refused.
cudaError_t cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags) {
  if (pDevice == nullptr || flags != 0) return record(cudaErrorInvalidValue);
  Lock lock(mutex());
  auto& pinned = fkemu::runtime::memory().pinned;
  const auto it = fkemu::runtime::holder(pinned, pHost);
  if (it == pinned.end() || (it->second.second & cudaHostAllocMapped) == 0)
    return record(cudaErrorInvalidValue);
  *pDevice = pHost;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  if (memPool == nullptr) return record(cudaErrorInvalidValue);
  if (device != 0) return record(cudaErrorInvalidDevice);
  *memPool = fkemu::runtime::default_pool();
  return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
  if (memPool != fkemu::runtime::default_pool() || value == nullptr)
    return record(cudaErrorInvalidValue);
  Lock lock(mutex());
  auto& pool = fkemu::runtime::memory().pool;
  const uint64_t v = *static_cast<const uint64_t*>(value);
  switch (attr) {
    case cudaMemPoolAttrReleaseThreshold:
      pool.release_threshold = v;
      return cudaSuccess;
    // The high-water marks can only be reset (to the current value).
    case cudaMemPoolAttrReservedMemHigh:
      if (v != 0) return record(cudaErrorInvalidValue);
      pool.reserved_high = pool.reserved;
      return cudaSuccess;
    case cudaMemPoolAttrUsedMemHigh:
      if (v != 0) return record(cudaErrorInvalidValue);
      pool.used_high = pool.used;
      return cudaSuccess;
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
      return cudaSuccess;
    default:
      return record(cudaErrorInvalidValue);
  }
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
  if (memPool != fkemu::runtime::default_pool() || value == nullptr)
    return record(cudaErrorInvalidValue);
  Lock lock(mutex());
  const auto& pool = fkemu::runtime::memory().pool;
  uint64_t v = 0;
  switch (attr) {
    case cudaMemPoolAttrReleaseThreshold:
      v = pool.release_threshold;
      break;
    case cudaMemPoolAttrReservedMemCurrent:
      v = pool.reserved;
      break;
    case cudaMemPoolAttrReservedMemHigh:
      v = pool.reserved_high;
      break;
    case cudaMemPoolAttrUsedMemCurrent:
      v = pool.used;
      break;
    case cudaMemPoolAttrUsedMemHigh:
      v = pool.used_high;
      break;
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
      *static_cast<int*>(value) = 1;
      return cudaSuccess;
    default:
      return record(cudaErrorInvalidValue);
  }
  std::memcpy(value, &v, sizeof v);
  return cudaSuccess;
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
  if (memPool != fkemu::runtime::default_pool()) return record(cudaErrorInvalidValue);
  Lock lock(mutex());
  auto& pool = fkemu::runtime::memory().pool;
  pool.reserved = std::max<uint64_t>(pool.used, std::min<uint64_t>(pool.reserved, minBytesToKeep));
  return cudaSuccess;
}

}  // extern "C"
