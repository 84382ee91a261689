// The pool's out-of-memory answer (see out_of_memory_retry.h).
#include "fk/cuda/out_of_memory_retry.h"

#include <cstdio>
#include <string>

namespace fk::cuda {

bool may_retry_out_of_memory(bool device_captured, bool thread_captures, bool stream_capturing) {
  return !device_captured && !thread_captures && !stream_capturing;
}

Error out_of_memory_in_capture(int device, size_t nbytes) {
  char mib[32];
  std::snprintf(mib, sizeof(mib), "%.1f MiB", static_cast<double>(nbytes) / (1024.0 * 1024.0));
  return Error("CUDA allocation on cuda:" + fk::to_text(device) + " during a stream capture",
               "memory for the request (out of memory, and while a capture is in progress the "
               "pool cannot synchronize the device and free its cache to retry: run the step "
               "eagerly, without graph capture, or lower the size)",
               "a request of " + fk::to_text(nbytes) + " bytes (" + mib + ")");
}

}  // namespace fk::cuda
