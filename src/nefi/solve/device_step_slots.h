#pragma once
// The f64 block a sync-free device step shares between host and device
// (solve/device_step.h): inputs the host writes before the step (the step's
// AdamScalars in declaration order, its clip slot unused, then the clip
// threshold), outputs the step writes and the host reads back in one copy
// after it (the squared gradient norm, the loss total, then whatever else the
// step gathers: the loss components, the discrepancy's masked MSE). A plain
// header of constants: the AdamW kernels (cuda/adam.cu) index it too.
namespace nefi {

inline constexpr int kSlotAdamScalars =
    0;  // 8 slots: clip, l2, decay, b1, b2, step, inv_sqrt_bc2, eps
inline constexpr int kSlotGradClip = 8;
inline constexpr int kSlotInputs = 9;  // input slot count
inline constexpr int kSlotSqSum = 9;
inline constexpr int kSlotTotal = 10;
inline constexpr int kSlotGathered = 10;  // the gathered scalars start here, the total first

}  // namespace nefi
