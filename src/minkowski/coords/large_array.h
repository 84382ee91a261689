#pragma once
// Arrays of kernel-map size (megabytes, written once right after allocation).
// On VMs every 4 KiB page fault costs microseconds, which made first-touch
// page faults the largest part of building a kernel map; arrays of 2 MiB and
// more are therefore 2 MiB-aligned and advised for transparent huge pages
// (Linux, THP in "madvise" mode), and elements are default-initialised (no
// zero-fill pass before the real write).
#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

namespace minkowski {

template <typename T>
struct LargePageAllocator {
  using value_type = T;
  static constexpr size_t kHuge = size_t{2} << 20;

  LargePageAllocator() = default;
  template <typename U>
  LargePageAllocator(const LargePageAllocator<U>&) {}

  T* allocate(size_t n) {
    size_t bytes = n * sizeof(T);
    void* p = nullptr;
    if (bytes >= kHuge) {
      p = std::aligned_alloc(kHuge, (bytes + kHuge - 1) / kHuge * kHuge);
      if (p) madvise(p, bytes, MADV_HUGEPAGE);  // advice only: failure is harmless
    } else {
      p = std::malloc(bytes ? bytes : 1);
    }
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  // resize() leaves trivial elements uninitialised.
  template <typename U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
  bool operator==(const LargePageAllocator&) const { return true; }
};

template <typename T>
using LargeArray = std::vector<T, LargePageAllocator<T>>;

}  // namespace minkowski
