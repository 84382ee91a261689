#pragma once
// Segment normalization (normalization.h: BatchNorm, InstanceNorm) of features
// on a CUDA device, with nothing read back to the host: normalization.cpp
// keeps the segments and the checks, and comes here when x is on a CUDA
// device for
//   device_statistics       the blocked f64 sums (blocks of block_rows rows,
//                           each summed in row order by one thread per
//                           channel, the blocks combined in order) and the
//                           moments formed from them, on the device
//   device_fixed_statistics moments from given mean and var (C values each)
//   device_upload_statistics moments from host statistics
//   device_normalize_forward / device_normalize_backward   the coefficients
//                           formed from the moments and the elementwise pass
//                           (the backward's sums, and the parameters'
//                           gradients as f64 tensors)
//   device_running_update   running mean and var updated in place
// Everything in the CPU's order with the CPU's roundings (products not
// contracted into adds), so statistics, outputs and gradients are the CPU's.
// x and g: contiguous, f32 or f64 (the compute dtype), on one device; weight
// and bias of x's dtype there or undefined; a segment list (unless there is
// one segment) and the per-segment row counts are uploaded per call.
//
// moments: a (4, S x C) f64 tensor on the device, rows mean, var (biased),
// invstd = 1 / sqrt(var + eps) and n_s.
//
// CUDA builds implement these in minkowski/cuda/normalization_dispatch.cpp;
// CPU-only builds in normalization_device_stub.cpp, as an fk::Error.
#include <cstdint>

#include "fk/tensor.h"
#include "minkowski/ops/normalization.h"

namespace minkowski {

fk::Tensor device_statistics(const fk::Tensor& x, const Segments& seg,
                             const std::vector<int64_t>& rows, int64_t block_rows, double eps);
fk::Tensor device_fixed_statistics(const fk::Tensor& mean, const fk::Tensor& var, double eps);
fk::Tensor device_upload_statistics(const NormStats& host, int64_t cols, const fk::Device& device);
fk::Tensor device_normalize_forward(const fk::Tensor& x, const Segments& seg,
                                    const fk::Tensor& moments, const fk::Tensor& weight,
                                    const fk::Tensor& bias);
// g.weight and g.bias: f64 (C) on the device.
NormGrads device_normalize_backward(const fk::Tensor& g, const fk::Tensor& x, const Segments& seg,
                                    const fk::Tensor& moments, const fk::Tensor& weight,
                                    bool batch_stats, bool need_x, int64_t block_rows);
void device_running_update(const fk::Tensor& moments, double momentum, double unbias,
                           fk::Tensor& running_mean, fk::Tensor& running_var);

}  // namespace minkowski
