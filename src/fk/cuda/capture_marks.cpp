// CaptureMarks (see capture_marks.h).
#include "fk/cuda/capture_marks.h"

#include <string>

#include "fk/error.h"

namespace fk::cuda {
namespace {

std::string device_name(int device) {
  return "cuda:" + std::to_string(device);
}

}  // namespace

const CaptureMarks::Mark* CaptureMarks::find(int device) const {
  return device >= 0 && device < kMaxDevices ? &marks_[device] : nullptr;
}

void CaptureMarks::begin(int device, void* stream) {
  const char* where = "CUDA graph capture";
  FK_CHECK(find(device) != nullptr, where, "a device index 0.." + fk::to_text(kMaxDevices - 1),
           fk::to_text(device));
  FK_CHECK(stream != nullptr, where,
           "a non-default current stream (create_stream, set_current_stream)",
           "the default stream");
  std::lock_guard<std::mutex> lock(mu_);
  Mark& m = marks_[device];
  FK_CHECK(m.stream == nullptr, where, "no capture already running on " + device_name(device),
           "a second begin_capture");
  m.owner = std::this_thread::get_id();
  m.library_work = false;
  m.stream = stream;
}

void* CaptureMarks::end(int device) {
  const char* where = "CUDA graph capture end";
  FK_CHECK(find(device) != nullptr, where, "a device index 0.." + fk::to_text(kMaxDevices - 1),
           fk::to_text(device));
  std::lock_guard<std::mutex> lock(mu_);
  Mark& m = marks_[device];
  void* const stream = m.stream;
  FK_CHECK(stream != nullptr, where, "a capture running on " + device_name(device), "none");
  FK_CHECK(m.owner == std::this_thread::get_id(), where,
           "the thread that began the capture (CUDA's thread-local capture mode)",
           "another thread");
  m.stream = nullptr;
  m.owner = std::thread::id();
  return stream;
}

bool CaptureMarks::begun_on_this_thread(int device) const {
  const Mark* m = find(device);
  return m != nullptr && m->stream != nullptr && m->owner == std::this_thread::get_id();
}

void* CaptureMarks::captured_stream(int device) const {
  const Mark* m = find(device);
  return m != nullptr ? m->stream.load() : nullptr;
}

void CaptureMarks::note_library_work(int device, void* stream) {
  if (stream == nullptr || device < 0 || device >= kMaxDevices) return;
  Mark& m = marks_[device];
  if (m.stream.load() == stream) m.library_work = true;
}

bool CaptureMarks::library_work(int device) const {
  const Mark* m = find(device);
  return m != nullptr && m->stream != nullptr && m->library_work;
}

CaptureMarks& capture_marks() {
  static CaptureMarks* marks = new CaptureMarks();
  return *marks;
}

}  // namespace fk::cuda
