#pragma once
// StepBlockMirror: the storage under both device step blocks (DeviceStepBlock:
// one Solver step; BatchStepBlock: N problems' rows): an f64 block on a device
// and its page-locked host mirror. The host writes a step's inputs into the
// mirror between steps; the step enqueues stream-ordered copies of a slot
// range between the two (pinned memory, so a CUDA graph that captured them
// rereads and rewrites the same mirror at every replay), and read() waits
// for the stream once. On the CPU (a host emulation of the device loop) the
// block is its own mirror and the copies are no-ops. Destruction waits for
// the device first: a copy still in flight must not land in freed pinned
// memory. Memory: `count` doubles on each side (once on the CPU).
#include <cstdint>

#include "fk/device.h"
#include "fk/tensor.h"
#include "nefi/solve/fused_optimizer.h"

namespace nefi {

class StepBlockMirror {
 public:
  // `count` zeroed doubles on `device` (and in the mirror).
  StepBlockMirror(fk::Device device, int64_t count);
  ~StepBlockMirror();
  StepBlockMirror(const StepBlockMirror&) = delete;
  StepBlockMirror& operator=(const StepBlockMirror&) = delete;

  const fk::Tensor& block() const { return block_; }
  double* device_data() { return block_.data<double>(); }
  double* mirror() { return mirror_; }
  // Slots [first, first + count) from the mirror to the block, and back.
  void enqueue_upload(int64_t first, int64_t count);
  void enqueue_download(int64_t first, int64_t count);
  // Waits for the device's current stream; the mirror.
  const double* read();

 private:
  fk::Device device_;
  fk::Tensor block_;
  double* mirror_ = nullptr;
};

// A step's inputs into one row (layout: device_step_slots.h): the AdamW
// scalars in declaration order, then the gradient clip threshold.
void write_step_inputs(double* row, const AdamScalars& s, double grad_clip);

}  // namespace nefi
