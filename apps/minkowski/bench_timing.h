#pragma once
// Timing helpers of the `minkowski bench` commands: wall and process CPU
// clocks, medians of repeated runs, seeded operands, scoped knob overrides.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "fk/fk.h"

namespace minkowski_app {

inline double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// CPU time of the whole process (all threads): on a shared, loaded machine
// this is steadier than wall time (it excludes time spent descheduled).
inline double cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// Minimum CPU time over the runs, recorded by median_ms: as min_times's
// `cpu` (below), the wall time when fk runs more than one thread.
inline thread_local double g_last_cpu_ms = 0;

inline double median_ms(int repeats, const std::function<void()>& f) {
  std::vector<double> t;
  double best_cpu = 1e300;
  const bool threaded = fk::get_num_threads() > 1;
  for (int i = 0; i < repeats; ++i) {
    double t0 = now_ms(), c0 = cpu_ms();
    f();
    t.push_back(now_ms() - t0);
    best_cpu = std::min(best_cpu, threaded ? t.back() : cpu_ms() - c0);
  }
  g_last_cpu_ms = best_cpu;
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The least disturbed of `repeats` runs by each clock: wall ms, and `cpu`,
// what the run would take undisturbed. At one thread that is the process CPU
// ms (immune to other jobs on the machine); at more it is the wall ms, since
// pool threads that sleep through part of a call make CPU ms / threads
// undercount (a 2-thread forward read 123 % of the FMA peak that way).
struct MinTimes {
  double wall = 1e300, cpu = 1e300;
};
inline MinTimes min_times(int repeats, int threads, const std::function<void()>& f) {
  MinTimes m;
  for (int i = 0; i < repeats; ++i) {
    double t0 = now_ms(), c0 = cpu_ms();
    f();
    const double wall = now_ms() - t0;
    m.wall = std::min(m.wall, wall);
    m.cpu = std::min(m.cpu, threads > 1 ? wall : cpu_ms() - c0);
  }
  return m;
}

inline fk::Tensor random_uniform(fk::Dims shape, double scale, uint64_t seed) {
  fk::Tensor t = fk::empty(shape, {fk::DType::F32});
  float* p = t.data<float>();
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    p[i] = static_cast<float>((static_cast<double>(s >> 11) / 9007199254740992.0 * 2 - 1) * scale);
  }
  return t;
}

using fk::KnobOverride;

}  // namespace minkowski_app
