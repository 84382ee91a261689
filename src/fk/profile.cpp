#include "fk/profile.h"

#include <fmt/format.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "fk/error.h"
#include "fk/memory.h"

namespace fk::profile {
namespace {

std::atomic<bool> g_tracing{false};

struct Event {
  const char* name;
  int64_t start_ns, dur_ns;
  size_t tid;
};

struct TraceBuffer {
  std::mutex mu;
  std::vector<Event> events;
};
TraceBuffer& trace_buffer() {
  static auto* b = new TraceBuffer();
  return *b;
}

}  // namespace

Counters& counters() {
  thread_local Counters c;
  return c;
}

bool tracing() {
  return g_tracing.load(std::memory_order_relaxed);
}
void set_tracing(bool on) {
  g_tracing.store(on);
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void record_event(const char* name, int64_t start_ns, int64_t dur_ns) {
  auto& b = trace_buffer();
  size_t tid = std::hash<std::thread::id>{}(std::this_thread::get_id()) % 100000;
  std::lock_guard<std::mutex> lock(b.mu);
  b.events.push_back({name, start_ns, dur_ns, tid});
}

void clear_trace() {
  auto& b = trace_buffer();
  std::lock_guard<std::mutex> lock(b.mu);
  b.events.clear();
}

void export_chrome_trace(const std::string& path) {
  auto& b = trace_buffer();
  std::lock_guard<std::mutex> lock(b.mu);
  std::ofstream f(path);
  if (!f) throw Error("export_chrome_trace", "a writable file path", "'" + path + "'");
  f << "{\"traceEvents\":[";
  for (size_t i = 0; i < b.events.size(); ++i) {
    const Event& e = b.events[i];
    f << (i ? ",\n" : "\n")
      << fmt::format(R"({{"name":"{}","ph":"X","pid":0,"tid":{},"ts":{:.3f},"dur":{:.3f}}})",
                     e.name, e.tid, e.start_ns / 1e3, e.dur_ns / 1e3);
  }
  f << "\n],\"displayTimeUnit\":\"ns\"}\n";
}

std::string Report::str() const {
  return fmt::format("{} ops, {} view ops, {} launches, {:.3f} ms, peak {:.2f} MiB", counts.ops,
                     counts.view_ops, counts.launches, wall_ms, peak_bytes / 1048576.0);
}

ProfileScope::ProfileScope(Device device)
    : device_(device), start_(counters()), start_ns_(now_ns()) {
  reset_peak_memory(device_);
}

Report ProfileScope::report() const {
  Report r;
  const Counters& c = counters();
  r.counts.ops = c.ops - start_.ops;
  r.counts.view_ops = c.view_ops - start_.view_ops;
  r.counts.launches = c.launches - start_.launches;
  r.wall_ms = (now_ns() - start_ns_) / 1e6;
  r.peak_bytes = memory_stats(device_).peak;
  return r;
}

}  // namespace fk::profile
