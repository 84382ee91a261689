#pragma once
// BatchStepBlock: the scalars one step of batch_invert's device loop
// exchanges with the host, for N problems, as one f64 block. Row b (width()
// doubles) has a Solver step's layout (device_step_slots.h): problem b's
// AdamW scalars and clip threshold in, its squared gradient norm, loss total,
// components and (discrepancy) masked MSE out, so the gated AdamW kernel
// reads problem b's row as a Solver's step reads its own block. After the N
// rows come N seeds (1: the problem steps; 0: it is frozen).
// The block and its page-locked host mirror are a StepBlockMirror: the host
// writes the inputs into the mirror between steps, the step enqueues one
// upload of the whole block at its start and one download at its end, and
// read() waits for the stream once; on the CPU (the loop's host emulation)
// the block is its own mirror. Memory: N (width() + 1) doubles on each side.
#include <cstdint>

#include "fk/device.h"
#include "fk/tensor.h"
#include "nefi/solve/fused_optimizer.h"
#include "nefi/solve/step_block_mirror.h"

namespace nefi {

class BatchStepBlock {
 public:
  // `gathered`: the scalars gathered per problem from kSlotGathered on (the total first).
  BatchStepBlock(fk::Device device, int64_t n, int gathered);

  int64_t width() const { return width_; }
  // Problem b's inputs for the next step, into the mirror (between steps only).
  void set_inputs(int64_t b, const AdamScalars& s, double grad_clip, bool steps);
  // (N, width()) and (N) views of the block (on its device).
  fk::Tensor rows() const;
  fk::Tensor seeds() const;
  // Problem b's row on the block's device.
  double* row(int64_t b) { return block_.device_data() + b * width_; }
  // Problem b's row in the mirror (the CPU: the block itself).
  double* mirror_row(int64_t b) { return block_.mirror() + b * width_; }
  void enqueue_upload();
  void enqueue_download();
  // Waits for the device's current stream; the mirror.
  const double* read();

 private:
  int64_t n_, width_;
  StepBlockMirror block_;
};

}  // namespace nefi
