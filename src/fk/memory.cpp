#include "fk/memory.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "fk/cuda/runtime.h"
#include "fk/error.h"

namespace fk {
namespace {

// Size classes: powers of two from 64 B up to 4 MiB, then multiples of 2 MiB.
// Small blocks waste at most 2x; large blocks at most 2 MiB.
constexpr size_t kMinBlock = 64;
constexpr size_t kLargeStep = size_t{2} << 20;
constexpr int kNumSmallClasses = 17;  // 64 B .. 4 MiB
constexpr size_t kLargestSmall = kMinBlock << (kNumSmallClasses - 1);
// The free large blocks kept for reuse stay within the most bytes of large
// blocks ever live at once (since the start or empty_cache; at least this):
// a loop whose sizes vary (point clouds of any count) would otherwise keep
// one block of every size it ever saw, while a loop of fixed sizes keeps
// every block it frees. Block bytes, not requested ones, so that blocks
// rounded up or reused a quarter larger still fit; not MemoryStats::peak,
// which reset_peak_memory lowers while a profile measures.
constexpr size_t kLargeCacheFloor = size_t{64} << 20;

size_t block_size(size_t n) {
  if (n <= kMinBlock) return kMinBlock;
  if (n <= kLargestSmall) return size_t{1} << (64 - __builtin_clzll(n - 1));
  return (n + kLargeStep - 1) / kLargeStep * kLargeStep;
}

// Small blocks: one free list per class, exact reuse. Large blocks: the
// smallest free one that holds the request and wastes at most a quarter of
// it (best fit), its size remembered while it is live, the free ones
// bounded (kLargeCacheFloor above), the one freed longest ago returned to
// the system first: returning the largest unmapped a block a loop reuses
// every step while one-off buffers freed once stayed (a convolution's
// staging page-faulted back in on every call after a benchmark's sgemm
// operands were freed).
class CpuCachingAllocator {
 public:
  void* allocate(size_t n) {
    const size_t b = block_size(n);
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.num_allocs;
    stats_.allocated += static_cast<int64_t>(n);
    if (stats_.allocated > stats_.peak) stats_.peak = stats_.allocated;
    if (void* p = b <= kLargestSmall ? reuse_small(b) : reuse_large(b)) {
      ++stats_.cache_hits;
      return p;
    }
    void* p = std::aligned_alloc(64, b);
    if (!p) {
      empty_locked();
      p = std::aligned_alloc(64, b);
    }
    if (!p) {
      stats_.allocated -= static_cast<int64_t>(n);
      throw Error("CPU allocator", fk::to_text(b) + " free bytes", "out of memory");
    }
    stats_.reserved += static_cast<int64_t>(b);
    if (b > kLargestSmall) lend_large(p, b);
    return p;
  }

  void deallocate(void* p, size_t n) {
    if (!p) return;
    const size_t b = block_size(n);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.allocated -= static_cast<int64_t>(n);
    if (b <= kLargestSmall) {
      small_[class_of(b)].push_back(p);
      return;
    }
    const size_t size = live_large_.extract(p).mapped();  // allocate lent every large block
    const uint64_t seq = next_seq_++;
    freed_order_.emplace(seq, large_.emplace(size, FreeBlock{p, seq}));
    cached_large_ += size;
    live_large_bytes_ -= size;
    const size_t limit = std::max(kLargeCacheFloor, large_high_water_);
    while (cached_large_ > limit) release(freed_order_.begin()->second);
  }

  MemoryStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void reset_peak() {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak = stats_.allocated;
  }
  void empty() {
    std::lock_guard<std::mutex> lock(mu_);
    empty_locked();
  }

 private:
  static int class_of(size_t b) { return __builtin_ctzll(b) - __builtin_ctzll(kMinBlock); }
  void* reuse_small(size_t b) {
    std::vector<void*>& list = small_[class_of(b)];
    if (list.empty()) return nullptr;
    void* p = list.back();
    list.pop_back();
    return p;
  }
  void* reuse_large(size_t b) {
    const auto it = large_.lower_bound(b);
    if (it == large_.end() || it->first > b + b / 4) return nullptr;
    void* p = it->second.p;
    lend_large(p, it->first);
    cached_large_ -= it->first;
    freed_order_.erase(it->second.seq);
    large_.erase(it);
    return p;
  }
  void lend_large(void* p, size_t size) {
    live_large_[p] = size;
    live_large_bytes_ += size;
    large_high_water_ = std::max(large_high_water_, live_large_bytes_);
  }
  struct FreeBlock {
    void* p;
    uint64_t seq;  // when it was freed: its key in freed_order_
  };
  using FreeLarge = std::multimap<size_t, FreeBlock>;
  void release(FreeLarge::iterator it) {
    std::free(it->second.p);
    stats_.reserved -= static_cast<int64_t>(it->first);
    cached_large_ -= it->first;
    freed_order_.erase(it->second.seq);
    large_.erase(it);
  }
  void empty_locked() {
    for (int c = 0; c < kNumSmallClasses; ++c) {
      for (void* p : small_[c]) std::free(p);
      stats_.reserved -= static_cast<int64_t>(small_[c].size() * (kMinBlock << c));
      small_[c].clear();
    }
    while (!large_.empty()) release(large_.begin());
    large_high_water_ = live_large_bytes_;  // the cache starts over
  }

  std::mutex mu_;
  std::vector<void*> small_[kNumSmallClasses];
  FreeLarge large_;                                      // free: size -> block
  std::map<uint64_t, FreeLarge::iterator> freed_order_;  // large_'s blocks, oldest first
  uint64_t next_seq_ = 0;
  std::unordered_map<void*, size_t> live_large_;  // handed out: block -> size
  size_t cached_large_ = 0;                       // bytes in large_
  size_t live_large_bytes_ = 0;                   // bytes in live_large_
  size_t large_high_water_ = 0;                   // the most live_large_bytes_
  MemoryStats stats_;
};

CpuCachingAllocator& cpu_allocator() {
  // Leaked on purpose: tensors in static objects may be freed after main returns.
  static auto* a = new CpuCachingAllocator();
  return *a;
}

}  // namespace

void* allocate(Device d, size_t nbytes) {
  if (d.is_cpu()) return cpu_allocator().allocate(nbytes);
  return cuda::pool_allocate(d.index, nbytes);
}

void deallocate(Device d, void* p, size_t nbytes) {
  if (d.is_cpu()) return cpu_allocator().deallocate(p, nbytes);
  cuda::pool_deallocate(d.index, p, nbytes);
}

MemoryStats memory_stats(Device d) {
  if (d.is_cpu()) return cpu_allocator().stats();
  auto s = cuda::pool_stats(d.index);
  return MemoryStats{s.allocated, s.peak, s.reserved, s.num_allocs, 0};
}

void reset_peak_memory(Device d) {
  if (d.is_cpu()) return cpu_allocator().reset_peak();
  cuda::pool_reset_peak(d.index);
}

void empty_cache(Device d) {
  if (d.is_cpu()) return cpu_allocator().empty();
  cuda::pool_trim(d.index);
}

}  // namespace fk
