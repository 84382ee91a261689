#pragma once
// Local and global pooling of features on a CUDA device. pool_forward and
// pool_backward (pooling.h: local pooling and pooling_transpose) and
// global_pool_forward, global_pool_backward and group_sum_of_products
// (global_pooling.h: global pooling and broadcast's gradients) come here when
// their operand is on a CUDA device, already in its compute dtype (f32, or
// f64) and contiguous; the callers convert back, as on the CPU.
//
// Same sums in the same order as the CPU: one device thread per (row,
// channel) walks its row's terms in the CPU's order (a local pooling output
// row its pairs in offset order over the map's device copy, kept with the
// map as the convolution's is: KernelMap::device_copy; a batch item its rows
// in blocks of kGlobalBlock, the partials combined in block order). So
// outputs, arg-max rows (ties to the first) and gradients are bitwise the
// CPU's; no atomics, no host synchronization but fk::cuda::after_op. The
// RowGroups (host) are uploaded per call.
//
// CUDA builds implement these in minkowski/cuda/pooling_dispatch.cpp; CPU-only
// builds in pooling_device_stub.cpp, as an fk::Error that says so.
#include "fk/tensor.h"
#include "minkowski/coords/kernel_map.h"
#include "minkowski/ops/global_pooling.h"
#include "minkowski/ops/pooling.h"

namespace minkowski {

PoolingResult device_pool_forward(const fk::Tensor& features, const KernelMap& map,
                                  PoolingMode mode);
// argmax: pool_forward's (Max only), on grad_out's device.
fk::Tensor device_pool_backward(const fk::Tensor& grad_out, const KernelMap& map, PoolingMode mode,
                                const fk::Tensor& argmax);

// b undefined: the pooling of a; else (Sum only) the per-group sums of a * b.
GlobalPoolingResult device_global_pool_forward(const fk::Tensor& a, const fk::Tensor& b,
                                               const RowGroups& groups, PoolingMode mode);
fk::Tensor device_global_pool_backward(const fk::Tensor& grad_out, const RowGroups& groups,
                                       PoolingMode mode, const fk::Tensor& argmax);

}  // namespace minkowski
