#pragma once
// Which CUDA graph captures fk is running: per device, the stream being
// captured and the thread that began the capture. Plain C++ with no CUDA
// header (compiled into CPU-only builds too), so that its logic is tested
// without a GPU; graph.cpp's begin_capture and end_capture record into the
// process's marks.
//
// Two questions are asked of it, and they differ because fk captures in
// CUDA's thread-local mode on the capturing thread's current stream, which
// another thread may have made its current stream too (runtime.h: one per
// device per thread):
//   - the runtime's sync policy (cuda::capturing): is a capture running on
//     this thread's current stream? Then it may not synchronize that stream
//     or copy through it to pageable host memory: that would invalidate the
//     capture, whichever thread does it. A thread on another stream is free.
//   - FK_SYNC_DEBUG (sync_debug.h): did this thread begin a capture on the
//     device? Only then does a host read of this thread sit inside a
//     captured step; another thread's read is no part of that step (the
//     runtime refuses it, above, if it would use the captured stream).
#include <atomic>
#include <mutex>
#include <thread>

namespace fk::cuda {

class CaptureMarks {
 public:
  static constexpr int kMaxDevices = 64;

  // Marks a capture of `stream` (not null) begun on `device` by this thread;
  // fk::Error when the device index is out of range, the stream is null, or
  // a capture already runs on the device.
  void begin(int device, void* stream);

  // Clears the device's mark and returns the stream that was being captured;
  // fk::Error when none is marked or another thread began it (CUDA ends a
  // thread-local capture only on the thread that began it).
  void* end(int device);

  // The stream under capture on `device` (by any thread), or null; null for
  // a device index out of range.
  void* captured_stream(int device) const;

  // True while a capture this thread began runs on `device`.
  bool begun_on_this_thread(int device) const;

  // Notes that a cuBLAS GEMM or a cuFFT transform was captured on `stream`:
  // the graph's replays use the device's cuBLAS workspace or a plan's work
  // area, which eager calls on other streams use too (graph.h's
  // launch_graph). Nothing unless `stream` is the one marked on `device` (a
  // capture another framework began is no graph of fk's).
  void note_library_work(int device, void* stream);
  // True when the capture running on `device` noted library work.
  bool library_work(int device) const;

 private:
  struct Mark {
    std::atomic<void*> stream{nullptr};
    std::atomic<std::thread::id> owner{};
    std::atomic<bool> library_work{false};
  };
  const Mark* find(int device) const;

  std::mutex mu_;  // orders begin and end; the queries read the atomics
  Mark marks_[kMaxDevices];
};

// The process's marks, those of graph.h's begin_capture and end_capture.
CaptureMarks& capture_marks();

}  // namespace fk::cuda
