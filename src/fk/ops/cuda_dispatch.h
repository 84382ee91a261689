#pragma once
// What fk's op files need to hand a CUDA tensor to the launchers of
// fk/cuda/kernels.h: broadcast strides, the device's current stream, and the
// sync policy after the launch. Plain C++: no CUDA headers.
#include "fk/tensor.h"

namespace fk::cuda_ops {

// t's strides seen from an output of `shape` (NumPy broadcasting: 0 on
// broadcast and missing leading dims).
Dims broadcast_strides(const Tensor& t, const Dims& shape);
// The current stream of t's device (as void*).
void* stream_of(const Tensor& t);
// After a launch: counts it and applies the sync policy (ME_LAZY_SYNC).
void launched(const Tensor& t);

}  // namespace fk::cuda_ops
