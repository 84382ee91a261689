#include "nefi/solve/step_block_mirror.h"

#include "fk/cuda/graph.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "nefi/solve/device_step_slots.h"

namespace nefi {

StepBlockMirror::StepBlockMirror(fk::Device device, int64_t count) : device_(device) {
  block_ = fk::zeros({count}, {fk::DType::F64, device});
  if (device.is_cpu()) {
    mirror_ = block_.data<double>();
    return;
  }
  mirror_ = static_cast<double*>(fk::cuda::pinned_allocate(sizeof(double) * count));
  for (int64_t i = 0; i < count; ++i) mirror_[i] = 0;
}

StepBlockMirror::~StepBlockMirror() {
  if (device_.is_cpu()) return;
  // No copy may still write the mirror when it is freed. An index error the
  // wait meets is left pending for the next synchronization to throw, and
  // announced on stderr (runtime.h's synchronize_in_destructor).
  fk::cuda::synchronize_in_destructor(device_.index, "nefi::StepBlockMirror's destructor");
  fk::cuda::pinned_free(mirror_);
}

void StepBlockMirror::enqueue_upload(int64_t first, int64_t count) {
  if (device_.is_cpu()) return;
  fk::cuda::copy_from_pinned_async(block_.data<double>() + first, device_.index, mirror_ + first,
                                   sizeof(double) * count);
}

void StepBlockMirror::enqueue_download(int64_t first, int64_t count) {
  if (device_.is_cpu()) return;
  fk::cuda::copy_to_pinned_async(mirror_ + first, block_.data<double>() + first, device_.index,
                                 sizeof(double) * count);
}

const double* StepBlockMirror::read() {
  if (!device_.is_cpu()) fk::cuda::synchronize(device_.index);
  return mirror_;
}

void write_step_inputs(double* row, const AdamScalars& s, double grad_clip) {
  double* a = row + kSlotAdamScalars;
  a[0] = s.clip;
  a[1] = s.l2;
  a[2] = s.decay;
  a[3] = s.b1;
  a[4] = s.b2;
  a[5] = s.step;
  a[6] = s.inv_sqrt_bc2;
  a[7] = s.eps;
  row[kSlotGradClip] = grad_clip;
}

}  // namespace nefi
