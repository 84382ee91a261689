// StepBlockMirror and the step-input row it writes, on the CPU (the device
// loop's host emulation: the block is its own mirror and copies are no-ops),
// and the two blocks built on it: a BatchStepBlock's rows and seeds land
// where device_step_slots.h says, a DeviceStepBlock still refuses the host.
// The device copies are exercised by tests/nefi/cuda/adam_gated_device_test.cpp
// and batch_device_test.cpp.
#include "nefi/solve/step_block_mirror.h"

#include <gtest/gtest.h>

#include <string>

#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "nefi/solve/batch_step_block.h"
#include "nefi/solve/device_step_block.h"
#include "nefi/solve/device_step_slots.h"

namespace {

std::string thrown_by(void (*f)()) {
  try {
    f();
  } catch (const fk::Error& e) {
    return e.what();
  }
  return "";
}

const nefi::AdamScalars kScalars{0.5, 1e-4, 0.99, 0.9, 0.999, 7.0, 1.25, 1e-8};

TEST(NefiStepBlockMirror, OnTheCpuTheBlockIsItsOwnZeroedMirror) {
  nefi::StepBlockMirror m(fk::kCPU, 13);
  EXPECT_EQ(m.block().numel(), 13);
  EXPECT_EQ(m.mirror(), m.device_data());
  for (int i = 0; i < 13; ++i) EXPECT_EQ(m.mirror()[i], 0.0) << i;
  m.mirror()[4] = 3.0;
  m.enqueue_upload(0, 13);
  m.enqueue_download(2, 5);
  EXPECT_EQ(m.read()[4], 3.0);
}

TEST(NefiStepBlockMirror, StepInputsFollowTheSlotLayout) {
  double row[nefi::kSlotGathered + 1] = {};
  nefi::write_step_inputs(row, kScalars, 2.5);
  const double want[nefi::kSlotInputs] = {0.5, 1e-4, 0.99, 0.9, 0.999, 7.0, 1.25, 1e-8, 2.5};
  for (int i = 0; i < nefi::kSlotInputs; ++i) EXPECT_EQ(row[i], want[i]) << "slot " << i;
  EXPECT_EQ(row[nefi::kSlotSqSum], 0.0);  // outputs untouched
  EXPECT_EQ(row[nefi::kSlotTotal], 0.0);
}

TEST(NefiStepBlockMirror, BatchRowsAndSeedsLandWhereTheLayoutSays) {
  nefi::BatchStepBlock block(fk::kCPU, 3, 2);
  EXPECT_EQ(block.width(), nefi::kSlotGathered + 2);
  block.set_inputs(1, kScalars, 2.5, true);
  block.set_inputs(2, kScalars, 4.0, false);
  const double* out = block.read();
  const int64_t w = block.width();
  EXPECT_EQ(out[1 * w + nefi::kSlotAdamScalars + 5], 7.0);
  EXPECT_EQ(out[1 * w + nefi::kSlotGradClip], 2.5);
  EXPECT_EQ(out[2 * w + nefi::kSlotGradClip], 4.0);
  EXPECT_EQ(out[0 * w + nefi::kSlotGradClip], 0.0);  // problem 0 not set
  EXPECT_EQ(out[3 * w + 0], 0.0);                    // the seeds after the rows
  EXPECT_EQ(out[3 * w + 1], 1.0);
  EXPECT_EQ(out[3 * w + 2], 0.0);
  EXPECT_EQ(block.rows().shape(), (fk::Dims{3, w}));
  EXPECT_EQ(block.seeds().numel(), 3);
  EXPECT_EQ(block.row(1), block.mirror_row(1));
}

TEST(NefiStepBlockMirror, BlocksRefuseWhatTheyCannotHold) {
  const std::string none = thrown_by([] { nefi::BatchStepBlock b(fk::kCPU, 0, 1); });
  EXPECT_NE(none.find("at least one problem"), std::string::npos) << none;
  EXPECT_NE(none.find("0 problems"), std::string::npos) << none;
  const std::string host = thrown_by([] { nefi::DeviceStepBlock b(fk::kCPU, 1); });
  EXPECT_NE(host.find("a CUDA device"), std::string::npos) << host;
  if (fk::cuda::device_count() > 0) return;
  // Without a usable device the block cannot be made, before any pinned memory.
  const std::string gpu = thrown_by([] { nefi::StepBlockMirror m(fk::cuda_device(0), 4); });
  EXPECT_NE(gpu.find("cuda:0"), std::string::npos) << gpu;
}

}  // namespace
