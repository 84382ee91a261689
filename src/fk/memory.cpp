#include "fk/memory.h"

#include <cstdlib>
#include <mutex>
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

size_t block_size(size_t n) {
  if (n <= kMinBlock) return kMinBlock;
  if (n <= (kMinBlock << (kNumSmallClasses - 1))) return size_t{1} << (64 - __builtin_clzll(n - 1));
  return (n + kLargeStep - 1) / kLargeStep * kLargeStep;
}

class CpuCachingAllocator {
 public:
  void* allocate(size_t n) {
    size_t b = block_size(n);
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.num_allocs;
    stats_.allocated += static_cast<int64_t>(n);
    if (stats_.allocated > stats_.peak) stats_.peak = stats_.allocated;
    auto& list = free_list(b);
    for (size_t i = list.size(); i-- > 0;) {
      if (list[i].size == b) {
        void* p = list[i].ptr;
        list[i] = list.back();
        list.pop_back();
        ++stats_.cache_hits;
        return p;
      }
    }
    void* p = std::aligned_alloc(64, b);
    if (!p) {
      empty_locked();
      p = std::aligned_alloc(64, b);
    }
    if (!p) {
      stats_.allocated -= static_cast<int64_t>(n);
      throw Error("CPU allocator", std::to_string(b) + " free bytes", "out of memory");
    }
    stats_.reserved += static_cast<int64_t>(b);
    return p;
  }

  void deallocate(void* p, size_t n) {
    if (!p) return;
    size_t b = block_size(n);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.allocated -= static_cast<int64_t>(n);
    free_list(b).push_back({p, b});
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
  struct Block {
    void* ptr;
    size_t size;
  };
  std::vector<Block>& free_list(size_t b) {
    if (b <= (kMinBlock << (kNumSmallClasses - 1))) {
      return small_[__builtin_ctzll(b) - __builtin_ctzll(kMinBlock)];
    }
    return large_;
  }
  void empty_locked() {
    auto release = [&](std::vector<Block>& list) {
      for (auto& blk : list) {
        std::free(blk.ptr);
        stats_.reserved -= static_cast<int64_t>(blk.size);
      }
      list.clear();
    };
    for (auto& l : small_) release(l);
    release(large_);
  }

  std::mutex mu_;
  std::vector<Block> small_[kNumSmallClasses];
  std::vector<Block> large_;
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
