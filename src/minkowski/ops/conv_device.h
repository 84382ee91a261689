#pragma once
// Convolution of features that live on a CUDA device, over a kernel map built
// on the host, or on the device when the coordinates came there
// (coords/coordinate_manager.h: its device-built map is the map's device copy). convolve_features
// (conv.h) comes here whenever the features are on a CUDA device, so every
// convolution, its autograd node and the nn layers run on the GPU unchanged.
//
// A host-built map is uploaded once per device and kept with it (KernelMap::device_copy),
// so a network's layers that share a map share one device copy, as they share
// the host map. The dataflow is minkowski/cuda/device_conv.h's: fused gather
// -> cuBLAS -> scatter, in f32 (TF32 under fk::amp::allow_tf32()), in
// f16/bf16 on tensor cores with f32 accumulation, or in f64 (DGEMM, f64
// accumulation: gradchecks), results in the features' dtype as on the CPU.
// Under autocast the nn layers cast f32 operands to 16 bits once before they
// get here, whatever the device (nn/autocast.h). A (C_in, C_out) weight of a
// 1x1 convolution is taken as (1, C_in, C_out) and its gradient given back
// in the weight's own shape.
//
// CUDA builds implement these in minkowski/cuda/conv_dispatch.cpp; CPU-only
// builds in conv_device_stub.cpp, as an fk::Error that says so.
#include "fk/tensor.h"
#include "minkowski/coords/kernel_map.h"
#include "minkowski/ops/conv_kernel.h"

namespace minkowski {

fk::Tensor device_conv_forward(const fk::Tensor& features, const fk::Tensor& weight,
                               const KernelMap& map);
ConvGrads device_conv_backward(const fk::Tensor& grad_out, const fk::Tensor& features,
                               const fk::Tensor& weight, const KernelMap& map, bool need_features,
                               bool need_weight);

}  // namespace minkowski
