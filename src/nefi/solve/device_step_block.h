#pragma once
// DeviceStepBlock: the scalars a device training step exchanges with the
// host, as one f64 block on the device (layout: device_step_slots.h) and its
// page-locked host mirror (StepBlockMirror). Before a step the host writes
// the inputs (the step's AdamW scalars, the clip threshold) into the mirror;
// the step enqueues one upload of them and, at its end, one download of the
// outputs (squared gradient norm, loss total, components, ...); read() then
// waits for the stream once. Memory: (kSlotGathered + gathered) doubles on
// each side.
#include <cstdint>

#include "fk/device.h"
#include "nefi/solve/fused_optimizer.h"
#include "nefi/solve/step_block_mirror.h"

namespace nefi {

class DeviceStepBlock {
 public:
  // `gathered`: how many scalars the step gathers from kSlotGathered on.
  DeviceStepBlock(fk::Device device, int gathered);

  // The next step's inputs, into the host mirror (between steps only).
  void set_inputs(const AdamScalars& s, double grad_clip);
  double* device_block() { return block_.device_data(); }
  void enqueue_upload();
  void enqueue_download();
  // Waits for the device's current stream; the mirror's outputs, indexed by slot.
  const double* read();
  int gathered() const { return gathered_; }

 private:
  int gathered_;
  StepBlockMirror block_;
};

}  // namespace nefi
