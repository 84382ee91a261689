#pragma once
// src/minkowski/cuda/cp_async.cuh on the emulated device (emulated_device.h):
// a copy happens when issued (zeros when absent, as src-size 0 gives), so
// commit and wait have nothing left to do. Not modelled: a copy in flight,
// so a kernel reading its destination before waiting for its group is not
// caught here (the barrier that must follow the wait anyway orders the rest).
#include <cstring>

namespace minkowski::cuda {

inline void copy_16_bytes(void* shared, const void* global, bool present) {
  if (present)
    std::memcpy(shared, global, 16);
  else
    std::memset(shared, 0, 16);
}
inline void commit_copies() {}
template <int kPending>
void wait_copies() {}

}  // namespace minkowski::cuda
