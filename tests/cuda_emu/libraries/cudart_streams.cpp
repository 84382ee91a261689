// The emulated CUDA runtime's streams (emulated_runtime.h): their deferred
// queues and the order between them, synchronization, and stream capture.
// Installed as the emulator's stream model at static initialization, so
// every emulated launch, copy and fill (fkemu::submit) lands here.
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "emulated_runtime.h"

namespace fkemu::runtime {

cudaGraph_t make_graph(std::shared_ptr<GraphBody> body);  // cudart_graphs.cpp

namespace {

struct Streams {
  Streams() { legacy.legacy = true; }
  Stream legacy;
  std::unordered_map<cudaStream_t, std::unique_ptr<Stream>> created;
  std::unordered_map<std::thread::id, std::unique_ptr<Stream>> per_thread;
  // Orders work across streams: the legacy stream's waits compare them.
  uint64_t sequence = 0;
  unsigned long long next_stream_id = 1;  // the legacy stream's is 0
  unsigned long long next_capture_id = 1;
};

Streams& streams() {
  static Streams* s = new Streams;  // never destroyed: static destructors may still free
  return *s;
}

bool immediate() {
  static const bool on = [] {
    const char* v = std::getenv("FKEMU_STREAMS");
    return v != nullptr && std::strcmp(v, "immediate") == 0;
  }();
  return on;
}

// Runs s's queued work with a sequence number below `limit`, each piece
// after the work it waits for on other streams: the legacy stream's after
// every blocking stream's earlier work, a blocking stream's after the legacy
// stream's.
void run_before(Stream& s, uint64_t limit) {
  Streams& all = streams();
  while (!s.queue.empty() && s.queue.front().sequence < limit) {
    Stream::Pending p = std::move(s.queue.front());
    s.queue.pop_front();
    if (s.legacy) {
      for (Stream* other : all_streams())
        if (other->blocking && !other->legacy) run_before(*other, p.sequence);
    } else if (s.blocking) {
      run_before(all.legacy, p.sequence);
    }
    p.work();
  }
}

void invalidate(Stream& s) {
  if (s.capture) s.capture->invalidated = true;
}

// The emulator's stream model: a launch, copy or fill submitted through
// fkemu::submit. A refusal is the launch's error, as CUDA reports it: the
// thread's last error.
void submit(cudaStream_t stream, StreamWork work) {
  Lock lock(mutex());
  Stream* s = find_stream(stream);
  if (s == nullptr) {
    record(cudaErrorInvalidResourceHandle);
    return;
  }
  record(enqueue(*s, std::move(work)));
}

[[maybe_unused]] const bool g_installed = [] {
  set_stream_model(&submit);
  return true;
}();

}  // namespace

std::recursive_mutex& mutex() {
  static std::recursive_mutex* m = new std::recursive_mutex;
  return *m;
}

Stream* find_stream(cudaStream_t s) {
  Streams& all = streams();
  if (s == nullptr || s == cudaStreamLegacy) return &all.legacy;
  if (s == cudaStreamPerThread) {
    auto& mine = all.per_thread[std::this_thread::get_id()];
    if (!mine) {
      mine = std::make_unique<Stream>();
      mine->id = all.next_stream_id++;
    }
    return mine.get();
  }
  const auto it = all.created.find(s);
  return it == all.created.end() || it->second->destroyed ? nullptr : it->second.get();
}

std::vector<Stream*> all_streams() {
  Streams& all = streams();
  std::vector<Stream*> out{&all.legacy};
  for (auto& [handle, s] : all.created) out.push_back(s.get());
  for (auto& [thread, s] : all.per_thread) out.push_back(s.get());
  return out;
}

cudaError_t enqueue(Stream& s, StreamWork work) {
  if (s.capture) {
    if (s.capture->invalidated) return cudaErrorStreamCaptureInvalidated;
    s.capture->body->nodes.push_back(std::move(work));
    return cudaSuccess;
  }
  if (s.legacy) {
    if (Stream* b = blocking_stream_capturing()) {
      invalidate(*b);
      return cudaErrorStreamCaptureImplicit;
    }
  }
  if (immediate()) {
    work();
    return cudaSuccess;
  }
  s.queue.push_back({++streams().sequence, std::move(work)});
  return cudaSuccess;
}

void drain(Stream& s) {
  s.unanswered_polls = 0;
  drain_through(s, std::numeric_limits<uint64_t>::max() - 1);
}

void drain_through(Stream& s, uint64_t sequence) {
  run_before(s, sequence + 1);
  release_pool_excess();
}

void drain_all() {
  for (bool ran = true; ran;) {
    ran = false;
    for (Stream* s : all_streams()) {
      if (s->queue.empty()) continue;
      ran = true;
      run_before(*s, std::numeric_limits<uint64_t>::max());
    }
  }
  std::erase_if(streams().created, [](const auto& kv) { return kv.second->destroyed; });
  release_pool_excess();
}

Stream* blocking_stream_capturing() {
  for (Stream* s : all_streams())
    if (!s->legacy && s->blocking && s->capture) return s;
  return nullptr;
}

cudaError_t refuse_wait_on(Stream& s) {
  if (s.capture) {
    invalidate(s);
    return cudaErrorStreamCaptureUnsupported;
  }
  if (s.legacy) {
    if (Stream* b = blocking_stream_capturing()) {
      invalidate(*b);
      return cudaErrorStreamCaptureImplicit;
    }
  }
  return cudaSuccess;
}

cudaError_t refuse_unsafe_call() {
  cudaError_t e = cudaSuccess;
  for (Stream* s : all_streams()) {
    if (!s->capture) continue;
    const Capture& c = *s->capture;
    if (c.mode == cudaStreamCaptureModeGlobal ||
        (c.mode == cudaStreamCaptureModeThreadLocal && c.thread == std::this_thread::get_id())) {
      invalidate(*s);
      e = cudaErrorStreamCaptureUnsupported;
    }
  }
  return e;
}

}  // namespace fkemu::runtime

using fkemu::runtime::find_stream;
using fkemu::runtime::Lock;
using fkemu::runtime::mutex;
using fkemu::runtime::record;
using fkemu::runtime::Stream;

extern "C" {

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  if (pStream == nullptr || (flags & ~unsigned{cudaStreamNonBlocking}) != 0)
    return record(cudaErrorInvalidValue);
  Lock lock(mutex());
  auto& all = fkemu::runtime::streams();
  auto s = std::make_unique<Stream>();
  s->blocking = (flags & cudaStreamNonBlocking) == 0;
  s->id = all.next_stream_id++;
  *pStream = reinterpret_cast<cudaStream_t>(s.get());
  all.created[*pStream] = std::move(s);
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  return cudaStreamCreateWithFlags(pStream, cudaStreamDefault);
}

// Work still queued runs later, as CUDA lets it complete after the call.
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  Lock lock(mutex());
  auto& all = fkemu::runtime::streams();
  const auto it = all.created.find(stream);
  if (it == all.created.end() || it->second->destroyed)
    return record(cudaErrorInvalidResourceHandle);
  it->second->capture.reset();
  if (it->second->queue.empty())
    all.created.erase(it);
  else
    it->second->destroyed = true;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  Lock lock(mutex());
  Stream* s = find_stream(stream);
  if (s == nullptr) return record(cudaErrorInvalidResourceHandle);
  if (const cudaError_t e = fkemu::runtime::refuse_wait_on(*s)) return record(e);
  fkemu::runtime::drain(*s);
  return cudaSuccess;
}

// Not ready while work is queued, none of it run: a query is no wait, and a
// caller must not see its effects (fk's tests hold a stream behind a host
// function and check just that). Deferred work never finishes on its own,
// so a poll that keeps asking is answered by running the stream at its
// kPollsBeforeRunning-th query instead of spinning forever.
cudaError_t cudaStreamQuery(cudaStream_t stream) {
  constexpr int kPollsBeforeRunning = 1000;
  Lock lock(mutex());
  Stream* s = find_stream(stream);
  if (s == nullptr) return record(cudaErrorInvalidResourceHandle);
  if (const cudaError_t e = fkemu::runtime::refuse_wait_on(*s)) return record(e);
  if (s->queue.empty()) {
    s->unanswered_polls = 0;
    return cudaSuccess;
  }
  if (++s->unanswered_polls < kPollsBeforeRunning) return cudaErrorNotReady;
  fkemu::runtime::drain(*s);
  return cudaSuccess;
}

// The host function runs as the stream's work (in a capture, as a host node).
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  if (fn == nullptr) return record(cudaErrorInvalidValue);
  Lock lock(mutex());
  Stream* s = find_stream(stream);
  if (s == nullptr) return record(cudaErrorInvalidResourceHandle);
  return record(fkemu::runtime::enqueue(*s, [fn, userData] { fn(userData); }));
}

cudaError_t cudaDeviceSynchronize(void) {
  Lock lock(mutex());
  cudaError_t e = cudaSuccess;
  for (Stream* s : fkemu::runtime::all_streams())
    if (s->capture) {
      fkemu::runtime::invalidate(*s);
      e = cudaErrorStreamCaptureUnsupported;
    }
  if (e != cudaSuccess) return record(e);
  fkemu::runtime::drain_all();
  return cudaSuccess;
}

cudaError_t cudaStreamGetId(cudaStream_t hStream, unsigned long long* streamId) {
  if (streamId == nullptr) return record(cudaErrorInvalidValue);
  Lock lock(mutex());
  Stream* s = find_stream(hStream);
  if (s == nullptr) return record(cudaErrorInvalidResourceHandle);
  *streamId = s->id;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* pCaptureStatus) {
  if (pCaptureStatus == nullptr) return record(cudaErrorInvalidValue);
  Lock lock(mutex());
  Stream* s = find_stream(stream);
  if (s == nullptr) return record(cudaErrorInvalidResourceHandle);
  if (s->legacy && fkemu::runtime::blocking_stream_capturing() != nullptr)
    return record(cudaErrorStreamCaptureImplicit);
  *pCaptureStatus = !s->capture               ? cudaStreamCaptureStatusNone
                    : s->capture->invalidated ? cudaStreamCaptureStatusInvalidated
                                              : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed)
    return record(cudaErrorInvalidValue);
  Lock lock(mutex());
  Stream* s = find_stream(stream);
  if (s == nullptr) return record(cudaErrorInvalidResourceHandle);
  if (s->legacy) return record(cudaErrorStreamCaptureUnsupported);
  if (s->capture) return record(cudaErrorIllegalState);
  s->capture = std::make_unique<fkemu::runtime::Capture>();
  s->capture->mode = mode;
  s->capture->thread = std::this_thread::get_id();
  s->capture->id = fkemu::runtime::streams().next_capture_id++;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  if (pGraph == nullptr) return record(cudaErrorInvalidValue);
  Lock lock(mutex());
  Stream* s = find_stream(stream);
  if (s == nullptr) return record(cudaErrorInvalidResourceHandle);
  if (!s->capture) return record(cudaErrorIllegalState);
  if (s->capture->mode != cudaStreamCaptureModeRelaxed &&
      s->capture->thread != std::this_thread::get_id())
    return record(cudaErrorStreamCaptureWrongThread);
  const std::unique_ptr<fkemu::runtime::Capture> capture = std::move(s->capture);
  if (capture->invalidated) {
    *pGraph = nullptr;  // its allocations go with it
    return record(cudaErrorStreamCaptureInvalidated);
  }
  *pGraph = fkemu::runtime::make_graph(capture->body);
  return cudaSuccess;
}

}  // extern "C"
