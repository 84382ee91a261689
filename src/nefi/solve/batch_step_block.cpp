#include "nefi/solve/batch_step_block.h"

#include "fk/error.h"
#include "nefi/solve/device_step_slots.h"

namespace nefi {

namespace {

// The block's length: N rows of `width` doubles, then N seeds.
int64_t checked_length(int64_t n, int gathered) {
  FK_CHECK(n >= 1 && gathered >= 1, "nefi::BatchStepBlock",
           "at least one problem and the loss total gathered",
           fk::to_text(n) + " problems, " + fk::to_text(gathered) + " gathered");
  return n * (kSlotGathered + gathered + 1);
}

}  // namespace

BatchStepBlock::BatchStepBlock(fk::Device device, int64_t n, int gathered)
    : n_(n), width_(kSlotGathered + gathered), block_(device, checked_length(n, gathered)) {}

void BatchStepBlock::set_inputs(int64_t b, const AdamScalars& s, double grad_clip, bool steps) {
  write_step_inputs(mirror_row(b), s, grad_clip);
  block_.mirror()[n_ * width_ + b] = steps ? 1.0 : 0.0;
}

fk::Tensor BatchStepBlock::rows() const {
  return block_.block().narrow(0, 0, n_ * width_).view({n_, width_});
}

fk::Tensor BatchStepBlock::seeds() const {
  return block_.block().narrow(0, n_ * width_, n_);
}

// The whole block: the output slots it overwrites are rewritten by the step.
void BatchStepBlock::enqueue_upload() {
  block_.enqueue_upload(0, block_.block().numel());
}

void BatchStepBlock::enqueue_download() {
  block_.enqueue_download(0, block_.block().numel());
}

const double* BatchStepBlock::read() {
  return block_.read();
}

}  // namespace nefi
