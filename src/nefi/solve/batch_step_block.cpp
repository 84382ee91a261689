#include "nefi/solve/batch_step_block.h"

#include "fk/cuda/graph.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/solve/device_step_slots.h"

namespace nefi {

BatchStepBlock::BatchStepBlock(fk::Device device, int64_t n, int gathered)
    : device_(device), n_(n), width_(kSlotGathered + gathered) {
  FK_CHECK(n >= 1 && gathered >= 1, "nefi::BatchStepBlock",
           "at least one problem and the loss total gathered",
           std::to_string(n) + " problems, " + std::to_string(gathered) + " gathered");
  const int64_t total = n * (width_ + 1);
  block_ = fk::zeros({total}, {fk::DType::F64, device});
  if (device.is_cpu()) {
    mirror_ = block_.data<double>();
    return;
  }
  mirror_ = static_cast<double*>(fk::cuda::pinned_allocate(sizeof(double) * total));
  for (int64_t i = 0; i < total; ++i) mirror_[i] = 0;
}

BatchStepBlock::~BatchStepBlock() {
  if (device_.is_cpu()) return;
  // A copy still in flight must not land in freed pinned memory.
  try {
    fk::cuda::synchronize(device_.index);
  } catch (...) {
  }
  fk::cuda::pinned_free(mirror_);
}

void BatchStepBlock::set_inputs(int64_t b, const AdamScalars& s, double grad_clip, bool steps) {
  double* a = mirror_row(b) + kSlotAdamScalars;
  a[0] = s.clip;
  a[1] = s.l2;
  a[2] = s.decay;
  a[3] = s.b1;
  a[4] = s.b2;
  a[5] = s.step;
  a[6] = s.inv_sqrt_bc2;
  a[7] = s.eps;
  mirror_row(b)[kSlotGradClip] = grad_clip;
  mirror_[n_ * width_ + b] = steps ? 1.0 : 0.0;
}

fk::Tensor BatchStepBlock::rows() const {
  return block_.narrow(0, 0, n_ * width_).view({n_, width_});
}

fk::Tensor BatchStepBlock::seeds() const {
  return block_.narrow(0, n_ * width_, n_);
}

void BatchStepBlock::enqueue_upload() {
  if (device_.is_cpu()) return;
  // The whole block: the output slots it overwrites are rewritten by the step.
  fk::cuda::copy_from_pinned_async(block_.data<double>(), device_.index, mirror_,
                                   sizeof(double) * block_.numel());
}

void BatchStepBlock::enqueue_download() {
  if (device_.is_cpu()) return;
  fk::cuda::copy_to_pinned_async(mirror_, block_.data<double>(), device_.index,
                                 sizeof(double) * block_.numel());
}

const double* BatchStepBlock::read() {
  if (!device_.is_cpu()) fk::cuda::synchronize(device_.index);
  return mirror_;
}

}  // namespace nefi
