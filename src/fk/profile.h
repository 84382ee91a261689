#pragma once
// Profiling counters: every op and every kernel launch bumps a thread-local
// counter (view and metadata ops apart), so ops/step is always measurable. A
// ProfileScope reports the counts, wall time and peak memory of a region; when
// tracing is on, ops also record chrome-trace events. Cheap enough to stay on.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "fk/device.h"

namespace fk::profile {

struct Counters {
  int64_t ops = 0;       // compute ops (anything that touches elements)
  int64_t view_ops = 0;  // view and metadata ops (no elements touched)
  int64_t launches = 0;  // kernel launches: parallel regions, BLAS/FFT calls, CUDA kernels
  int64_t syncs = 0;     // host waits for a device's stream (after an op, or for a host read)
};

Counters& counters();  // this thread's counters
inline void count_view() {
  ++counters().view_ops;
}
inline void count_launch(int64_t n = 1) {
  counters().launches += n;
}
inline void count_sync() {
  ++counters().syncs;
}

// A parallel region's counts. Each thread keeps its own counters, so the ops
// and launches a region's worker threads made were lost to the thread that
// opened it (a two-thread conv step counted 43 % fewer launches than a
// one-thread one). Made on the opening thread before the region, with a
// Worker on each of the region's threads: the workers' counts join the
// opener's when the region closes.
class RegionCounts {
 public:
  RegionCounts();
  ~RegionCounts();
  RegionCounts(const RegionCounts&) = delete;
  RegionCounts& operator=(const RegionCounts&) = delete;
  class Worker {
   public:
    explicit Worker(RegionCounts& region);
    ~Worker();
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

   private:
    RegionCounts& region_;
    Counters start_;
  };

 private:
  Counters* opener_;
  std::atomic<int64_t> ops_{0}, view_ops_{0}, launches_{0}, syncs_{0};
};

bool tracing();  // whether chrome-trace events are being recorded
void set_tracing(bool on);
void record_event(const char* name, int64_t start_ns, int64_t dur_ns);
// Writes every recorded event as a chrome trace (chrome://tracing, Perfetto).
void export_chrome_trace(const std::string& path);
void clear_trace();
int64_t now_ns();

// Counts one op; times it as a trace event when tracing is on.
class OpScope {
 public:
  explicit OpScope(const char* name) : name_(name) {
    ++counters().ops;
    if (tracing()) [[unlikely]]
      start_ = now_ns();
  }
  ~OpScope() {
    if (start_ >= 0) [[unlikely]]
      record_event(name_, start_, now_ns() - start_);
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  const char* name_;
  int64_t start_ = -1;
};

// A traced region that is not an op (a wait, a map build, a backward of
// many ops): recorded when tracing is on, counted nowhere.
class TraceScope {
 public:
  explicit TraceScope(const char* name) : name_(name), start_(tracing() ? now_ns() : -1) {}
  ~TraceScope() {
    if (start_ >= 0) [[unlikely]]
      record_event(name_, start_, now_ns() - start_);
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  const char* name_;
  int64_t start_;
};

// The recorded events summed by name: calls, total time, and self time (on
// each thread, an event's time minus the events nested in it), largest self
// time first. Where a step's host time goes, without a round trip through
// the chrome trace.
struct EventTotal {
  std::string name;
  int64_t calls = 0;
  double total_ms = 0, self_ms = 0;
};
std::vector<EventTotal> event_totals();

struct Report {
  Counters counts;  // ops, view ops and launches inside the scope
  double wall_ms = 0;
  int64_t peak_bytes = 0;  // peak allocated memory on the device inside the scope
  std::string str() const;
};

// Measures a region: counters and time since construction, peak memory on `device`.
class ProfileScope {
 public:
  explicit ProfileScope(Device device = kCPU);
  Report report() const;

 private:
  Device device_;
  Counters start_;
  int64_t start_ns_;
};

}  // namespace fk::profile
