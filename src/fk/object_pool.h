#pragma once
// A per-thread free list for the small fixed-size objects every op creates
// (a TensorImpl and a Storage with their shared_ptr control blocks), so that
// creating a tensor never reaches malloc on the hot path. Blocks are kept per
// thread (a block freed on another thread joins that thread's list) and only
// plain thread_locals are used, so nothing is destroyed at thread exit.
#include <cstddef>
#include <new>

namespace fk {

template <size_t Size>
class BlockFreeList {
 public:
  static void* pop() {
#if !defined(__SANITIZE_ADDRESS__)
    if (Node* n = head_) {
      head_ = n->next;
      --count_;
      return n;
    }
#endif
    return ::operator new(Size);
  }
  static void push(void* p) {
#if !defined(__SANITIZE_ADDRESS__)
    if (count_ < kMaxCached) {
      auto* n = static_cast<Node*>(p);
      n->next = head_;
      head_ = n;
      ++count_;
      return;
    }
#endif
    ::operator delete(p);
  }

 private:
  struct Node {
    Node* next;
  };
  static constexpr int kMaxCached = 4096;
  static inline thread_local Node* head_ = nullptr;
  static inline thread_local int count_ = 0;
};

// std::allocate_shared allocator drawing single objects from BlockFreeList.
template <typename T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) {}  // NOLINT: rebinding is implicit by design
  T* allocate(size_t n) {
    if (n == 1) return static_cast<T*>(BlockFreeList<sizeof(T)>::pop());
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) {
    if (n == 1) return BlockFreeList<sizeof(T)>::push(p);
    ::operator delete(p);
  }
  template <typename U>
  bool operator==(const PoolAllocator<U>&) const {
    return true;
  }
};

}  // namespace fk
