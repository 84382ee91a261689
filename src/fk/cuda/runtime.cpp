// The CUDA host interface (fk/cuda/runtime.h) over the CUDA runtime: a
// stream-ordered memory pool per device, a settable current stream, and the
// sync policy (after every op, or lazily with ME_LAZY_SYNC=1).
#include "fk/cuda/runtime.h"

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "fk/cuda/capture_frees.h"
#include "fk/cuda/capture_marks.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/error_kind.h"
#include "fk/cuda/graph.h"
#include "fk/cuda/index_errors.h"
#include "fk/cuda/out_of_memory_retry.h"
#include "fk/cuda/pool_graphs.h"
#include "fk/error.h"
#include "fk/knobs.h"
#include "fk/profile.h"

namespace fk::cuda {
namespace {

using detail::check_cuda;
using detail::DeviceGuard;

Knob kLazySync("ME_LAZY_SYNC", KnobType::Bool, "0",
               "CUDA: skip the stream sync after every op; only host reads synchronize",
               KnobRead::Latched);

constexpr int kMaxDevices = 64;

struct DeviceState {
  std::mutex mu;
  PoolStats stats;
  CaptureFrees frees;              // what each free does around captures (capture_frees.h)
  std::atomic<bool> holds{false};  // frees.held_back() > 0, read without the lock
  std::once_flag pool_setup;
  // The index ops' records (index_errors.h): mapped page-locked memory, made
  // once outside any capture (a page-locked allocation is no capturable call).
  std::atomic<int64_t*> index_records{nullptr};      // host address
  std::atomic<int64_t*> index_records_dev{nullptr};  // the same memory, as the device sees it
  std::once_flag index_records_setup;
};
DeviceState& state(int device) {
  static DeviceState* states = new DeviceState[kMaxDevices];
  FK_CHECK(device >= 0 && device < kMaxDevices, "CUDA device index",
           "0.." + fk::to_text(kMaxDevices - 1), fk::to_text(device));
  return states[device];
}

// The calling thread's current stream of each device, as in torch (one per
// device per thread): a thread that lends its framework's stream, or a nefi
// StepGraph capturing on a stream of its own, moves no other thread's work
// onto that stream. A new thread starts on the default stream.
void*& thread_stream(int device) {
  thread_local void* streams[kMaxDevices] = {};
  FK_CHECK(device >= 0 && device < kMaxDevices, "CUDA device index",
           "0.." + fk::to_text(kMaxDevices - 1), fk::to_text(device));
  return streams[device];
}

cudaStream_t stream_of(int device) {
  return static_cast<cudaStream_t>(thread_stream(device));
}

// cudaFreeAsync on the device's current stream, its error checked and kept
// out of the next launch check: a destructor cannot throw it, and left as the
// thread's last error it would be reported as the next kernel's failure. The
// failure is counted in pool_stats (failed_frees, last_free_error) instead; a
// sticky error cannot be cleared and is left for the next check to report.
void free_block(int device, void* p) {
  const cudaError_t e = cudaFreeAsync(p, stream_of(device));
  if (e == cudaSuccess) return;
  if (cuda_error_kind(e) == CudaErrorKind::kRecoverable) cudaGetLastError();
  auto& s = state(device);
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.stats.failed_frees;
  s.stats.last_free_error = static_cast<int>(e);
}

void free_blocks(int device, const std::vector<void*>& blocks) {
  if (blocks.empty()) return;
  DeviceGuard g(device);
  for (void* p : blocks) free_block(device, p);
}

// Frees the blocks held back while a capture ran (none runs now).
void free_held_back(int device) {
  auto& s = state(device);
  if (!s.holds.load(std::memory_order_acquire)) return;
  std::vector<void*> held;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    held = s.frees.take_held_back();
    s.holds.store(false, std::memory_order_release);
  }
  free_blocks(device, held);
}

// Makes the device's index records once (see DeviceState), never inside a
// capture; leaves them null where CUDA refuses the memory.
void make_index_records(int device) {
  auto& s = state(device);
  if (s.index_records.load(std::memory_order_acquire) != nullptr || capturing(device)) return;
  std::call_once(s.index_records_setup, [&s, device] {
    DeviceGuard g(device);
    const size_t bytes = sizeof(int64_t) * kIndexCheckedOpCount * kIndexRecordWords;
    void* host = nullptr;
    void* dev = nullptr;
    if (cudaHostAlloc(&host, bytes, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
    if (cudaHostGetDevicePointer(&dev, host, 0) != cudaSuccess) {
      cudaGetLastError();
      cudaFreeHost(host);
      return;
    }
    std::memset(host, 0, bytes);
    s.index_records_dev.store(static_cast<int64_t*>(dev), std::memory_order_release);
    s.index_records.store(static_cast<int64_t*>(host), std::memory_order_release);
  });
}

// True when CUDA reports `stream` capturing, or cannot tell (the legacy
// default stream answers with an error while another stream captures).
bool stream_reports_capture(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    cudaGetLastError();
    return true;
  }
  return status != cudaStreamCaptureStatusNone;
}

// True while this thread began a capture on any device.
bool thread_began_a_capture() {
  for (int d = 0; d < device_count(); ++d)
    if (capture_marks().begun_on_this_thread(d)) return true;
  return false;
}

// "13.0" from CUDA's version number 13000.
std::string cuda_version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

struct DeviceProbe {
  int count = 0;
  std::string reason;  // empty when count > 0
};

// Asked once: cudaGetDeviceCount's answer, and the reason when it is none.
const DeviceProbe& device_probe() {
  static const DeviceProbe probe = [] {
    DeviceProbe p;
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n > 0) {
      p.count = n > kMaxDevices ? kMaxDevices : n;
      return p;
    }
    cudaGetLastError();  // clear the error (35 on machines without a driver)
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    p.reason = e == cudaSuccess ? std::string("cudaGetDeviceCount found no device")
                                : std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + " (" +
                                      cudaGetErrorString(e) + ")";
    p.reason += "; driver supports CUDA " +
                (driver > 0 ? cuda_version_text(driver) : std::string("none (no driver)")) +
                ", runtime is " + cuda_version_text(runtime);
    return p;
  }();
  return probe;
}

}  // namespace

int device_count() {
  return device_probe().count;
}

const char* no_device_reason() {
  return device_probe().reason.c_str();
}

bool built_with_cuda() {
  return true;
}
const char* archs() {
  return FK_CUDA_ARCHS_STR;
}

void check_out_of_memory_retry(int device, size_t nbytes) {
  if (device >= device_count()) return;  // no device: nothing captures on it
  DeviceGuard g(device);                 // the legacy default stream is the current device's
  if (!may_retry_out_of_memory(capture_marks().captured_stream(device) != nullptr,
                               thread_began_a_capture(), stream_reports_capture(stream_of(device))))
    throw out_of_memory_in_capture(device, nbytes);
}

void* pool_allocate(int device, size_t nbytes) {
  FK_CHECK(device >= 0 && device < device_count(), "CUDA allocation",
           "an available device (" + fk::to_text(device_count()) + " present)",
           "cuda:" + fk::to_text(device));
  DeviceGuard g(device);
  auto& s = state(device);
  // The default pool returns memory to the driver at every synchronization
  // unless its release threshold is raised; keep it cached until pool_trim.
  std::call_once(s.pool_setup, [device] {
    cudaMemPool_t pool;
    if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
      uint64_t keep = UINT64_MAX;
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
  });
  const bool in_capture = capturing(device);
  if (!in_capture) free_held_back(device);
  make_index_records(device);  // before any index op can ask for them in a capture
  void* p = nullptr;
  if (nbytes > 0) {
    cudaStream_t stream = stream_of(device);
    cudaError_t e = cudaMallocAsync(&p, nbytes, stream);
    if (e == cudaErrorMemoryAllocation) {
      // Out of memory: cached blocks may be pending on other streams; wait for
      // the device, return the pool's cache to the driver and try once more,
      // unless a capture runs (out_of_memory_retry.h).
      cudaGetLastError();
      check_out_of_memory_retry(device, nbytes);
      cudaDeviceSynchronize();
      cudaMemPool_t pool;
      if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) cudaMemPoolTrimTo(pool, 0);
      e = cudaMallocAsync(&p, nbytes, stream);
    }
    check_cuda(e, "cudaMallocAsync");
  }
  std::lock_guard<std::mutex> lock(s.mu);
  s.frees.allocated(p, in_capture);
  s.stats.allocated += static_cast<int64_t>(nbytes);
  s.stats.peak = std::max(s.stats.peak, s.stats.allocated);
  ++s.stats.num_allocs;
  return p;
}

// Freed in the order of the freeing thread's current stream. A block whose
// last use was on another stream (another thread's, or the caller switched
// streams with set_current_stream) may be reused before that stream's work
// ends: fk has no record_stream, so a caller mixing streams synchronizes them
// before dropping such tensors (the default policy, a wait after every op,
// does). A block from before a capture is held back whichever thread drops
// it while the capture runs (capture_frees.h).
// Around captures, capture_frees.h decides: a block allocated before a
// capture and dropped inside it is held back (a graph free node takes graph
// allocations only; the graph's work may read it) until its capture fails or
// its graph is destroyed, and freed by the first allocation or free made then
// when no capture runs; a block of a failed capture, or of a graph destroyed before it
// ran, is dropped without a CUDA call; a block of a graph not launched yet is
// freed after its first launch.
void pool_deallocate(int device, void* p, size_t nbytes) {
  const bool in_capture = capturing(device);
  CaptureFrees::Free action = CaptureFrees::Free::kDropped;
  {
    auto& s = state(device);
    std::lock_guard<std::mutex> lock(s.mu);
    s.stats.allocated -= static_cast<int64_t>(nbytes);
    if (p != nullptr) action = s.frees.free_action(p, in_capture);
    if (s.frees.held_back() > 0) s.holds.store(true, std::memory_order_release);
  }
  if (action == CaptureFrees::Free::kNow) {
    DeviceGuard g(device);
    free_block(device, p);
  }
  if (!in_capture) free_held_back(device);
}

namespace {

// use(the device's CaptureFrees) under the device's lock; its result.
template <typename Use>
auto with_frees(int device, Use&& use) {
  auto& s = state(device);
  std::lock_guard<std::mutex> lock(s.mu);
  return use(s.frees);
}

// change(the device's CaptureFrees) under the device's lock, for a change
// that may put blocks back (the free nodes of a capture or graph that will
// never run): they are freed now where no capture runs, else held back.
template <typename Change>
void with_frees_and_put_back(int device, Change&& change) {
  auto& s = state(device);
  {
    std::lock_guard<std::mutex> lock(s.mu);
    change(s.frees);
    if (s.frees.held_back() > 0) s.holds.store(true, std::memory_order_release);
  }
  if (!capturing(device)) free_held_back(device);
}

}  // namespace

void pool_capture_began(int device) {
  with_frees(device, [](CaptureFrees& f) { return f.capture_began(); });
}

int64_t pool_capture_ended(int device, bool made_graph) {
  int64_t id = 0;
  with_frees_and_put_back(device, [&](CaptureFrees& f) { id = f.capture_ended(made_graph); });
  return id;
}

void pool_graph_check_launch(int device, int64_t capture) {
  check_relaunch(with_frees(device, [=](CaptureFrees& f) { return f.outliving(capture); }), device);
}

int64_t pool_graph_kept(int device, int64_t capture) {
  return with_frees(device, [=](CaptureFrees& f) { return f.outliving(capture).kept; });
}

void pool_graph_launched(int device, int64_t capture) {
  free_blocks(device, with_frees(device, [=](CaptureFrees& f) { return f.launched(capture); }));
}

void pool_graph_destroyed(int device, int64_t capture) {
  with_frees_and_put_back(device, [=](CaptureFrees& f) { f.destroyed(capture); });
}

PoolStats pool_stats(int device) {
  auto& s = state(device);
  PoolStats out;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    out = s.stats;
  }
  // The driver's figure is left out while a capture runs (the host-side
  // counts are what a capture checks; the driver is not asked inside one).
  if (device < device_count() && !capturing(device)) {
    cudaMemPool_t pool;
    if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
      uint64_t reserved = 0;
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved);
      out.reserved = static_cast<int64_t>(reserved);
    }
  }
  return out;
}

void pool_reset_peak(int device) {
  auto& s = state(device);
  std::lock_guard<std::mutex> lock(s.mu);
  s.stats.peak = s.stats.allocated;
}

namespace {
// Inside a capture nothing may wait for the device: a host read there is the
// caller's bug (or an op that cannot be captured), named here rather than
// left to invalidate the capture with a bare CUDA error.
void refuse_while_capturing(int device, const char* what) {
  if (!capturing(device)) return;
  // Another thread's read of the captured stream breaks the capture as well.
  const char* whose =
      capture_marks().begun_on_this_thread(device) ? "" : " (captured by another thread)";
  throw Error("CUDA graph capture", "no host read or pageable host copy inside a captured step",
              std::string(what) + " on cuda:" + fk::to_text(device) + whose);
}
}  // namespace

void pool_trim(int device) {
  if (device >= device_count()) return;
  refuse_while_capturing(device, "fk::empty_cache (a stream synchronization and a pool trim)");
  DeviceGuard g(device);
  check_cuda(cudaStreamSynchronize(stream_of(device)), "cudaStreamSynchronize");
  cudaMemPool_t pool;
  check_cuda(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
  check_cuda(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
}

void* current_stream(int device) {
  return thread_stream(device);
}
void set_current_stream(int device, void* stream) {
  thread_stream(device) = stream;
}

int64_t* index_check_record(int device, int slot) {
  if (device < 0 || device >= device_count() || slot < 0 || slot >= kIndexCheckedOpCount)
    return nullptr;
  make_index_records(device);
  int64_t* records = state(device).index_records_dev.load(std::memory_order_acquire);
  return records != nullptr ? records + slot * kIndexRecordWords : nullptr;
}

void synchronize(int device) {
  if (device >= device_count()) return;
  refuse_while_capturing(device, "a stream synchronization (host read)");
  DeviceGuard g(device);
  profile::count_sync();
  const profile::TraceScope trace("fk.cuda.synchronize");
  check_cuda(cudaStreamSynchronize(stream_of(device)), "cudaStreamSynchronize");
  // The kernels that ran before the wait have written their records.
  if (int64_t* records = state(device).index_records.load(std::memory_order_acquire))
    throw_if_index_flagged(records, device);
}

void synchronize_in_destructor(int device, const char* who) noexcept {
  try {
    if (device < 0 || device >= device_count() || capturing(device)) return;
    DeviceGuard g(device);
    check_cuda(cudaStreamSynchronize(stream_of(device)), "cudaStreamSynchronize");
    int64_t* records = state(device).index_records.load(std::memory_order_acquire);
    if (records == nullptr) return;
    const std::string line = announce_pending_index_error(records, device, who);
    if (!line.empty()) std::fputs(line.c_str(), stderr);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fk: %s: waiting for cuda:%d failed: %s\n", who, device, e.what());
  } catch (...) {
  }
}

void after_op(int device) {
  if (capturing(device) || kLazySync.as_bool()) return;
  // A capture fk did not begin (a host framework's graph on the stream it
  // lent) records the op rather than running it; a wait would invalidate it.
  DeviceGuard g(device);
  if (stream_reports_capture(stream_of(device))) return;
  synchronize(device);
}

void copy_bytes(void* dst, int dst_device, const void* src, int src_device, size_t nbytes) {
  if (nbytes == 0) return;
  int device = dst_device >= 0 ? dst_device : src_device;
  if (dst_device < 0 || src_device < 0)
    refuse_while_capturing(device, dst_device < 0 ? "a copy to the host" : "a copy from the host");
  // A copy between two devices runs on the destination's stream: the source's
  // stream must have finished writing src, and must not reuse src (freed in
  // its order) before the copy has read it, whatever ME_LAZY_SYNC says.
  const bool peer = dst_device >= 0 && src_device >= 0 && dst_device != src_device;
  if (peer) synchronize(src_device);
  DeviceGuard g(device);
  cudaMemcpyKind kind = dst_device < 0   ? cudaMemcpyDeviceToHost
                        : src_device < 0 ? cudaMemcpyHostToDevice
                                         : cudaMemcpyDeviceToDevice;
  check_cuda(cudaMemcpyAsync(dst, src, nbytes, kind, stream_of(device)), "cudaMemcpyAsync");
  // A copy to the host is a host read: it always synchronizes.
  if (dst_device < 0 || peer) {
    synchronize(device);
  } else {
    after_op(device);
  }
}

}  // namespace fk::cuda
