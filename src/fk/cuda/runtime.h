#pragma once
// The CUDA backend's host interface: plain C++ with raw pointers, so that fk's
// .cpp files call it without CUDA headers and the .cu files stay thin (kernels
// and launchers only). Built by fk_cuda when nvcc is found; otherwise
// runtime_stub.cpp implements it, reporting no devices and refusing the rest.
#include <cstddef>
#include <cstdint>

namespace fk::cuda {

// 0 on any runtime error (no driver, error 35 on machines without a GPU).
int device_count();
// Why device_count() is 0, for skip messages and logs: the runtime's error
// with the driver's and the runtime's CUDA versions ("cudaErrorInsufficientDriver
// (...); driver supports CUDA 12.4, runtime is 13.0"), or that the build has
// no CUDA backend. Empty when a device is usable.
const char* no_device_reason();
bool built_with_cuda();
const char* archs();  // the architectures fk_cuda was compiled for, e.g. "90" or "80,90,120"

// Memory: the stream-ordered pool of the device's current stream. Inside a
// stream capture (graph.h) allocations become the graph's own; `reserved`
// (the driver's figure) reads 0 while one runs. A free cannot throw (tensors
// free from destructors): a cudaFreeAsync that fails is counted in
// failed_frees, its cudaError_t code kept in last_free_error, and its error
// cleared so that the next launch check does not blame its kernel for it.
struct PoolStats {
  int64_t allocated = 0, peak = 0, reserved = 0, num_allocs = 0;
  int64_t failed_frees = 0;
  int last_free_error = 0;
};
void* pool_allocate(int device, size_t nbytes);
// What pool_allocate checks before it answers an out-of-memory by waiting for
// the device and trimming the pool to retry: throws fk::Error naming the
// request while a capture runs (out_of_memory_retry.h), where that wait would
// invalidate the capture. Public so tests reach it without exhausting memory.
void check_out_of_memory_retry(int device, size_t nbytes);
void pool_deallocate(int device, void* p, size_t nbytes);
PoolStats pool_stats(int device);
void pool_reset_peak(int device);
void pool_trim(int device);  // returns the pool's cached memory to the driver

// Streams. The current stream is per device and per thread (torch's rule) and
// settable, so a host framework can lend its own (a cudaStream_t passed as
// void*) without moving other threads' work; nullptr is the default stream,
// where every thread starts.
void* current_stream(int device);
void set_current_stream(int device, void* stream);
// Waits for the device's current stream, then throws fk::Error for an index
// a kernel found out of range since the last synchronization (index_errors.h).
void synchronize(int device);
// synchronize for a destructor, which must not throw: waits for the device's
// current stream (not while it is being captured) and never throws. An
// index error the wait finds stays pending, so the next synchronize of the
// device throws it as the same fk::Error, where a caller can catch it; it is
// also written once on stderr naming `who`, so that it is not lost when
// nothing synchronizes again (the program ends, or the destructor ran while
// another exception unwound the stack) and a later throw from an unrelated
// call is traced to the object whose destruction first met it. A CUDA error
// of the wait goes to stderr (a sticky one fails every later call anyway).
void synchronize_in_destructor(int device, const char* who) noexcept;
// Called after every CUDA op: synchronizes unless ME_LAZY_SYNC=1 (latched), in
// which case only host reads synchronize, or the stream is being captured,
// by fk (graph.h: then synchronize and host copies throw instead) or by a
// host framework on the stream it lent (torch.cuda.graph: the op is recorded).
void after_op(int device);

// Device-side index checks (index_errors.h): the device pointer of the
// device's record for the index op in `slot` (index_record_slot), which its
// kernel fills on an out-of-range index and synchronize reports as fk::Error;
// null where none could be made (no device, a CPU-only build, or page-locked
// memory refused): the op then checks its index with a host read.
int64_t* index_check_record(int device, int slot);

// Copies; `kind` of direction is implied by the devices (-1 = host).
void copy_bytes(void* dst, int dst_device, const void* src, int src_device, size_t nbytes);

}  // namespace fk::cuda
