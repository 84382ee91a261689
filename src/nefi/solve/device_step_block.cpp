#include "nefi/solve/device_step_block.h"

#include "fk/cuda/graph.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/solve/device_step_slots.h"

namespace nefi {

DeviceStepBlock::DeviceStepBlock(fk::Device device, int gathered)
    : device_(device.index), gathered_(gathered) {
  FK_CHECK(device.is_cuda(), "nefi::DeviceStepBlock", "a CUDA device", device.str());
  FK_CHECK(gathered >= 1, "nefi::DeviceStepBlock", "at least the loss total gathered",
           std::to_string(gathered));
  const int64_t n = kSlotGathered + gathered;
  block_ = fk::zeros({n}, {fk::DType::F64, device});
  mirror_ = static_cast<double*>(fk::cuda::pinned_allocate(sizeof(double) * n));
  for (int64_t i = 0; i < n; ++i) mirror_[i] = 0;
}

DeviceStepBlock::~DeviceStepBlock() {
  // A copy still in flight must not land in freed pinned memory.
  try {
    fk::cuda::synchronize(device_);
  } catch (...) {
  }
  fk::cuda::pinned_free(mirror_);
}

void DeviceStepBlock::set_inputs(const AdamScalars& s, double grad_clip) {
  double* a = mirror_ + kSlotAdamScalars;
  a[0] = s.clip;
  a[1] = s.l2;
  a[2] = s.decay;
  a[3] = s.b1;
  a[4] = s.b2;
  a[5] = s.step;
  a[6] = s.inv_sqrt_bc2;
  a[7] = s.eps;
  mirror_[kSlotGradClip] = grad_clip;
}

void DeviceStepBlock::enqueue_upload() {
  fk::cuda::copy_from_pinned_async(block_.data<double>(), device_, mirror_,
                                   sizeof(double) * kSlotInputs);
}

void DeviceStepBlock::enqueue_download() {
  const int64_t n = kSlotGathered + gathered_ - kSlotSqSum;
  fk::cuda::copy_to_pinned_async(mirror_ + kSlotSqSum, block_.data<double>() + kSlotSqSum, device_,
                                 sizeof(double) * n);
}

const double* DeviceStepBlock::read() {
  fk::cuda::synchronize(device_);
  return mirror_;
}

}  // namespace nefi
