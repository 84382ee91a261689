// The emulated CUDA runtime's events: a record is stream work like any other
// (emulated_runtime.h), so an event completes when its stream has run the
// work queued before it, and the time it holds is the host's clock at that
// moment. Elapsed times are therefore the host's wall-clock milliseconds
// between two completions: the emulator's speed, not a GPU's.
#include <cuda_runtime.h>

#include <chrono>
#include <memory>
#include <unordered_map>

#include "emulated_runtime.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Event {
  unsigned flags = cudaEventDefault;
  // Each record starts a generation: the completion of an earlier record,
  // still queued, no longer speaks for the event.
  uint64_t generation = 0;
  bool recorded = false;
  bool complete = true;  // CUDA: an event never recorded holds no work
  bool in_capture = false;
  Clock::time_point completed_at;
  // While not complete: the stream and the sequence number of its record.
  fkemu::runtime::Stream* stream = nullptr;
  uint64_t sequence = 0;
  int unanswered_polls = 0;  // cudaEventQuery's since the record
};

// Shared with the queued records, which may outlive cudaEventDestroy (CUDA
// releases a destroyed event's resources once it completes).
std::unordered_map<cudaEvent_t, std::shared_ptr<Event>>& events() {
  static auto* e = new std::unordered_map<cudaEvent_t, std::shared_ptr<Event>>;
  return *e;
}

Event* find_event(cudaEvent_t e) {
  const auto it = events().find(e);
  return it == events().end() ? nullptr : it->second.get();
}

// Runs the event's stream through its record.
void wait_for(Event& ev) {
  if (!ev.complete) fkemu::runtime::drain_through(*ev.stream, ev.sequence);
}

}  // namespace

using fkemu::runtime::Lock;
using fkemu::runtime::mutex;
using fkemu::runtime::record;

extern "C" {

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  constexpr unsigned kKnown =
      cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
  if (event == nullptr || (flags & ~kKnown) != 0) return record(cudaErrorInvalidValue);
  // CUDA: an interprocess event must not time.
  if ((flags & cudaEventInterprocess) != 0 && (flags & cudaEventDisableTiming) == 0)
    return record(cudaErrorInvalidValue);
  Lock lock(mutex());
  auto ev = std::make_shared<Event>();
  ev->flags = flags;
  *event = reinterpret_cast<cudaEvent_t>(ev.get());
  events()[*event] = std::move(ev);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

// A record still queued completes later, unobserved.
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  Lock lock(mutex());
  return events().erase(event) == 1 ? cudaSuccess : record(cudaErrorInvalidResourceHandle);
}

// In a capture the record only marks the capture's position (what
// cudaStreamWaitEvent would join): the event then names no host-observable
// work, and CUDA refuses to query, wait on or time it.
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  Lock lock(mutex());
  const auto it = events().find(event);
  if (it == events().end()) return record(cudaErrorInvalidResourceHandle);
  fkemu::runtime::Stream* s = fkemu::runtime::find_stream(stream);
  if (s == nullptr) return record(cudaErrorInvalidResourceHandle);
  const std::shared_ptr<Event> ev = it->second;
  if (s->capture) {
    if (s->capture->invalidated) return record(cudaErrorStreamCaptureInvalidated);
    ++ev->generation;
    ev->recorded = ev->complete = ev->in_capture = true;
    return cudaSuccess;
  }
  const Event before = *ev;
  const uint64_t generation = ++ev->generation;
  ev->recorded = true;
  ev->complete = ev->in_capture = false;
  ev->stream = s;
  ev->unanswered_polls = 0;
  const size_t queued = s->queue.size();
  const cudaError_t e = fkemu::runtime::enqueue(*s, [ev, generation] {
    if (ev->generation != generation) return;
    ev->complete = true;
    ev->completed_at = Clock::now();
  });
  if (e != cudaSuccess) {
    *ev = before;
    return record(e);
  }
  // Queued unless the stream ran it at once (FKEMU_STREAMS=immediate).
  if (s->queue.size() > queued) ev->sequence = s->queue.back().sequence;
  return cudaSuccess;
}

// Not ready until the record has run (cudaErrorNotReady is no error: not
// the last one). As cudaStreamQuery: a query is no wait, but deferred work
// never finishes on its own, so a poll that keeps asking is answered by
// running the stream through the record at its kPollsBeforeRunning-th query.
cudaError_t cudaEventQuery(cudaEvent_t event) {
  constexpr int kPollsBeforeRunning = 1000;
  Lock lock(mutex());
  Event* ev = find_event(event);
  if (ev == nullptr) return record(cudaErrorInvalidResourceHandle);
  if (ev->in_capture) return record(cudaErrorCapturedEvent);
  if (ev->complete) return cudaSuccess;
  if (++ev->unanswered_polls < kPollsBeforeRunning) return cudaErrorNotReady;
  wait_for(*ev);
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  Lock lock(mutex());
  Event* ev = find_event(event);
  if (ev == nullptr) return record(cudaErrorInvalidResourceHandle);
  if (ev->in_capture) return record(cudaErrorCapturedEvent);
  wait_for(*ev);
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return record(cudaErrorInvalidValue);
  Lock lock(mutex());
  const Event* a = find_event(start);
  const Event* b = find_event(end);
  if (a == nullptr || b == nullptr) return record(cudaErrorInvalidResourceHandle);
  // CUDA: an event never recorded, or one made without timing, has no time.
  if (!a->recorded || !b->recorded || ((a->flags | b->flags) & cudaEventDisableTiming) != 0)
    return record(cudaErrorInvalidResourceHandle);
  if (a->in_capture || b->in_capture) return record(cudaErrorCapturedEvent);
  if (!a->complete || !b->complete) return cudaErrorNotReady;
  *ms = std::chrono::duration<float, std::milli>(b->completed_at - a->completed_at).count();
  return cudaSuccess;
}

}  // extern "C"
