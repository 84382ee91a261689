#pragma once
// src/minkowski/cuda/cp_async.cuh on the emulated device (emulated_device.h).
// A copy reads its source when issued (zeros when absent, as src-size 0
// gives) but lands in shared memory only when its thread waits for its
// group, the latest the device allows: a kernel that reads a buffer before
// waiting for the copies into it, or waits for too few groups, reads stale
// data here too. Copies still pending when a thread of another block (or a
// later launch's block with the same index) calls one of these are dropped,
// as the device drops a finished block's shared memory. Alignment (16 bytes
// both sides) aborts the test with a message, as the device would fault.
// Not modelled: a source written between the issue and the wait.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda_emu/emulated_device.h"

namespace minkowski::cuda {

namespace cp_async_emu {

struct Copy {
  void* shared;
  unsigned char bytes[16];
  int64_t group;
};
// One thread's copies not yet landed, and its groups committed so far.
struct Pending {
  uint3 block{~0u, ~0u, ~0u};
  std::vector<Copy> copies;
  int64_t committed = 0;
};

// The running thread's (blocks run one at a time).
inline Pending& pending() {
  static std::vector<Pending> threads;
  const uint3 t = ::fkemu::thread_index(), b = ::fkemu::block_index();
  const dim3 d = ::fkemu::block_dims();
  const size_t i = t.x + d.x * (t.y + size_t{d.y} * t.z);
  if (threads.size() <= i) threads.resize(i + 1);
  Pending& p = threads[i];
  if (p.block.x != b.x || p.block.y != b.y || p.block.z != b.z) p = Pending{b, {}, 0};
  return p;
}

inline void check_aligned(const void* p, const char* which) {
  if (reinterpret_cast<uintptr_t>(p) % 16 == 0) return;
  std::fprintf(stderr, "fkemu: cp.async: %s address not 16-byte aligned (the device would fault)\n",
               which);
  std::abort();
}

}  // namespace cp_async_emu

inline void copy_16_bytes(void* shared, const void* global, bool present) {
  cp_async_emu::check_aligned(shared, "shared");
  cp_async_emu::Pending& p = cp_async_emu::pending();
  cp_async_emu::Copy c{shared, {}, p.committed};
  if (present) {
    cp_async_emu::check_aligned(global, "global");
    std::memcpy(c.bytes, global, 16);
  }
  p.copies.push_back(c);
}
inline void commit_copies() {
  ++cp_async_emu::pending().committed;
}
// Lands the copies of every committed group but the newest kPending (those
// not yet committed stay pending too).
template <int kPending>
void wait_copies() {
  cp_async_emu::Pending& p = cp_async_emu::pending();
  std::vector<cp_async_emu::Copy> later;
  for (const cp_async_emu::Copy& c : p.copies)
    if (c.group < p.committed - kPending)
      std::memcpy(c.shared, c.bytes, 16);
    else
      later.push_back(c);
  p.copies.swap(later);
}

}  // namespace minkowski::cuda
