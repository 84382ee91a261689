#pragma once
// Work sharing by blocks handed out on demand (OpenMP dynamic schedule), for
// the kernel-map build and the convolution kernels. A static split gives each
// thread a fixed half: when the halves cost differently (uneven density), or
// another process slows one thread on a shared machine, the other waits. Here
// a thread that finishes early takes more blocks. Which thread runs a block
// never changes what the block computes, so results stay independent of the
// thread count and of timing.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "fk/parallel.h"

namespace minkowski {

// body(each_block) runs once per thread: it sets up that thread's scratch,
// then calls each_block(fn), which calls fn(b) for the blocks b in
// [0, blocks) that this thread gets, `grab` consecutive blocks at a time (so
// neighbouring blocks, which often share data, mostly stay on one core).
// With parallel == false, one call on the calling thread takes every block.
// A parallel call counts one launch, and what its threads count joins the
// calling thread's counters (as fk::parallel_for).
template <typename Body>
void for_blocks(int64_t blocks, int64_t grab, bool parallel, const Body& body) {
  if (!parallel || blocks < 2 || fk::get_num_threads() < 2 || omp_in_parallel()) {
    body([&](const auto& fn) {
      for (int64_t b = 0; b < blocks; ++b) fn(b);
    });
    return;
  }
  fk::profile::count_launch();
  fk::profile::RegionCounts counts;  // what the blocks count, on every thread
#if defined(__clang__)
  // clang 14 crashes compiling an orphaned `omp for` inside a generic lambda
  // (the fuzz build is clang's): a shared counter hands out the blocks, as
  // schedule(dynamic, grab) does.
  std::atomic<int64_t> next{0};
#pragma omp parallel num_threads(fk::get_num_threads())
  {
    const fk::profile::RegionCounts::Worker worker(counts);
    body([&](const auto& fn) {
      for (int64_t b0 = next.fetch_add(grab, std::memory_order_relaxed); b0 < blocks;
           b0 = next.fetch_add(grab, std::memory_order_relaxed))
        for (int64_t b = b0; b < std::min(blocks, b0 + grab); ++b) fn(b);
    });
  }
#else
#pragma omp parallel num_threads(fk::get_num_threads())
  {
    const fk::profile::RegionCounts::Worker worker(counts);
    body([&](const auto& fn) {
#pragma omp for schedule(dynamic, grab) nowait
      for (int64_t b = 0; b < blocks; ++b) fn(b);
    });
  }
#endif
}

}  // namespace minkowski
