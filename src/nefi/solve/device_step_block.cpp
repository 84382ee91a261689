#include "nefi/solve/device_step_block.h"

#include "fk/error.h"
#include "nefi/solve/device_step_slots.h"

namespace nefi {

namespace {

// The block's length, once the arguments are known to be a device step's.
int64_t checked_length(fk::Device device, int gathered) {
  FK_CHECK(device.is_cuda(), "nefi::DeviceStepBlock", "a CUDA device", device.str());
  FK_CHECK(gathered >= 1, "nefi::DeviceStepBlock", "at least the loss total gathered",
           fk::to_text(gathered));
  return kSlotGathered + gathered;
}

}  // namespace

DeviceStepBlock::DeviceStepBlock(fk::Device device, int gathered)
    : gathered_(gathered), block_(device, checked_length(device, gathered)) {}

void DeviceStepBlock::set_inputs(const AdamScalars& s, double grad_clip) {
  write_step_inputs(block_.mirror(), s, grad_clip);
}

void DeviceStepBlock::enqueue_upload() {
  block_.enqueue_upload(0, kSlotInputs);
}

void DeviceStepBlock::enqueue_download() {
  block_.enqueue_download(kSlotSqSum, kSlotGathered + gathered_ - kSlotSqSum);
}

const double* DeviceStepBlock::read() {
  return block_.read();
}

}  // namespace nefi
