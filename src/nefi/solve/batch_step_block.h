#pragma once
// BatchStepBlock: the scalars one step of batch_invert's device loop
// exchanges with the host, for N problems, as one f64 block. Row b (width()
// doubles) has a Solver step's layout (device_step_slots.h): problem b's
// AdamW scalars and clip threshold in, its squared gradient norm, loss total,
// components and (discrepancy) masked MSE out, so the gated AdamW kernel
// reads problem b's row as a Solver's step reads its own block. After the N
// rows come N seeds (1: the problem steps; 0: it is frozen).
// On a CUDA device: a device block and its page-locked host mirror; the
// host writes the inputs into the mirror between steps, the step enqueues
// one upload of the whole block at its start and one download at its end
// (stream-ordered copies of pinned memory, so a CUDA graph that captured them
// rereads and rewrites the same mirror at every replay), and read() waits for
// the stream once. On the CPU (the loop's host emulation) the block is its
// own mirror and the copies are no-ops. Memory: N (width() + 1) doubles on
// each side.
#include <cstdint>

#include "fk/device.h"
#include "fk/tensor.h"
#include "nefi/solve/adam.h"

namespace nefi {

class BatchStepBlock {
 public:
  // `gathered`: the scalars gathered per problem from kSlotGathered on (the total first).
  BatchStepBlock(fk::Device device, int64_t n, int gathered);
  ~BatchStepBlock();
  BatchStepBlock(const BatchStepBlock&) = delete;
  BatchStepBlock& operator=(const BatchStepBlock&) = delete;

  int64_t width() const { return width_; }
  // Problem b's inputs for the next step, into the mirror (between steps only).
  void set_inputs(int64_t b, const AdamScalars& s, double grad_clip, bool steps);
  // (N, width()) and (N) views of the block (on its device).
  fk::Tensor rows() const;
  fk::Tensor seeds() const;
  // Problem b's row on the block's device.
  double* row(int64_t b) { return block_.data<double>() + b * width_; }
  // Problem b's row in the mirror (the CPU: the block itself).
  double* mirror_row(int64_t b) { return mirror_ + b * width_; }
  void enqueue_upload();
  void enqueue_download();
  // Waits for the device's current stream; the mirror.
  const double* read();

 private:
  fk::Device device_;
  int64_t n_, width_;
  fk::Tensor block_;
  double* mirror_ = nullptr;
};

}  // namespace nefi
