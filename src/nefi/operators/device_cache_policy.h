#pragma once
// What a cache of device constants (table_cache.h's TableCache and
// HostValueCopies, losses/observation_constants.h) asks about CUDA graphs
// before it keeps or drops an entry:
//   - graphs_alive: whether a graph may hold raw pointers into kept entries
//     now (a capture running or an instantiated graph alive anywhere in the
//     process). No entry is dropped then: a later replay would read freed
//     memory.
//   - capture_running(device): whether a capture runs on the device's current
//     stream, so that what is allocated there now is that capture's graph
//     memory (fk/cuda/capture_frees.h). Such memory exists only once the
//     capture makes a graph and the graph runs, and never if the capture fails
//     or is aborted (nefi's StepGraph then runs the step again, eagerly: an
//     entry kept from the failed capture would hand that step an address that
//     names no memory). So an entry made while a capture runs is handed to
//     the step that asked for it and not kept: the step frees it inside its
//     graph, and the first call outside a capture makes the entry that stays.
// HostValueCopies asks only graphs_alive: it uploads from the host, which fk
// refuses inside a capture. Tests pass their own of both.
#include <functional>

#include "fk/cuda/graph.h"
#include "fk/device.h"

namespace nefi {

using GraphsAlive = std::function<bool()>;
inline bool any_live_graph() {
  return fk::cuda::live_graphs() > 0;
}

using CaptureRunning = std::function<bool(fk::Device)>;
inline bool capture_running(fk::Device device) {
  return device.is_cuda() && fk::cuda::capturing(device.index);
}

}  // namespace nefi
