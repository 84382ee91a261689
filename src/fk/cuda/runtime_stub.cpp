// The CUDA host interface for builds without nvcc: no devices, and a clear error
// for anything that would need one.
#include "fk/cuda/runtime.h"
#include "fk/error.h"

namespace fk::cuda {
namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw Error(what, "a build with the CUDA backend (nvcc found at configure time)",
              "a CPU-only build");
}
}  // namespace

int device_count() { return 0; }
bool built_with_cuda() { return false; }
const char* archs() { return "none"; }
void* pool_allocate(int, size_t) { no_cuda("CUDA allocation"); }
void pool_deallocate(int, void*, size_t) { no_cuda("CUDA deallocation"); }
PoolStats pool_stats(int) { return {}; }
void pool_reset_peak(int) {}
void pool_trim(int) {}
void* current_stream(int) { return nullptr; }
void set_current_stream(int, void*) { no_cuda("set_current_stream"); }
void synchronize(int) {}
void after_op(int) {}
void copy_bytes(void*, int, const void*, int, size_t) { no_cuda("CUDA copy"); }

}  // namespace fk::cuda
