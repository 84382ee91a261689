#pragma once
// What graph.cpp tells the device pool (runtime.cpp) about captures and
// graphs, so that the pool frees graph allocations by CUDA's rules
// (capture_frees.h): which capture each block belongs to, whether that
// capture made a graph, when the graph first runs and when it is destroyed.
// Called only where CUDA is built (graph.cpp); none of them throws but
// pool_graph_check_launch, whose throwing is its purpose.
#include <cstdint>

namespace fk::cuda {

// A capture began on `device` (its stream now capturing).
void pool_capture_began(int device);
// The device's capture ended, no longer capturing (made_graph: it was
// instantiated; else it failed or was aborted). Returns the capture's id
// for GraphExec::capture.
int64_t pool_capture_ended(int device, bool made_graph);
// Before a launch of the graph of `capture`: throws fk::Error when it is a
// relaunch of a graph whose capture kept blocks (capture_frees.h's
// check_relaunch), before CUDA is asked.
void pool_graph_check_launch(int device, int64_t capture);
// The blocks the capture kept (allocated in it and not freed in it).
int64_t pool_graph_kept(int device, int64_t capture);
// The graph of `capture` was enqueued on the device's current stream: frees
// the blocks dropped before its first launch, after it in stream order.
void pool_graph_launched(int device, int64_t capture);
// The graph of `capture` was destroyed.
void pool_graph_destroyed(int device, int64_t capture);

}  // namespace fk::cuda
