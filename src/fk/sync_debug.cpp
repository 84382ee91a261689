// FK_SYNC_DEBUG and the marking of device steps (see sync_debug.h).
#include "fk/sync_debug.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "fk/cuda/capture_marks.h"
#include "fk/error.h"
#include "fk/knobs.h"

namespace fk {
namespace {

Knob kSyncDebug("FK_SYNC_DEBUG", KnobChoices{{"off", "warn", "error"}}, "off",
                "CUDA: a host read of a device tensor (item, to_vector, a copy to the host) "
                "inside a device step or capture: off, warn (once per op) or error",
                KnobRead::PerCall);

thread_local int t_step_depth = 0;
thread_local bool t_in_host_read = false;
std::atomic<int64_t> g_warnings{0};

// Warns once per op: true the first time `op` is seen.
bool first_warning(const char* op) {
  static std::mutex mu;
  static std::set<std::string>* seen = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(mu);
  return seen->insert(op).second;
}

// A capture this thread began on the source's device: its reads are inside
// the captured step. Another thread's capture does not make this thread's
// read part of it, nor name it as the reason for this thread's own step.
bool capturing_here(Device source) {
  return cuda::capture_marks().begun_on_this_thread(source.index);
}

std::string where_step(Device source) {
  return capturing_here(source)
             ? "a CUDA graph capture on " + source.str() + " begun on this thread"
             : "a device step (DeviceStepScope) on this thread";
}

}  // namespace

SyncDebugMode sync_debug_mode() {
  const std::string v = kSyncDebug.as_string();
  if (v == "off") return SyncDebugMode::kOff;
  return v == "warn" ? SyncDebugMode::kWarn : SyncDebugMode::kError;
}

DeviceStepScope::DeviceStepScope() {
  ++t_step_depth;
}
DeviceStepScope::~DeviceStepScope() {
  --t_step_depth;
}

bool device_step_marked() {
  return t_step_depth > 0;
}

SyncDebugMode sync_debug_action(SyncDebugMode mode, bool in_step, Device source) {
  if (!source.is_cuda() || !in_step) return SyncDebugMode::kOff;
  return mode;
}

HostRead::HostRead(const char* op, Device source)
    : outermost_(source.is_cuda() && !t_in_host_read) {
  if (!outermost_) return;
  const bool in_step = device_step_marked() || capturing_here(source);
  // The knob is read only inside a step: a host read elsewhere costs nothing more.
  const SyncDebugMode action =
      in_step ? sync_debug_action(sync_debug_mode(), in_step, source) : SyncDebugMode::kOff;
  if (action == SyncDebugMode::kError)
    throw Error(std::string("FK_SYNC_DEBUG=error: ") + op,
                "no host read of a device tensor inside " + where_step(source),
                std::string(op) + " of a tensor on " + source.str());
  if (action == SyncDebugMode::kWarn && first_warning(op)) {
    ++g_warnings;
    std::fprintf(stderr,
                 "fieldkit: FK_SYNC_DEBUG=warn: %s of a tensor on %s inside %s waits for the "
                 "device (warned once per op)\n",
                 op, source.str().c_str(), where_step(source).c_str());
  }
  t_in_host_read = true;  // the reads it makes (to_vector, the copy) are not reported again
}

HostRead::~HostRead() {
  if (outermost_) t_in_host_read = false;
}

int64_t sync_debug_warnings() {
  return g_warnings.load();
}

}  // namespace fk
