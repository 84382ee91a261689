#pragma once
// Sparse convolutions on SparseTensors (CPU). All are differentiable w.r.t.
// the features and the weight (autograd nodes over conv_forward /
// conv_backward); the bias is added with fk's broadcasting add.
//
// Weight: (K, C_in, C_out) with K the kernel region's volume in its documented
// offset order (kernel_region.h); a 1x1 convolution (identity region, stride 1)
// also accepts (C_in, C_out) and runs as a single GEMM. Channelwise: (K, C).
// Bias: undefined, (C_out) or (1, C_out). Features, weight and bias share one
// dtype (f32, f64, f16, bf16; 16-bit computed in f32).
//
//   convolution                 output map = stride(input map, stride)
//                               (stride 1: the input map itself, i.e. a
//                               submanifold convolution), or `out` when given
//                               (convolution onto given coordinates: a map of
//                               the input's manager, e.g. y.map_ref(); a map of
//                               another manager is an fk::Error even when its
//                               key exists in the input's). Output tensor
//                               stride = input * stride.
//   convolution_transpose       output tensor stride = input / stride (must
//                               divide). Reuses an existing map of that stride
//                               (e.g. the encoder's, whose kernel map is then
//                               reused transposed), else creates one as the
//                               generative variant does; or `out` when given
//                               (same rule as above).
//   generative_convolution_transpose   always a new output map: every input
//                               coordinate plus every offset (scaled by the
//                               output tensor stride).
//   channelwise_convolution     out[o,c] = sum F[i,c] W[k,c] over the map.
//
// Determinism: bit-identical across runs, thread counts and copy paths on
// one dataflow (conv_kernel.h); kernel maps are ordered deterministically.
// The dataflow is chosen per shape by timing (conv_path.h) unless
// set_deterministic(true) or ME_CONV_PATH pins it.
#include <optional>
#include <vector>

#include "minkowski/coords/kernel_region.h"
#include "minkowski/ops/conv_kernel.h"
#include "minkowski/sparse_tensor.h"

namespace minkowski {

SparseTensor convolution(const SparseTensor& x, const fk::Tensor& weight, const fk::Tensor& bias,
                         const KernelRegion& kernel, const std::vector<int32_t>& stride = {1},
                         const std::optional<MapRef>& out = std::nullopt);
SparseTensor convolution_transpose(const SparseTensor& x, const fk::Tensor& weight,
                                   const fk::Tensor& bias, const KernelRegion& kernel,
                                   const std::vector<int32_t>& stride = {1},
                                   const std::optional<MapRef>& out = std::nullopt);
SparseTensor generative_convolution_transpose(const SparseTensor& x, const fk::Tensor& weight,
                                              const fk::Tensor& bias, const KernelRegion& kernel,
                                              const std::vector<int32_t>& stride);
SparseTensor channelwise_convolution(const SparseTensor& x, const fk::Tensor& weight,
                                     const fk::Tensor& bias, const KernelRegion& kernel,
                                     const std::vector<int32_t>& stride = {1});

// The differentiable core on a kernel map (features N_in x C_in -> N_out x C_out).
// Features on a CUDA device run the device convolution (conv_device.h; f32,
// f16, bf16 or f64) or the device channelwise one
// (conv_channelwise_device.h; f32, f64), the map staying on the host with a
// cached device copy.
fk::Tensor convolve_features(const fk::Tensor& features, const fk::Tensor& weight,
                             std::shared_ptr<const KernelMap> map, bool channelwise = false);

// convolve_features' forward and backward without autograd, on the features'
// device: for callers that keep their own graph (the Python autograd
// Functions), so they reach the same kernels as the C++ node.
fk::Tensor conv_features_forward(const fk::Tensor& features, const fk::Tensor& weight,
                                 const KernelMap& map, bool channelwise);
ConvGrads conv_features_backward(const fk::Tensor& grad_out, const fk::Tensor& features,
                                 const fk::Tensor& weight, const KernelMap& map, bool channelwise,
                                 bool need_features, bool need_weight);

// Process-wide flag (API parity with the reference engine). Every dataflow is
// deterministic by construction; the flag pins the f32 register tiles where
// the per-shape choice would otherwise time them against BLAS, so results are
// also the same across processes and thread counts.
void set_deterministic(bool on);
bool is_deterministic();

}  // namespace minkowski
