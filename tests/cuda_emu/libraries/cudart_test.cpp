// The emulated CUDA runtime (cudart_*.cpp), linked instead of libcudart: its
// stream model (deferred work, the legacy stream's order), copies by memory
// kind, graph capture and replay, the pool's counters, the out-of-memory
// limit and CUDA's errors, each as CUDA documents them.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "emulated_device.h"
#include "fk/error.h"

namespace {

constexpr int kN = 64;

// A kernel for the emulator: x[i] += 1 over one-dimensional blocks.
void add_one(float* x, int n) {
  const int i =
      static_cast<int>(fkemu::block_index().x * fkemu::block_dims().x + fkemu::thread_index().x);
  if (i < n) x[i] += 1.0f;
}

void launch_add_one(float* x, int n, cudaStream_t s) {
  fkemu::launch(fkemu::config(dim3((n + 31) / 32), dim3(32), 0, s), add_one, x, n);
}

// Each piece of submitted work appends its tag: the order streams run in.
struct Log {
  std::string text;
  void submit(cudaStream_t s, char tag) {
    fkemu::submit(s, [this, tag] { text += tag; });
  }
};

cudaStream_t make_stream(unsigned flags) {
  cudaStream_t s = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&s, flags), cudaSuccess);
  return s;
}

uint64_t pool_attribute(cudaMemPoolAttr attr) {
  cudaMemPool_t pool = nullptr;
  EXPECT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  uint64_t v = 0;
  EXPECT_EQ(cudaMemPoolGetAttribute(pool, attr, &v), cudaSuccess);
  return v;
}

void set_release_threshold(uint64_t bytes) {
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  ASSERT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &bytes), cudaSuccess);
}

// Every test leaves the device idle, the pool empty and no error behind.
class Cudart : public ::testing::Test {
 protected:
  void TearDown() override {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    cudaMemPool_t pool = nullptr;
    ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
    EXPECT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
    EXPECT_EQ(pool_attribute(cudaMemPoolAttrUsedMemCurrent), 0u);
    set_release_threshold(0);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  }
};

TEST_F(Cudart, CopyToPinnedMemoryIsSeenOnlyAfterTheStreamSynchronizes) {
  cudaStream_t s = make_stream(cudaStreamNonBlocking);
  std::vector<float> host(kN, 2.0f);
  float *dev = nullptr, *pinned = nullptr;
  ASSERT_EQ(cudaMallocAsync(reinterpret_cast<void**>(&dev), kN * sizeof(float), s), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), kN * sizeof(float)), cudaSuccess);
  std::fill(pinned, pinned + kN, 0.0f);
  ASSERT_EQ(cudaMemcpyAsync(dev, host.data(), kN * sizeof(float), cudaMemcpyHostToDevice, s),
            cudaSuccess);
  // CUDA staged the pageable source at the call: a later host write is not copied.
  host.assign(kN, 5.0f);
  ASSERT_EQ(cudaMemcpyAsync(pinned, dev, kN * sizeof(float), cudaMemcpyDeviceToHost, s),
            cudaSuccess);
  EXPECT_EQ(pinned[0], 0.0f);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (int i = 0; i < kN; ++i) ASSERT_EQ(pinned[i], 2.0f) << i;
  ASSERT_EQ(cudaFreeAsync(dev, s), cudaSuccess);
  ASSERT_EQ(cudaFreeHost(pinned), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST_F(Cudart, KernelLaunchRunsOnlyWhenTheHostWaits) {
  cudaStream_t s = make_stream(cudaStreamNonBlocking);
  float *mapped = nullptr, *dev = nullptr;
  ASSERT_EQ(
      cudaHostAlloc(reinterpret_cast<void**>(&mapped), kN * sizeof(float), cudaHostAllocMapped),
      cudaSuccess);
  ASSERT_EQ(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), mapped, 0), cudaSuccess);
  std::fill(mapped, mapped + kN, 1.0f);
  launch_add_one(dev, kN, s);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(mapped[kN - 1], 1.0f);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (int i = 0; i < kN; ++i) ASSERT_EQ(mapped[i], 2.0f) << i;
  ASSERT_EQ(cudaFreeHost(mapped), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST_F(Cudart, CopyToPageableMemoryWaitsForTheStream) {
  cudaStream_t s = make_stream(cudaStreamNonBlocking);
  float* dev = nullptr;
  ASSERT_EQ(cudaMallocAsync(reinterpret_cast<void**>(&dev), kN * sizeof(float), s), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(dev, 0, kN * sizeof(float), s), cudaSuccess);
  launch_add_one(dev, kN, s);
  std::vector<float> out(kN, -1.0f);
  ASSERT_EQ(cudaMemcpyAsync(out.data(), dev, kN * sizeof(float), cudaMemcpyDeviceToHost, s),
            cudaSuccess);
  for (int i = 0; i < kN; ++i) ASSERT_EQ(out[i], 1.0f) << i;
  ASSERT_EQ(cudaFreeAsync(dev, s), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST_F(Cudart, FreshDeviceMemoryReadsAsNaN) {
  float* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), kN * sizeof(float)), cudaSuccess);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(dev) % 256, 0u);
  std::vector<float> out(kN, 0.0f);
  ASSERT_EQ(cudaMemcpy(out.data(), dev, kN * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  for (float v : out) ASSERT_TRUE(std::isnan(v));
  ASSERT_EQ(cudaFree(dev), cudaSuccess);
}

TEST_F(Cudart, LegacyStreamAndBlockingStreamsWaitForEachOther) {
  cudaStream_t blocking = make_stream(cudaStreamDefault);
  cudaStream_t non_blocking = make_stream(cudaStreamNonBlocking);
  Log log;
  log.submit(blocking, 'a');
  log.submit(non_blocking, 'n');
  log.submit(cudaStreamLegacy, 'L');
  log.submit(blocking, 'b');
  EXPECT_EQ(log.text, "");
  // The legacy stream's work waits for the blocking stream's earlier work
  // only; the non-blocking stream's is independent.
  ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  EXPECT_EQ(log.text, "aL");
  ASSERT_EQ(cudaStreamSynchronize(blocking), cudaSuccess);
  EXPECT_EQ(log.text, "aLb");
  // A synchronous copy runs on the legacy stream: no wait for non-blocking ones.
  float* dev = nullptr;
  const float one = 1.0f;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), sizeof one), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dev, &one, sizeof one, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(log.text, "aLb");
  ASSERT_EQ(cudaFree(dev), cudaSuccess);  // a device-wide wait
  EXPECT_EQ(log.text, "aLbn");
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(log.text, "aLbn");

  // A blocking stream's later work waits for the legacy stream's earlier work.
  log.text.clear();
  log.submit(cudaStreamLegacy, 'L');
  log.submit(blocking, 'b');
  log.submit(cudaStreamPerThread, 'p');  // blocking too
  ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
  EXPECT_EQ(log.text, "Lp");
  ASSERT_EQ(cudaStreamSynchronize(blocking), cudaSuccess);
  EXPECT_EQ(log.text, "Lpb");
  ASSERT_EQ(cudaStreamDestroy(blocking), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(non_blocking), cudaSuccess);
}

TEST_F(Cudart, QueryRunsNothingUntilAPollWouldSpinForever) {
  cudaStream_t s = make_stream(cudaStreamNonBlocking);
  Log log;
  ASSERT_EQ(cudaStreamQuery(s), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(
                s, [](void* l) { static_cast<Log*>(l)->text += 'h'; }, &log),
            cudaSuccess);
  log.submit(s, 'w');
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // not ready is no error
  EXPECT_EQ(log.text, "");
  int polls = 1;
  while (cudaStreamQuery(s) == cudaErrorNotReady) ++polls;
  EXPECT_EQ(log.text, "hw");
  EXPECT_GT(polls, 100);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST_F(Cudart, DestroyedStreamFinishesItsWorkButIsNoLongerAHandle) {
  cudaStream_t s = make_stream(cudaStreamNonBlocking);
  Log log;
  log.submit(s, 'x');
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(log.text, "");
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(log.text, "x");
}

TEST_F(Cudart, StreamIdsTellApartStreamsAtOneAddress) {
  unsigned long long first = 0, second = 0;
  cudaStream_t a = make_stream(cudaStreamNonBlocking);
  ASSERT_EQ(cudaStreamGetId(a, &first), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(a), cudaSuccess);
  cudaStream_t b = make_stream(cudaStreamNonBlocking);
  ASSERT_EQ(cudaStreamGetId(b, &second), cudaSuccess);
  EXPECT_NE(first, second);
  ASSERT_EQ(cudaStreamDestroy(b), cudaSuccess);
}

// What fk's graph.cpp does: allocate, copy in, launch, copy out and free in
// a capture; instantiate; replay twice with new input.
TEST_F(Cudart, CaptureRecordsWorkAndTheGraphReplaysIt) {
  cudaStream_t s = make_stream(cudaStreamNonBlocking);
  float *in = nullptr, *out = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&in), kN * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&out), kN * sizeof(float)), cudaSuccess);
  std::fill(in, in + kN, 3.0f);
  std::fill(out, out + kN, 0.0f);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  ASSERT_EQ(cudaStreamIsCapturing(s, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  float* tmp = nullptr;
  ASSERT_EQ(cudaMallocAsync(reinterpret_cast<void**>(&tmp), kN * sizeof(float), s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(tmp, in, kN * sizeof(float), cudaMemcpyHostToDevice, s), cudaSuccess);
  launch_add_one(tmp, kN, s);
  ASSERT_EQ(cudaMemcpyAsync(out, tmp, kN * sizeof(float), cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaFreeAsync(tmp, s), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  ASSERT_EQ(cudaStreamIsCapturing(s, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(out[0], 0.0f);  // recorded, not run
  size_t nodes = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 5u);  // allocation, copy, kernel, copy, free
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  EXPECT_EQ(out[0], 0.0f);  // a launch is stream work like any other
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (int i = 0; i < kN; ++i) ASSERT_EQ(out[i], 4.0f) << i;
  std::fill(in, in + kN, 10.0f);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (int i = 0; i < kN; ++i) ASSERT_EQ(out[i], 11.0f) << i;
  // The graph's allocation is no memory of the host's once the capture freed it.
  std::vector<float> back(kN);
  EXPECT_EQ(cudaMemcpy(back.data(), tmp, kN * sizeof(float), cudaMemcpyDeviceToHost),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  ASSERT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  ASSERT_EQ(cudaFreeHost(in), cudaSuccess);
  ASSERT_EQ(cudaFreeHost(out), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST_F(Cudart, GraphAllocationLeftToTheHostMustBeFreedBeforeTheNextLaunch) {
  cudaStream_t s = make_stream(cudaStreamNonBlocking);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  void* kept = nullptr;
  ASSERT_EQ(cudaMallocAsync(&kept, 256, s), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(kept, 0, 256, s), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaFreeAsync(kept, s), cudaErrorInvalidValue);  // not allocated before a launch
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  EXPECT_EQ(cudaGraphLaunch(exec, s), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  unsigned char first = 1;
  ASSERT_EQ(cudaMemcpyAsync(&first, kept, 1, cudaMemcpyDeviceToHost, s), cudaSuccess);
  EXPECT_EQ(first, 0);
  ASSERT_EQ(cudaFreeAsync(kept, s), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaFreeAsync(kept, s), cudaSuccess);
  ASSERT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

// A call CUDA forbids while a capture runs fails with CUDA's error and
// invalidates the capture: later work on the stream is refused, and the
// capture ends without a graph. `before` is device memory allocated before
// the capture.
struct ForbiddenCall {
  const char* name;
  cudaError_t expected;
  cudaError_t (*call)(cudaStream_t captured, void* before);
};

const ForbiddenCall kForbidden[] = {
    {"cudaStreamSynchronize of the captured stream", cudaErrorStreamCaptureUnsupported,
     [](cudaStream_t s, void*) { return cudaStreamSynchronize(s); }},
    {"cudaDeviceSynchronize", cudaErrorStreamCaptureUnsupported,
     [](cudaStream_t, void*) { return cudaDeviceSynchronize(); }},
    {"cudaMalloc", cudaErrorStreamCaptureUnsupported,
     [](cudaStream_t, void*) {
       void* p = nullptr;
       return cudaMalloc(&p, 16);
     }},
    {"cudaFree", cudaErrorStreamCaptureUnsupported,
     [](cudaStream_t, void* before) { return cudaFree(before); }},
    {"cudaMallocHost", cudaErrorStreamCaptureUnsupported,
     [](cudaStream_t, void*) {
       void* p = nullptr;
       return cudaMallocHost(&p, 16);
     }},
    {"cudaMemcpy", cudaErrorStreamCaptureUnsupported,
     [](cudaStream_t, void* before) {
       float host = 0;
       return cudaMemcpy(&host, before, sizeof host, cudaMemcpyDeviceToHost);
     }},
    {"cudaMemcpyAsync from pageable memory", cudaErrorStreamCaptureUnsupported,
     [](cudaStream_t s, void* before) {
       const float host = 1;
       return cudaMemcpyAsync(before, &host, sizeof host, cudaMemcpyHostToDevice, s);
     }},
    {"cudaMemcpyAsync to pageable memory", cudaErrorStreamCaptureUnsupported,
     [](cudaStream_t s, void* before) {
       float host = 0;
       return cudaMemcpyAsync(&host, before, sizeof host, cudaMemcpyDeviceToHost, s);
     }},
    {"cudaFreeAsync of memory allocated before the capture", cudaErrorInvalidValue,
     [](cudaStream_t s, void* before) { return cudaFreeAsync(before, s); }},
    {"cudaStreamSynchronize of the legacy stream", cudaErrorStreamCaptureImplicit,
     [](cudaStream_t, void*) { return cudaStreamSynchronize(nullptr); }},
};

TEST_F(Cudart, ForbiddenCallsDuringCaptureInvalidateIt) {
  for (const ForbiddenCall& f : kForbidden) {
    SCOPED_TRACE(f.name);
    // The legacy stream's rule is about blocking streams.
    const bool legacy = f.expected == cudaErrorStreamCaptureImplicit;
    cudaStream_t s = make_stream(legacy ? cudaStreamDefault : cudaStreamNonBlocking);
    void* before = nullptr;
    ASSERT_EQ(cudaMallocAsync(&before, 64, s), cudaSuccess);
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    EXPECT_EQ(f.call(s, before), f.expected);
    EXPECT_EQ(cudaGetLastError(), f.expected);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    if (!legacy) {
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      ASSERT_EQ(cudaStreamIsCapturing(s, &status), cudaSuccess);
      EXPECT_EQ(status, cudaStreamCaptureStatusInvalidated);
    }
    fkemu::submit(s, [] { ADD_FAILURE() << "work of an invalidated capture ran"; });
    EXPECT_EQ(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);
    cudaGraph_t graph = reinterpret_cast<cudaGraph_t>(uintptr_t{1});
    EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
    EXPECT_EQ(graph, nullptr);
    EXPECT_EQ(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);
    EXPECT_EQ(cudaFreeAsync(before, s), cudaSuccess);
    ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
  }
}

TEST_F(Cudart, RelaxedCaptureAllowsUnsafeCallsAndOtherThreadsDoInThreadLocalMode) {
  for (cudaStreamCaptureMode mode :
       {cudaStreamCaptureModeRelaxed, cudaStreamCaptureModeThreadLocal}) {
    cudaStream_t s = make_stream(cudaStreamNonBlocking);
    ASSERT_EQ(cudaStreamBeginCapture(s, mode), cudaSuccess);
    cudaError_t other_thread = cudaErrorUnknown;
    std::thread([&] {
      void* p = nullptr;
      other_thread = cudaMalloc(&p, 16);
      if (other_thread == cudaSuccess) other_thread = cudaFree(p);
    }).join();
    EXPECT_EQ(other_thread, cudaSuccess);
    if (mode == cudaStreamCaptureModeRelaxed) {
      void* p = nullptr;
      ASSERT_EQ(cudaMalloc(&p, 16), cudaSuccess);
      ASSERT_EQ(cudaFree(p), cudaSuccess);
    }
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
    ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);
    ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
  }
}

TEST_F(Cudart, CaptureRules) {
  EXPECT_EQ(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal),
            cudaErrorStreamCaptureUnsupported);
  cudaStream_t s = make_stream(cudaStreamDefault);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorIllegalState);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaErrorIllegalState);
  // The legacy stream cannot say while a blocking stream captures.
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  EXPECT_EQ(cudaStreamIsCapturing(nullptr, &status), cudaErrorStreamCaptureImplicit);
  cudaError_t other_thread = cudaSuccess;
  std::thread([&] { other_thread = cudaStreamEndCapture(s, &graph); }).join();
  EXPECT_EQ(other_thread, cudaErrorStreamCaptureWrongThread);
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  size_t nodes = 1;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 0u);
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaErrorInvalidValue);
  cudaGetLastError();
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST_F(Cudart, PoolCountersFollowStreamOrderedAllocations) {
  cudaStream_t s = make_stream(cudaStreamNonBlocking);
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  uint64_t zero = 0;
  ASSERT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero), cudaSuccess);
  ASSERT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero), cudaSuccess);
  void *a = nullptr, *b = nullptr;
  ASSERT_EQ(cudaMallocAsync(&a, 1000, s), cudaSuccess);
  ASSERT_EQ(cudaMallocAsync(&b, 500, s), cudaSuccess);
  EXPECT_EQ(pool_attribute(cudaMemPoolAttrUsedMemCurrent), 1500u);
  EXPECT_EQ(pool_attribute(cudaMemPoolAttrReservedMemCurrent), 1500u);
  ASSERT_EQ(cudaFreeAsync(a, s), cudaSuccess);
  EXPECT_EQ(pool_attribute(cudaMemPoolAttrUsedMemCurrent), 1500u);  // the free has not run
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(pool_attribute(cudaMemPoolAttrUsedMemCurrent), 500u);
  // Release threshold 0 (CUDA's default): a synchronization gives back what is unused.
  EXPECT_EQ(pool_attribute(cudaMemPoolAttrReservedMemCurrent), 500u);
  EXPECT_EQ(pool_attribute(cudaMemPoolAttrUsedMemHigh), 1500u);
  EXPECT_EQ(pool_attribute(cudaMemPoolAttrReservedMemHigh), 1500u);
  // Kept up to the threshold, until trimmed.
  set_release_threshold(UINT64_MAX);
  ASSERT_EQ(cudaFreeAsync(b, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(pool_attribute(cudaMemPoolAttrUsedMemCurrent), 0u);
  EXPECT_EQ(pool_attribute(cudaMemPoolAttrReservedMemCurrent), 500u);
  ASSERT_EQ(cudaMemPoolTrimTo(pool, 100), cudaSuccess);
  EXPECT_EQ(pool_attribute(cudaMemPoolAttrReservedMemCurrent), 100u);
  ASSERT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
  EXPECT_EQ(pool_attribute(cudaMemPoolAttrReservedMemCurrent), 0u);
  uint64_t one = 1;
  EXPECT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &one), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &zero),
            cudaErrorInvalidValue);
  cudaGetLastError();
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

// fk's pool_allocate on out of memory: wait for the device, trim, retry.
TEST_F(Cudart, DeviceMemoryLimitFailsAllocationsUntilFreesRun) {
  ASSERT_EQ(setenv("FKEMU_DEVICE_MEMORY_BYTES", "1000000", 1), 0);
  set_release_threshold(UINT64_MAX);
  cudaStream_t s = make_stream(cudaStreamNonBlocking);
  void *a = nullptr, *b = nullptr;
  ASSERT_EQ(cudaMallocAsync(&a, 600000, s), cudaSuccess);
  EXPECT_EQ(cudaMallocAsync(&b, 600000, s), cudaErrorMemoryAllocation);
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaMalloc(&b, 600000), cudaErrorMemoryAllocation);
  ASSERT_EQ(cudaFreeAsync(a, s), cudaSuccess);
  EXPECT_EQ(cudaMallocAsync(&b, 600000, s), cudaErrorMemoryAllocation);  // the free waits
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&b, 600000), cudaErrorMemoryAllocation);  // the pool keeps it
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  ASSERT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, 600000), cudaSuccess);
  ASSERT_EQ(cudaFree(b), cudaSuccess);
  ASSERT_EQ(cudaMallocAsync(&b, 600000, s), cudaSuccess);
  ASSERT_EQ(cudaFreeAsync(b, s), cudaSuccess);
  cudaGetLastError();
  ASSERT_EQ(unsetenv("FKEMU_DEVICE_MEMORY_BYTES"), 0);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST_F(Cudart, CopiesAndFreesOfMemoryNotAllocatedAreRefused) {
  float* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), kN * sizeof(float)), cudaSuccess);
  std::vector<float> host(kN + 1);
  // Past the allocation's end.
  EXPECT_EQ(cudaMemcpy(host.data(), dev, (kN + 1) * sizeof(float), cudaMemcpyDeviceToHost),
            cudaErrorInvalidValue);
  // Host memory where the kind says device memory, and the other way round.
  EXPECT_EQ(cudaMemcpy(dev, host.data(), sizeof(float), cudaMemcpyDeviceToDevice),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(host.data(), dev, sizeof(float), cudaMemcpyHostToHost),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemsetAsync(host.data(), 0, sizeof(float), nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(host.data(), dev, sizeof(float), static_cast<cudaMemcpyKind>(7)),
            cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaFree(dev + 1), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(dev), cudaErrorInvalidValue);
  ASSERT_EQ(cudaFree(dev), cudaSuccess);
  EXPECT_EQ(cudaFree(dev), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(host.data(), dev, sizeof(float), cudaMemcpyDeviceToHost),
            cudaErrorInvalidValue);
  void* pinned = nullptr;
  void* mapped = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 64), cudaSuccess);
  EXPECT_EQ(cudaHostGetDevicePointer(&mapped, pinned, 0), cudaErrorInvalidValue);
  ASSERT_EQ(cudaFreeHost(pinned), cudaSuccess);
  // cudaMemcpyDefault infers the direction.
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), sizeof(float)), cudaSuccess);
  const float one = 1.0f;
  float back = 0.0f;
  ASSERT_EQ(cudaMemcpy(dev, &one, sizeof one, cudaMemcpyDefault), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(&back, dev, sizeof back, cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(back, 1.0f);
  ASSERT_EQ(cudaFree(dev), cudaSuccess);
  cudaGetLastError();
}

// The launchers' own runtime calls (fkemu::memcpy_async, as the rewrite
// maps cudaMemcpyAsync in a .cu) reach the same implementation.
TEST_F(Cudart, EmulatorCallsShareTheRuntime) {
  cudaStream_t s = make_stream(cudaStreamNonBlocking);
  void* dev = nullptr;
  ASSERT_EQ(fkemu::malloc_async(&dev, 16, s), cudaSuccess);
  EXPECT_EQ(pool_attribute(cudaMemPoolAttrUsedMemCurrent), 16u);
  unsigned char* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), 16), cudaSuccess);
  std::memset(pinned, 0, 16);
  ASSERT_EQ(fkemu::memset_async(dev, 7, 16, s), cudaSuccess);
  ASSERT_EQ(fkemu::memcpy_async(pinned, dev, 16, cudaMemcpyDeviceToHost, s), cudaSuccess);
  EXPECT_EQ(pinned[0], 0);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(pinned[15], 7);
  EXPECT_EQ(fkemu::free_async(pinned, s), cudaErrorInvalidValue);
  EXPECT_EQ(fkemu::get_last_error(), cudaErrorInvalidValue);
  EXPECT_EQ(fkemu::get_last_error(), cudaSuccess);
  ASSERT_EQ(fkemu::free_async(dev, s), cudaSuccess);
  ASSERT_EQ(cudaFreeHost(pinned), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

void count_blocks(int* blocks) {
  if (fkemu::thread_index().x == 0) ++*blocks;
  fkemu::sync_grid();
}

TEST_F(Cudart, CooperativeLaunchIsDeferredAndLimitedToOneBlockPerSm) {
  const void* kernel = fkemu::kernel_id(count_blocks);
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  int per_sm = 0;
  ASSERT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 32, 0), cudaSuccess);
  EXPECT_EQ(per_sm, 1);
  int* blocks = nullptr;
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&blocks), sizeof(int), cudaHostAllocMapped),
            cudaSuccess);
  *blocks = 0;
  void* args[] = {&blocks};
  EXPECT_EQ(cudaLaunchCooperativeKernel(kernel, dim3(sms + 1), dim3(32), args, 0, nullptr),
            cudaErrorCooperativeLaunchTooLarge);
  EXPECT_EQ(cudaGetLastError(), cudaErrorCooperativeLaunchTooLarge);
  ASSERT_EQ(cudaLaunchCooperativeKernel(kernel, dim3(4), dim3(32), args, 0, nullptr), cudaSuccess);
  EXPECT_EQ(*blocks, 0);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(*blocks, 4);
  ASSERT_EQ(cudaFreeHost(blocks), cudaSuccess);
}

TEST_F(Cudart, DeviceIsOneH200) {
  int count = 0, device = -1, value = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(count, 1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(device, 0);
  EXPECT_EQ(cudaSetDevice(1), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, 1),
            cudaErrorInvalidDevice);
  cudaGetLastError();
  const std::pair<cudaDeviceAttr, int> expected[] = {
      {cudaDevAttrComputeCapabilityMajor, 9},
      {cudaDevAttrComputeCapabilityMinor, 0},
      {cudaDevAttrMultiProcessorCount, 132},
      {cudaDevAttrCooperativeLaunch, 1},
      {cudaDevAttrMaxSharedMemoryPerBlockOptin, 227 * 1024},
      {cudaDevAttrMaxThreadsPerBlock, 1024},
      {cudaDevAttrWarpSize, 32},
  };
  for (const auto& [attr, v] : expected) {
    ASSERT_EQ(cudaDeviceGetAttribute(&value, attr, 0), cudaSuccess) << attr;
    EXPECT_EQ(value, v) << attr;
  }
  // The properties agree with the attributes, and name the emulation.
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  EXPECT_NE(std::string(prop.name).find("emulated"), std::string::npos) << prop.name;
  EXPECT_EQ(prop.major, 9);
  EXPECT_EQ(prop.minor, 0);
  EXPECT_EQ(prop.multiProcessorCount, 132);
  EXPECT_EQ(prop.warpSize, 32);
  EXPECT_EQ(prop.maxThreadsPerBlock, 1024);
  EXPECT_EQ(prop.sharedMemPerBlockOptin, size_t{227 * 1024});
  EXPECT_EQ(prop.cooperativeLaunch, 1);
  EXPECT_EQ(prop.totalGlobalMem, size_t{141'000'000'000});
  EXPECT_EQ(cudaGetDeviceProperties(&prop, 1), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetDeviceProperties(nullptr, 0), cudaErrorInvalidValue);
  cudaGetLastError();
  int runtime = 0, driver = 0;
  ASSERT_EQ(cudaRuntimeGetVersion(&runtime), cudaSuccess);
  ASSERT_EQ(cudaDriverGetVersion(&driver), cudaSuccess);
  EXPECT_EQ(runtime, CUDART_VERSION);
  EXPECT_GE(driver, runtime);
}

TEST_F(Cudart, KernelAttributesFollowTheSharedMemoryOptIn) {
  const void* kernel = reinterpret_cast<const void*>(&add_one);
  cudaFuncAttributes attr{};
  ASSERT_EQ(cudaFuncGetAttributes(&attr, kernel), cudaSuccess);
  EXPECT_EQ(attr.maxDynamicSharedSizeBytes, 48 * 1024);
  EXPECT_EQ(attr.maxThreadsPerBlock, 1024);
  EXPECT_EQ(attr.binaryVersion, 90);
  ASSERT_EQ(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 100000),
            cudaSuccess);
  ASSERT_EQ(cudaFuncGetAttributes(&attr, kernel), cudaSuccess);
  EXPECT_EQ(attr.maxDynamicSharedSizeBytes, 100000);
  EXPECT_EQ(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 300000),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  int blocks = -1;
  ASSERT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, 256, 200000),
            cudaSuccess);
  EXPECT_EQ(blocks, 0);
}

TEST_F(Cudart, ErrorsAreCudasAndTheLastOneIsPerThread) {
  EXPECT_STREQ(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
  EXPECT_STREQ(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
  EXPECT_STREQ(cudaGetErrorName(cudaErrorStreamCaptureInvalidated),
               "cudaErrorStreamCaptureInvalidated");
  EXPECT_STREQ(cudaGetErrorString(cudaSuccess), "no error");
  EXPECT_STREQ(cudaGetErrorName(static_cast<cudaError_t>(12345)), "unrecognized error code");
  EXPECT_EQ(cudaSetDevice(3), cudaErrorInvalidDevice);
  cudaError_t other_thread = cudaErrorUnknown;
  std::thread([&] { other_thread = cudaPeekAtLastError(); }).join();
  EXPECT_EQ(other_thread, cudaSuccess);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// CUDA refuses a launch's configuration at the launch; what a kernel does
// wrong shows when its work runs (here an fk::Error from the wait).
void returns_early_at_barrier(int* unused) {
  if (fkemu::thread_index().x == 0) return;
  fkemu::sync_block();
  *unused = 0;
}

TEST_F(Cudart, LaunchConfigurationIsCheckedAtTheLaunchAndKernelFaultsAtTheWait) {
  cudaStream_t s = make_stream(cudaStreamNonBlocking);
  int unused = 1;
  EXPECT_THROW(
      fkemu::launch(fkemu::config(dim3(1), dim3(2048), 0, s), returns_early_at_barrier, &unused),
      fk::Error);
  EXPECT_THROW(fkemu::launch(fkemu::config(dim3(1), dim3(32), 64 * 1024, s),
                             returns_early_at_barrier, &unused),
               fk::Error);
  fkemu::launch(fkemu::config(dim3(1), dim3(32), 0, s), returns_early_at_barrier, &unused);
  EXPECT_THROW(cudaStreamSynchronize(s), fk::Error);
  EXPECT_EQ(unused, 1);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);  // the failed work is gone
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

// Threads each on their own stream, allocating, launching, copying and
// waiting at once: one lock keeps the runtime and the emulator whole.
TEST_F(Cudart, ThreadsOnTheirOwnStreams) {
  // Kernels long enough that another thread launches while one runs.
  constexpr int kThreads = 4, kRounds = 20, kLength = 2048;
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &wrong] {
      cudaStream_t s = nullptr;
      if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
        wrong[t] = -1;
        return;
      }
      for (int r = 0; r < kRounds; ++r) {
        std::vector<float> host(kLength, static_cast<float>(t + r)), out(kLength, 0.0f);
        float* dev = nullptr;
        if (cudaMallocAsync(reinterpret_cast<void**>(&dev), kLength * sizeof(float), s) !=
            cudaSuccess)
          ++wrong[t];
        cudaMemcpyAsync(dev, host.data(), kLength * sizeof(float), cudaMemcpyHostToDevice, s);
        launch_add_one(dev, kLength, s);
        cudaMemcpyAsync(out.data(), dev, kLength * sizeof(float), cudaMemcpyDeviceToHost, s);
        cudaFreeAsync(dev, s);
        for (float v : out) wrong[t] += v != static_cast<float>(t + r + 1);
      }
      wrong[t] += cudaGetLastError() != cudaSuccess;
      cudaStreamDestroy(s);
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

// FKEMU_STREAMS=immediate (read once per process): the test runs itself
// again with it set.
TEST(CudartImmediate, WorkRunsWhenSubmitted) {
  const char* mode = std::getenv("FKEMU_STREAMS");
  if (mode == nullptr) {
    char self[4096] = {};
    ASSERT_GT(readlink("/proc/self/exe", self, sizeof self - 1), 0);
    const std::string command = std::string("FKEMU_STREAMS=immediate '") + self +
                                "' --gtest_brief=1 "
                                "--gtest_filter=CudartImmediate.WorkRunsWhenSubmitted";
    EXPECT_EQ(std::system(command.c_str()), 0);
    return;
  }
  cudaStream_t s = make_stream(cudaStreamNonBlocking);
  Log log;
  log.submit(s, 'a');
  EXPECT_EQ(log.text, "a");
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  log.submit(s, 'c');  // a capture still records
  EXPECT_EQ(log.text, "a");
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  EXPECT_EQ(log.text, "ac");
  ASSERT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

}  // namespace
