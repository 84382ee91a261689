// The emulated CUDA runtime's events (cudart_events.cpp) as CUDA documents
// them: a record is stream work that completes once the work queued before
// it has run (and not the work after it), an event never recorded is
// complete, a re-record replaces what the event waits for, elapsed times
// between two completed events, and the error codes of cudaEvent*.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "emulated_device.h"

namespace {

cudaStream_t make_stream(unsigned flags) {
  cudaStream_t s = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&s, flags), cudaSuccess);
  return s;
}

cudaEvent_t make_event(unsigned flags = cudaEventDefault) {
  cudaEvent_t e = nullptr;
  EXPECT_EQ(cudaEventCreateWithFlags(&e, flags), cudaSuccess);
  return e;
}

// Every test leaves the device idle and no error behind.
class CudartEvents : public ::testing::Test {
 protected:
  void TearDown() override {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  }
};

TEST_F(CudartEvents, RecordCompletesWithTheWorkBeforeItAndNotTheWorkAfter) {
  cudaStream_t s = make_stream(cudaStreamNonBlocking);
  cudaEvent_t e = make_event();
  bool before = false, after = false;
  fkemu::submit(s, [&] { before = true; });
  ASSERT_EQ(cudaEventRecord(e, s), cudaSuccess);
  fkemu::submit(s, [&] { after = true; });
  // A query is no wait: nothing runs, and cudaErrorNotReady is no error.
  EXPECT_EQ(cudaEventQuery(e), cudaErrorNotReady);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_FALSE(before);
  ASSERT_EQ(cudaEventSynchronize(e), cudaSuccess);
  EXPECT_TRUE(before);
  EXPECT_FALSE(after);
  EXPECT_EQ(cudaEventQuery(e), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_TRUE(after);
  EXPECT_EQ(cudaEventDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

// As cudaStreamQuery: deferred work never finishes on its own, so a poll
// that keeps asking is answered by running the stream.
TEST_F(CudartEvents, APollThatWouldSpinForeverRunsTheStream) {
  cudaStream_t s = make_stream(cudaStreamNonBlocking);
  cudaEvent_t e = make_event();
  bool ran = false;
  fkemu::submit(s, [&] { ran = true; });
  ASSERT_EQ(cudaEventRecord(e, s), cudaSuccess);
  int polls = 0;
  while (cudaEventQuery(e) == cudaErrorNotReady) ++polls;
  EXPECT_GT(polls, 10);
  EXPECT_TRUE(ran);
  EXPECT_EQ(cudaEventDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

// The legacy stream's record waits for the blocking streams' earlier work.
TEST_F(CudartEvents, RecordOnTheLegacyStreamFollowsBlockingStreams) {
  cudaStream_t blocking = make_stream(cudaStreamDefault);
  cudaStream_t independent = make_stream(cudaStreamNonBlocking);
  cudaEvent_t e = make_event();
  bool blocking_ran = false, independent_ran = false;
  fkemu::submit(blocking, [&] { blocking_ran = true; });
  fkemu::submit(independent, [&] { independent_ran = true; });
  ASSERT_EQ(cudaEventRecord(e, nullptr), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(e), cudaSuccess);
  EXPECT_TRUE(blocking_ran);
  EXPECT_FALSE(independent_ran);
  EXPECT_EQ(cudaEventDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(blocking), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(independent), cudaSuccess);
}

// CUDA: an event never recorded holds no work (complete), but no time.
TEST_F(CudartEvents, NeverRecordedIsCompleteButHasNoTime) {
  cudaEvent_t a = make_event(), b = make_event();
  EXPECT_EQ(cudaEventQuery(a), cudaSuccess);
  EXPECT_EQ(cudaEventSynchronize(a), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(b, nullptr), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(b), cudaSuccess);
  float ms = -1;
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, b), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventElapsedTime(&ms, b, a), cudaErrorInvalidResourceHandle);
  cudaGetLastError();
  EXPECT_EQ(ms, -1);
  EXPECT_EQ(cudaEventDestroy(a), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(b), cudaSuccess);
}

// Milliseconds of host time between the completions: the work between the
// two records is in them, and an event not yet complete has none.
TEST_F(CudartEvents, ElapsedTimeIsTheTimeBetweenCompletions) {
  constexpr auto kWork = std::chrono::milliseconds(30);
  constexpr auto kHostWait = std::chrono::milliseconds(300);
  cudaStream_t s = make_stream(cudaStreamNonBlocking);
  cudaEvent_t start = make_event(), stop = make_event();
  ASSERT_EQ(cudaEventRecord(start, s), cudaSuccess);
  fkemu::submit(s, [&] { std::this_thread::sleep_for(kWork); });
  ASSERT_EQ(cudaEventRecord(stop, s), cudaSuccess);
  float ms = -1;
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaErrorNotReady);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  // Time the host spends before the stream runs is not in the interval.
  std::this_thread::sleep_for(kHostWait);
  ASSERT_EQ(cudaEventSynchronize(stop), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
  EXPECT_GE(ms, 30.0f);
  EXPECT_LT(ms, 300.0f);
  ASSERT_EQ(cudaEventElapsedTime(&ms, stop, start), cudaSuccess);
  EXPECT_LE(ms, -30.0f);
  EXPECT_EQ(cudaEventElapsedTime(nullptr, start, stop), cudaErrorInvalidValue);
  cudaGetLastError();
  EXPECT_EQ(cudaEventDestroy(start), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(stop), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

// A new record replaces the old: the event no longer waits for the first
// stream, and the first record's late completion does not move its time.
TEST_F(CudartEvents, ReRecordingReplacesWhatTheEventWaitsFor) {
  cudaStream_t slow = make_stream(cudaStreamNonBlocking);
  cudaStream_t fast = make_stream(cudaStreamNonBlocking);
  cudaEvent_t e = make_event(), later = make_event();
  bool slow_ran = false;
  fkemu::submit(slow, [&] { slow_ran = true; });
  ASSERT_EQ(cudaEventRecord(e, slow), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(e, fast), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(e), cudaSuccess);
  EXPECT_FALSE(slow_ran);
  EXPECT_EQ(cudaEventQuery(e), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(later, fast), cudaSuccess);
  fkemu::submit(fast, [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
  ASSERT_EQ(cudaStreamSynchronize(fast), cudaSuccess);
  float before = 0, after = 0;
  ASSERT_EQ(cudaEventElapsedTime(&before, e, later), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(slow), cudaSuccess);
  EXPECT_TRUE(slow_ran);
  ASSERT_EQ(cudaEventElapsedTime(&after, e, later), cudaSuccess);
  EXPECT_EQ(before, after);
  EXPECT_EQ(cudaEventDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(later), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(slow), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(fast), cudaSuccess);
}

TEST_F(CudartEvents, FlagsAreChecked) {
  cudaEvent_t e = nullptr;
  EXPECT_EQ(cudaEventCreateWithFlags(&e, 0x80), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  // CUDA: an interprocess event must also be made without timing.
  EXPECT_EQ(cudaEventCreateWithFlags(&e, cudaEventInterprocess), cudaErrorInvalidValue);
  cudaGetLastError();
  EXPECT_EQ(cudaEventCreate(nullptr), cudaErrorInvalidValue);
  cudaGetLastError();
  // Without timing: an event to wait on, never to time.
  cudaEvent_t a = make_event(cudaEventDisableTiming), b = make_event(cudaEventBlockingSync);
  ASSERT_EQ(cudaEventRecord(a, nullptr), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(b, nullptr), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(b), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(a), cudaSuccess);
  float ms = 0;
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, b), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventElapsedTime(&ms, b, a), cudaErrorInvalidResourceHandle);
  cudaGetLastError();
  EXPECT_EQ(cudaEventDestroy(a), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(b), cudaSuccess);
}

// A destroyed event is no handle; its queued record still runs (CUDA
// releases it at completion). CUDA: a null event is refused too.
TEST_F(CudartEvents, DestroyedOrUnknownHandlesAreRefused) {
  cudaStream_t s = make_stream(cudaStreamNonBlocking);
  cudaEvent_t e = make_event(), other = make_event();
  ASSERT_EQ(cudaEventRecord(e, s), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(e), cudaSuccess);
  for (cudaEvent_t bad : {e, static_cast<cudaEvent_t>(nullptr)}) {
    EXPECT_EQ(cudaEventRecord(bad, s), cudaErrorInvalidResourceHandle);
    EXPECT_EQ(cudaEventQuery(bad), cudaErrorInvalidResourceHandle);
    EXPECT_EQ(cudaEventSynchronize(bad), cudaErrorInvalidResourceHandle);
    EXPECT_EQ(cudaEventDestroy(bad), cudaErrorInvalidResourceHandle);
    float ms = 0;
    EXPECT_EQ(cudaEventElapsedTime(&ms, bad, other), cudaErrorInvalidResourceHandle);
    EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  }
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(other), cudaSuccess);
}

// Recorded in a capture, an event marks a point of the graph being made,
// not host-observable work: CUDA refuses to query, wait on or time it, and
// the capture goes on.
TEST_F(CudartEvents, RecordInACaptureIsRefusedToTheHost) {
  cudaStream_t s = make_stream(cudaStreamNonBlocking);
  cudaEvent_t e = make_event(), done = make_event();
  ASSERT_EQ(cudaEventRecord(done, s), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(e, s), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(e), cudaErrorCapturedEvent);
  EXPECT_EQ(cudaEventSynchronize(e), cudaErrorCapturedEvent);
  float ms = 0;
  ASSERT_EQ(cudaEventSynchronize(done), cudaSuccess);
  EXPECT_EQ(cudaEventElapsedTime(&ms, done, e), cudaErrorCapturedEvent);
  EXPECT_EQ(cudaGetLastError(), cudaErrorCapturedEvent);
  cudaGraph_t g = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
  EXPECT_STREQ(cudaGetErrorName(cudaErrorCapturedEvent), "cudaErrorCapturedEvent");
  EXPECT_EQ(cudaEventDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(done), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

}  // namespace
