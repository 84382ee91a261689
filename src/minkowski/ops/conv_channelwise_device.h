#pragma once
// The channelwise convolution (conv_kernel.h's channelwise_forward and
// channelwise_backward) of features on a CUDA device. The callers come here
// with features, weight and gradient on one device, already in the compute
// dtype (f32, or f64) and contiguous, and convert the results back, as on the
// CPU.
//
// Same sums in the same order as the CPU (conv_channelwise.cpp), over the
// map's device copy (KernelMap::device_copy, shared with the convolutions and
// pooling on that map): one device thread per (output row, channel) adds its
// pairs in offset order (by_out), per (input row, channel) for the input
// gradient (by_in); the weight gradient sums each offset's pairs in the CPU's
// blocks of conv_detail::kWeightBlock, then the blocks in order. Products are
// rounded before the adds, as the CPU computes them; no atomics, so results
// equal the CPU's (up to the sign of a zero sum). The offset bounds (K + 1
// int64) and the weight gradient's block bounds are uploaded per call.
//
// CUDA builds implement these in minkowski/cuda/channelwise_dispatch.cpp;
// CPU-only builds in conv_channelwise_device_stub.cpp, as an fk::Error.
#include "fk/tensor.h"
#include "minkowski/coords/kernel_map.h"
#include "minkowski/ops/conv_kernel.h"

namespace minkowski {

fk::Tensor device_channelwise_forward(const fk::Tensor& features, const fk::Tensor& weight,
                                      const KernelMap& map);
ConvGrads device_channelwise_backward(const fk::Tensor& grad_out, const fk::Tensor& features,
                                      const fk::Tensor& weight, const KernelMap& map,
                                      bool need_features, bool need_weight);

}  // namespace minkowski
