#pragma once
// The sync-debug mode, FK_SYNC_DEBUG=off|warn|error (read per call; the
// counterpart of torch.cuda.set_sync_debug_mode): while a device step is in
// progress on this thread -- a DeviceStepScope is open on it (nefi's solver
// opens one around each device training step), or it began a capture of the
// device's stream as a CUDA graph (fk/cuda/capture_marks.h) -- a host read of
// a device tensor (Tensor::item, Tensor::to_vector, a copy of a device tensor
// to the host) prints one warning per op to stderr (warn) or throws fk::Error
// naming the op (error). Such a read waits for the device, so it stalls the
// step it sits in, and a captured step cannot hold it at all. Another
// thread's step or capture is not this thread's: its reads are not reported
// here (a read of a stream under capture is refused by the runtime anyway).
// Off by default; costs one device check per host read when off. A malformed
// value is an fk::Error naming the knob.
#include <cstdint>

#include "fk/device.h"

namespace fk {

enum class SyncDebugMode { kOff, kWarn, kError };

// The knob's mode now.
SyncDebugMode sync_debug_mode();

// Marks a device step in progress on this thread for its lifetime (nests).
class DeviceStepScope {
 public:
  DeviceStepScope();
  ~DeviceStepScope();
  DeviceStepScope(const DeviceStepScope&) = delete;
  DeviceStepScope& operator=(const DeviceStepScope&) = delete;
};

// True while a DeviceStepScope is open on this thread.
bool device_step_marked();

// What a host read of a tensor on `source` does in `mode` when a step is
// (`in_step`) or is not in progress: kOff (nothing), kWarn or kError. A pure
// function: host reads of host tensors and reads outside a step never report.
SyncDebugMode sync_debug_action(SyncDebugMode mode, bool in_step, Device source);

// A host read of a tensor on `source`, named `op` ("Tensor::item"), for its
// lifetime: reports it as the mode says, once for the outermost read (item
// reads through to_vector, which copies to the host: one report, "Tensor::item").
// `op` must outlive the process (a string literal): warnings are once per op.
class HostRead {
 public:
  HostRead(const char* op, Device source);
  ~HostRead();
  HostRead(const HostRead&) = delete;
  HostRead& operator=(const HostRead&) = delete;

 private:
  bool outermost_;
};

// Warnings printed so far by the warn mode (one per op and process).
int64_t sync_debug_warnings();

}  // namespace fk
