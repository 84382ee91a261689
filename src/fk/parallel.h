#pragma once
// CPU threading. A cold OpenMP team costs milliseconds to wake on these VMs and
// a hot one ~0.4 µs (../shared/reference/machine.md), so work below a grain size
// runs on the calling thread and never touches the team.
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "fk/profile.h"

namespace fk {

// Threads fk's parallel loops use. Defaults to OMP_NUM_THREADS when set, else
// the number of cores. Also sets OpenBLAS's thread count. n <= 0 means 1;
// n above 4096 is an fk::Error.
void set_num_threads(int n);
int get_num_threads();

// Calls f(begin, end) on sub-ranges of [begin, end) of at least `grain`
// iterations, in parallel when there are two or more such ranges and we are not
// already inside a parallel region. Chunks are split by index only, so a
// reduction that combines per-chunk results in chunk order is deterministic for
// a given thread count; use a fixed chunk size for thread-count independence.
// A parallel call counts one launch, and what its worker threads count joins
// the calling thread's counters (profile.h's RegionCounts).
template <typename F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  int64_t n = end - begin;
  if (n <= 0) return;
  int64_t chunks = std::min<int64_t>(get_num_threads(), n / std::max<int64_t>(grain, 1));
  if (chunks <= 1 || omp_in_parallel()) {
    f(begin, end);
    return;
  }
  profile::count_launch();
  profile::RegionCounts counts;
#pragma omp parallel num_threads(static_cast <int>(chunks))
  {
    const profile::RegionCounts::Worker worker(counts);
    int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t lo = begin + n * t / nt, hi = begin + n * (t + 1) / nt;
    if (lo < hi) f(lo, hi);
  }
}

}  // namespace fk
