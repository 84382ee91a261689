// FK_SYNC_DEBUG (fk/sync_debug.h) where no GPU is needed: the knob's values,
// the step marking, what a host read does in each mode, inside and outside a
// step, of a host and of a device tensor, and the one report of nested reads.
// A HostRead of a device tensor only checks (it copies nothing), so a CUDA
// device index stands in for a device here. The reads of real device tensors
// are tests/fk/cuda/sync_debug_device_test.cpp.
#include "fk/sync_debug.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>

#include "fk/cuda/capture_marks.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/knobs.h"
#include "fk/test_util.h"

namespace fk {
namespace {

const Device kGpu = cuda_device(0);

using test::error_of;

// A capture of cuda:0 marked as begun by this thread for the scope, as
// cuda::begin_capture marks one (a stand-in stream: nothing reaches CUDA).
class MarkedCapture {
 public:
  MarkedCapture() { cuda::capture_marks().begin(0, &stream_); }
  ~MarkedCapture() { cuda::capture_marks().end(0); }
  MarkedCapture(const MarkedCapture&) = delete;
  MarkedCapture& operator=(const MarkedCapture&) = delete;

 private:
  int stream_ = 0;
};

TEST(SyncDebug, TheKnobIsOffWarnOrError) {
  EXPECT_EQ(knob("FK_SYNC_DEBUG").default_value(), std::string("off"));
  {
    KnobOverride off("FK_SYNC_DEBUG", "off");
    EXPECT_EQ(sync_debug_mode(), SyncDebugMode::kOff);
  }
  {
    KnobOverride warn("FK_SYNC_DEBUG", "warn");
    EXPECT_EQ(sync_debug_mode(), SyncDebugMode::kWarn);
  }
  {
    KnobOverride error("FK_SYNC_DEBUG", "error");
    EXPECT_EQ(sync_debug_mode(), SyncDebugMode::kError);
  }
  try {
    KnobOverride bad("FK_SYNC_DEBUG", "loud");  // refused by the knob itself
    FAIL() << "no error for FK_SYNC_DEBUG=loud";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("FK_SYNC_DEBUG"), std::string::npos) << e.what();
    EXPECT_NE(e.given().find("loud"), std::string::npos) << e.what();
  }
}

TEST(SyncDebug, StepScopesNest) {
  EXPECT_FALSE(device_step_marked());
  {
    const DeviceStepScope outer;
    {
      const DeviceStepScope inner;
      EXPECT_TRUE(device_step_marked());
    }
    EXPECT_TRUE(device_step_marked());
  }
  EXPECT_FALSE(device_step_marked());
}

// The marking is per thread: another thread's reads are not inside this
// thread's step (and its own step leaves this thread unmarked).
TEST(SyncDebug, AStepMarksOnlyItsOwnThread) {
  KnobOverride error("FK_SYNC_DEBUG", "error");
  const DeviceStepScope step;
  bool other_marked = true, other_threw = true;
  std::thread other([&] {
    other_marked = device_step_marked();
    try {
      HostRead read("test read on another thread", kGpu);
      other_threw = false;
    } catch (const Error&) {
    }
  });
  other.join();
  EXPECT_FALSE(other_marked);
  EXPECT_FALSE(other_threw);
  EXPECT_TRUE(device_step_marked());
  std::thread([] { const DeviceStepScope own; }).join();
  EXPECT_TRUE(device_step_marked());
}

// A capture is a step of the thread that began it: its reads report, naming
// the capture; another thread's reads meanwhile are not in it, and when that
// thread is in a step of its own, the report names that step, not the capture.
TEST(SyncDebug, ACaptureMarksOnlyTheThreadThatBeganIt) {
  KnobOverride error("FK_SYNC_DEBUG", "error");
  const MarkedCapture capture;
  const std::string own = error_of([] { HostRead read("test read in a capture", kGpu); });
  EXPECT_NE(own.find("a CUDA graph capture on cuda:0"), std::string::npos) << own;
  std::string other_plain = "not run", other_in_step = "not run";
  std::thread other([&] {
    other_plain = error_of([] { HostRead read("test read beside a capture", kGpu); });
    const DeviceStepScope step;
    other_in_step = error_of([] { HostRead read("test read beside a capture", kGpu); });
  });
  other.join();
  EXPECT_EQ(other_plain, "");
  EXPECT_NE(other_in_step.find("a device step (DeviceStepScope)"), std::string::npos)
      << other_in_step;
  EXPECT_EQ(other_in_step.find("graph capture"), std::string::npos) << other_in_step;
}

TEST(SyncDebug, OnlyDeviceReadsInsideAStepReport) {
  using M = SyncDebugMode;
  for (M mode : {M::kOff, M::kWarn, M::kError}) {
    EXPECT_EQ(sync_debug_action(mode, true, kGpu), mode);
    EXPECT_EQ(sync_debug_action(mode, false, kGpu), M::kOff);
    EXPECT_EQ(sync_debug_action(mode, true, kCPU), M::kOff);
  }
}

TEST(SyncDebug, ErrorModeNamesTheOpInsideAStepOnly) {
  KnobOverride error("FK_SYNC_DEBUG", "error");
  EXPECT_NO_THROW(HostRead("test read", kGpu));  // no step in progress
  const DeviceStepScope step;
  try {
    HostRead read("test read", kGpu);
    FAIL() << "no error for a device read inside a step";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test read"), std::string::npos) << e.what();
    EXPECT_NE(e.given().find("cuda:0"), std::string::npos) << e.what();
  }
  // Host tensors are read freely, through the real entry points too.
  EXPECT_NO_THROW(HostRead("test read", kCPU));
  EXPECT_EQ(ones({1}).item(), 1.0);
  EXPECT_EQ(full({2}, 3.0).to_vector<double>(), std::vector<double>({3.0, 3.0}));
}

TEST(SyncDebug, WarnModeWarnsOncePerOpAndOncePerNestedRead) {
  KnobOverride warn("FK_SYNC_DEBUG", "warn");
  const DeviceStepScope step;
  const int64_t before = sync_debug_warnings();
  {
    const HostRead outer("test outer read", kGpu);
    EXPECT_EQ(sync_debug_warnings(), before + 1);
    const HostRead inner("test inner read", kGpu);  // part of the outer read
    EXPECT_EQ(sync_debug_warnings(), before + 1);
  }
  { const HostRead again("test outer read", kGpu); }  // warned already
  EXPECT_EQ(sync_debug_warnings(), before + 1);
  { const HostRead inner("test inner read", kGpu); }  // on its own now
  EXPECT_EQ(sync_debug_warnings(), before + 2);
}

TEST(SyncDebug, OffModeNeverReports) {
  KnobOverride off("FK_SYNC_DEBUG", "off");
  const DeviceStepScope step;
  const int64_t before = sync_debug_warnings();
  EXPECT_NO_THROW(HostRead("test read while off", kGpu));
  EXPECT_EQ(sync_debug_warnings(), before);
}

}  // namespace
}  // namespace fk
