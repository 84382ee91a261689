// CaptureMarks (fk/cuda/capture_marks.h) on two threads, with no GPU: marks
// of its own (not the process's), and stand-in stream pointers that are never
// handed to CUDA. A capture is the stream's for every thread (its reads must
// be refused everywhere) but begun by one thread only, which alone may end it;
// it notes whether cuBLAS or cuFFT work was captured.
#include "fk/cuda/capture_marks.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "fk/error.h"
#include "fk/test_util.h"

namespace fk::cuda {
namespace {

int g_stream_a = 0, g_stream_b = 0;
void* const kStreamA = &g_stream_a;
void* const kStreamB = &g_stream_b;

using test::error_of;

TEST(CaptureMarks, TheStreamIsCapturedForEveryThreadButBegunOnOne) {
  CaptureMarks marks;
  marks.begin(1, kStreamA);
  EXPECT_EQ(marks.captured_stream(1), kStreamA);
  EXPECT_TRUE(marks.begun_on_this_thread(1));
  bool other_sees_stream = false, other_began = true;
  std::thread([&] {
    other_sees_stream = marks.captured_stream(1) == kStreamA;
    other_began = marks.begun_on_this_thread(1);
  }).join();
  EXPECT_TRUE(other_sees_stream);
  EXPECT_FALSE(other_began);
  // Another device is not under this capture.
  EXPECT_EQ(marks.captured_stream(0), nullptr);
  EXPECT_FALSE(marks.begun_on_this_thread(0));
  EXPECT_EQ(marks.end(1), kStreamA);
  EXPECT_EQ(marks.captured_stream(1), nullptr);
  EXPECT_FALSE(marks.begun_on_this_thread(1));
}

// CUDA ends a thread-local capture only on its own thread: another thread's
// end is refused and leaves the capture, and its owner, as they were.
TEST(CaptureMarks, OnlyTheThreadThatBeganACaptureEndsIt) {
  CaptureMarks marks;
  marks.begin(0, kStreamA);
  std::string other_end;
  std::thread([&] { other_end = error_of([&] { marks.end(0); }); }).join();
  EXPECT_NE(other_end.find("the thread that began the capture"), std::string::npos) << other_end;
  EXPECT_EQ(marks.captured_stream(0), kStreamA);
  EXPECT_TRUE(marks.begun_on_this_thread(0));
  EXPECT_EQ(marks.end(0), kStreamA);
  // Then another thread may begin one, which is its own.
  bool began_there = false;
  std::thread([&] {
    marks.begin(0, kStreamB);
    began_there = marks.begun_on_this_thread(0);
    marks.end(0);
  }).join();
  EXPECT_TRUE(began_there);
  EXPECT_EQ(marks.captured_stream(0), nullptr);
}

TEST(CaptureMarks, RefusesASecondCaptureTheDefaultStreamAndBadDevices) {
  CaptureMarks marks;
  marks.begin(2, kStreamA);
  std::string second;
  std::thread([&] { second = error_of([&] { marks.begin(2, kStreamB); }); }).join();
  EXPECT_NE(second.find("a second begin_capture"), std::string::npos) << second;
  EXPECT_EQ(marks.captured_stream(2), kStreamA);
  EXPECT_NE(error_of([&] { marks.begin(3, nullptr); }).find("the default stream"),
            std::string::npos);
  EXPECT_NE(error_of([&] { marks.begin(CaptureMarks::kMaxDevices, kStreamB); }).find("64"),
            std::string::npos);
  EXPECT_NE(error_of([&] { marks.end(3); }).find("a capture running on cuda:3"), std::string::npos);
  EXPECT_EQ(marks.captured_stream(-1), nullptr);
  EXPECT_FALSE(marks.begun_on_this_thread(CaptureMarks::kMaxDevices));
  marks.end(2);
}

// Library work is noted for the stream being captured only (a capture another
// framework began on another stream is no graph of fk's), and each capture
// starts without it.
TEST(CaptureMarks, LibraryWorkIsNotedForTheCapturedStreamOnly) {
  CaptureMarks marks;
  marks.note_library_work(0, kStreamA);  // no capture: nothing to note
  EXPECT_FALSE(marks.library_work(0));
  marks.begin(0, kStreamA);
  EXPECT_FALSE(marks.library_work(0));
  marks.note_library_work(0, kStreamB);
  marks.note_library_work(1, kStreamA);
  marks.note_library_work(-1, kStreamA);
  marks.note_library_work(CaptureMarks::kMaxDevices, kStreamA);
  EXPECT_FALSE(marks.library_work(0));
  EXPECT_FALSE(marks.library_work(1));
  std::thread([&] { marks.note_library_work(0, kStreamA); }).join();  // any thread's call
  EXPECT_TRUE(marks.library_work(0));
  marks.end(0);
  EXPECT_FALSE(marks.library_work(0));
  marks.begin(0, kStreamA);
  EXPECT_FALSE(marks.library_work(0));
  marks.end(0);
}

}  // namespace
}  // namespace fk::cuda
