#pragma once
// The emulated CUDA runtime's parts as its files share them (cudart_*.cpp
// define the C API on top): streams and their deferred work, captures, the
// memory registry, graphs. Not a public header: tests use the C API.
//
// The model, as CUDA documents it where the host can observe it:
//   - work submitted to a stream (a launch, copy, fill, stream-ordered free)
//     waits in the stream's queue and runs only when the host must see it:
//     a synchronization, a copy into pageable memory, a free that
//     synchronizes. Host code that reads a result it never waited for sees
//     the value from before the work (0xff bytes in fresh memory).
//   - the legacy default stream waits for earlier work on every blocking
//     stream and blocking streams wait for its earlier work (a sequence
//     number orders them); non-blocking streams are independent.
//   - a capturing stream records its work into a graph instead; what CUDA
//     forbids during a capture fails and invalidates it.
// One recursive mutex guards it all and is held while work runs (the
// emulator's launches are not reentrant). FKEMU_STREAMS=immediate runs work
// when it is submitted (debugging).
#include <cuda_runtime.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "emulated_device.h"

namespace fkemu::runtime {

// The calling thread's last error becomes e unless e is cudaSuccess; e.
cudaError_t record(cudaError_t e);

std::recursive_mutex& mutex();
using Lock = std::lock_guard<std::recursive_mutex>;

// Memory a capture allocated (cudaMallocAsync on a capturing stream): its
// address fixed at the capture, kept while a graph made from it lives, and
// allocated again (0xff-filled) by each launch, which leaves it to the host
// to free unless the graph frees it itself.
struct GraphBlock {
  void* address = nullptr;
  size_t bytes = 0;
  bool held = true;             // a capture, graph or exec still names it
  bool freed_in_graph = false;  // the capture freed it too
  bool outstanding = false;     // a launch allocated it and the host has not freed it yet
  int pending_frees = 0;        // host frees queued on a stream, not run yet
};

// What a capture records and a graph replays, in order.
struct GraphBody {
  std::vector<StreamWork> nodes;
  std::vector<GraphBlock*> blocks;
  ~GraphBody();
};

struct Capture {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;
  bool invalidated = false;
  unsigned long long id = 0;
  std::shared_ptr<GraphBody> body = std::make_shared<GraphBody>();
};

struct Stream {
  bool legacy = false;
  bool blocking = true;  // waits for and is waited for by the legacy stream
  bool destroyed = false;
  unsigned long long id = 0;
  struct Pending {
    uint64_t sequence;
    StreamWork work;
  };
  std::deque<Pending> queue;
  std::unique_ptr<Capture> capture;
  int unanswered_polls = 0;  // cudaStreamQuery's since the queue last ran
};

// The stream `s` names (nullptr and cudaStreamLegacy the legacy stream,
// cudaStreamPerThread the calling thread's); nullptr when s names none (a
// destroyed or made-up handle).
Stream* find_stream(cudaStream_t s);
// Queues, records or refuses `work` on s, as the stream model does.
cudaError_t enqueue(Stream& s, StreamWork work);
// Runs s's queued work (with what it waits for on other streams), or every
// stream's; then the default pool gives back what its release threshold
// lets go.
void drain(Stream& s);
void drain_all();
// Runs s's queued work up to and including the piece numbered `sequence`
// (with what it waits for), then lets the default pool give back, as drain.
void drain_through(Stream& s, uint64_t sequence);
// The blocking stream capturing (nullptr: none), which the legacy stream may
// not wait for.
Stream* blocking_stream_capturing();
// For a call that would wait on `s`: cudaErrorStreamCaptureUnsupported if s
// captures, cudaErrorStreamCaptureImplicit if s is the legacy stream and a
// blocking stream captures, each invalidating that capture; else cudaSuccess.
cudaError_t refuse_wait_on(Stream& s);
// For a call CUDA calls "potentially unsafe" during a capture (synchronous
// allocation, free, copy or fill; device synchronization): refused while a
// global-mode capture runs, or a thread-local one this thread began; the
// capture is invalidated.
cudaError_t refuse_unsafe_call();
// Every stream, legacy and per-thread ones included.
std::vector<Stream*> all_streams();

// The device's memory: FKEMU_DEVICE_MEMORY_BYTES, else an H200's 141 GB.
uint64_t device_bytes();
// Where an address range lies.
enum class Place { kDevice, kPinned, kPageable };
// kDevice or kPinned when [p, p + bytes) lies in one allocation; kPageable
// when p lies in none; cudaErrorInvalidValue (through `error`) when it runs
// past the end of the allocation it starts in.
Place place_of(const void* p, size_t bytes, cudaError_t* error);
// The default pool gives back reserved memory past its release threshold.
void release_pool_excess();
// A launch of a graph holding `blocks`: cudaErrorInvalidValue while one a
// previous launch allocated is not freed (unless auto_free), else marks them
// allocated.
cudaError_t launch_graph_blocks(const std::vector<GraphBlock*>& blocks, bool auto_free);
// A graph body no longer names `blocks`: those not outstanding are freed.
void release_graph_blocks(const std::vector<GraphBlock*>& blocks);

}  // namespace fkemu::runtime
