#pragma once
// What the device pool (runtime.h's pool_allocate) does when cudaMallocAsync
// runs out of memory, as pure functions: no CUDA header, so CPU-only builds
// and host tests use them too.
//
// Outside a capture the pool waits for the whole device, returns its cached
// blocks to the driver and tries once more: blocks freed on other streams may
// still be pending. Inside a stream capture that wait is illegal: a device
// synchronization waits for the captured stream too, which CUDA refuses and
// answers by invalidating the capture, so the step would fail later with a
// bare CUDA error far from its cause. There the pool throws at once, naming
// the request and what to do instead.
#include <cstddef>

#include "fk/error.h"

namespace fk::cuda {

// May the pool synchronize the device and trim its cache to retry? Not when
// `device_captured`: a capture fk began runs on the device (begun by any
// thread: capture_marks.h); nor when `thread_captures`: this thread began a
// capture on any device (CUDA forbids the capturing thread a device-wide
// wait, and would invalidate that capture); nor when `stream_capturing`:
// CUDA reports the current stream capturing (a capture begun outside fk, on
// a stream a host framework lent) or could not tell.
bool may_retry_out_of_memory(bool device_captured, bool thread_captures, bool stream_capturing);

// The error thrown instead of that retry: the device, the size requested and
// that a capture is in progress; it suggests running the step eagerly or
// lowering the size.
Error out_of_memory_in_capture(int device, size_t nbytes);

}  // namespace fk::cuda
