#pragma once
// Arrays of kernel-map size (megabytes, written once right after allocation).
// Two costs dominate building such arrays from fresh memory, both in the
// kernel rather than in our code: a page fault per 4 KiB page (microseconds
// each on a VM) and the kernel zero-filling every page. So:
//  - blocks come from fk's caching CPU allocator (fk/memory.h), like tensor
//    storage: the arrays of the previous scene's kernel maps, once freed, are
//    reused by the next build of a similar size without a fault (the cache
//    keys large blocks by size rounded to 2 MiB; fk::empty_cache() returns
//    them to the system);
//  - the 2 MiB-aligned part of a block of 2 MiB or more is advised for
//    transparent huge pages (Linux, THP in "madvise" mode), so a fresh block
//    faults once per 2 MiB instead of once per 4 KiB;
//  - elements are default-initialised (no zero-fill pass before the real
//    write): every user writes every element it reads.
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

#include "fk/device.h"
#include "fk/memory.h"

namespace minkowski {

template <typename T>
struct LargePageAllocator {
  using value_type = T;
  static constexpr size_t kHuge = size_t{2} << 20;

  LargePageAllocator() = default;
  template <typename U>
  LargePageAllocator(const LargePageAllocator<U>&) {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    void* p = fk::allocate(fk::kCPU, bytes);
    if (bytes >= kHuge) {
      // advice only: failure (or a kernel without THP) is harmless
      uintptr_t lo = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) / kHuge * kHuge;
      uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + bytes) / kHuge * kHuge;
      if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
    }
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) { fk::deallocate(fk::kCPU, p, n * sizeof(T)); }
  // resize() leaves trivial elements uninitialised.
  template <typename U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
  template <typename U>
  bool operator==(const LargePageAllocator<U>&) const {
    return true;
  }
};

template <typename T>
using LargeArray = std::vector<T, LargePageAllocator<T>>;

}  // namespace minkowski
