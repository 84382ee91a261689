#include "fk/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
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

// Peaks a scope's reset discarded. The allocator keeps one peak per device,
// which every ProfileScope resets: a scope opened inside another wiped the
// outer's peak (a stage's inside a whole solve's). Each reset records the
// peak it drops, at the resetting scope's start; a scope's peak is the
// allocator's and every peak dropped after it started. Starts are unique
// and increasing, so a scope never reads the peak its own reset dropped.
// Kept as a stack of decreasing peaks (a later, larger one makes the
// earlier smaller ones moot), so it stays short.
struct DroppedPeaks {
  std::mutex mu;
  int64_t last_start_ns = 0;
  std::map<int, std::vector<std::pair<int64_t, int64_t>>> by_device;  // (start, peak)
};
DroppedPeaks& dropped_peaks() {
  static auto* d = new DroppedPeaks();
  return *d;
}
int device_key(Device d) {
  return d.is_cpu() ? -1 : d.index;
}

}  // namespace

Counters& counters() {
  thread_local Counters c;
  return c;
}

RegionCounts::RegionCounts() : opener_(&counters()) {}
RegionCounts::~RegionCounts() {
  opener_->ops += ops_.load();
  opener_->view_ops += view_ops_.load();
  opener_->launches += launches_.load();
  opener_->syncs += syncs_.load();
}
RegionCounts::Worker::Worker(RegionCounts& region) : region_(region), start_(counters()) {}
RegionCounts::Worker::~Worker() {
  const Counters& now = counters();
  if (&now == region_.opener_) return;  // the opening thread counts in place
  region_.ops_ += now.ops - start_.ops;
  region_.view_ops_ += now.view_ops - start_.view_ops;
  region_.launches_ += now.launches - start_.launches;
  region_.syncs_ += now.syncs - start_.syncs;
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
  // A number per thread in order of first event: a hash of the thread id
  // modulo 1e5 could give two threads one tid (and nest their events).
  static std::atomic<size_t> next_tid{0};
  thread_local const size_t tid = next_tid++;
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
  // A name as a JSON string's contents: a quote or a backslash in one made
  // the whole trace unreadable.
  const auto escaped = [](const char* name) {
    std::string out;
    for (const char* c = name; *c; ++c) {
      if (*c == '"' || *c == '\\')
        out += std::string("\\") + *c;
      else if (static_cast<unsigned char>(*c) < 0x20)
        out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(*c)));
      else
        out += *c;
    }
    return out;
  };
  f << "{\"traceEvents\":[";
  for (size_t i = 0; i < b.events.size(); ++i) {
    const Event& e = b.events[i];
    f << (i ? ",\n" : "\n")
      << fmt::format(R"({{"name":"{}","ph":"X","pid":0,"tid":{},"ts":{:.3f},"dur":{:.3f}}})",
                     escaped(e.name), e.tid, e.start_ns / 1e3, e.dur_ns / 1e3);
  }
  f << "\n],\"displayTimeUnit\":\"ns\"}\n";
  f.close();  // a full disk cut the trace at a buffer's length, unseen
  if (f.fail()) throw Error("export_chrome_trace", "a successful write", "'" + path + "'");
}

std::vector<EventTotal> event_totals() {
  std::vector<Event> events;
  {
    auto& b = trace_buffer();
    std::lock_guard<std::mutex> lock(b.mu);
    events = b.events;
  }
  // By thread, then start; an enclosing event (same start, longer) first.
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.tid != b.tid) return a.tid < b.tid;
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.dur_ns > b.dur_ns;
  });
  std::vector<int64_t> self(events.size());
  std::vector<size_t> open;  // the enclosing events of the current one
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    self[i] = e.dur_ns;
    while (!open.empty() &&
           (events[open.back()].tid != e.tid ||
            e.start_ns + e.dur_ns > events[open.back()].start_ns + events[open.back()].dur_ns))
      open.pop_back();
    if (!open.empty()) self[open.back()] -= e.dur_ns;
    open.push_back(i);
  }
  std::map<std::string, EventTotal> by_name;
  for (size_t i = 0; i < events.size(); ++i) {
    EventTotal& t = by_name[events[i].name];
    t.name = events[i].name;
    ++t.calls;
    t.total_ms += events[i].dur_ns / 1e6;
    t.self_ms += self[i] / 1e6;
  }
  std::vector<EventTotal> out;
  for (auto& [name, t] : by_name) out.push_back(std::move(t));
  std::stable_sort(out.begin(), out.end(),
                   [](const EventTotal& a, const EventTotal& b) { return a.self_ms > b.self_ms; });
  return out;
}

std::string Report::str() const {
  return fmt::format("{} ops, {} view ops, {} launches, {} syncs, {:.3f} ms, peak {:.2f} MiB",
                     counts.ops, counts.view_ops, counts.launches, counts.syncs, wall_ms,
                     peak_bytes / 1048576.0);
}

ProfileScope::ProfileScope(Device device)
    : device_(device), start_(counters()), start_ns_(now_ns()) {
  DroppedPeaks& d = dropped_peaks();
  std::lock_guard<std::mutex> lock(d.mu);
  start_ns_ = std::max(start_ns_, d.last_start_ns + 1);
  d.last_start_ns = start_ns_;
  auto& stack = d.by_device[device_key(device_)];
  const int64_t dropped = memory_stats(device_).peak;
  while (!stack.empty() && stack.back().second <= dropped) stack.pop_back();
  stack.emplace_back(start_ns_, dropped);
  reset_peak_memory(device_);
}

Report ProfileScope::report() const {
  Report r;
  const Counters& c = counters();
  r.counts.ops = c.ops - start_.ops;
  r.counts.view_ops = c.view_ops - start_.view_ops;
  r.counts.launches = c.launches - start_.launches;
  r.counts.syncs = c.syncs - start_.syncs;
  r.wall_ms = (now_ns() - start_ns_) / 1e6;
  r.peak_bytes = memory_stats(device_).peak;
  DroppedPeaks& d = dropped_peaks();
  std::lock_guard<std::mutex> lock(d.mu);
  const auto& stack = d.by_device[device_key(device_)];
  // The first entry dropped after this scope started holds the largest of them.
  const auto later =
      std::upper_bound(stack.begin(), stack.end(), start_ns_,
                       [](int64_t t, const std::pair<int64_t, int64_t>& e) { return t < e.first; });
  if (later != stack.end()) r.peak_bytes = std::max(r.peak_bytes, later->second);
  return r;
}

}  // namespace fk::profile
