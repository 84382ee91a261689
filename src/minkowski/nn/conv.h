#pragma once
// Convolution layers: modules over the ops of minkowski/ops/conv.h holding
// the weight (K, C_in, C_out) — or (C_in, C_out) for a 1x1 stride-1 layer, the
// reference's matrix-product path — and an optional bias (1, C_out).
// Channelwise holds (K, C). Weights start uniform in ±1/sqrt(fan) with fan =
// C_in·K (C_out·K for the transposed kinds; channelwise C·K), drawn from fk's
// default generator (fk::manual_seed makes a network reproducible).
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "fk/dtype.h"
#include "minkowski/coords/kernel_region.h"
#include "minkowski/nn/module.h"

namespace minkowski::nn {

enum class ConvKind { Regular, Transpose, GenerativeTranspose };

struct ConvOptions {
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int32_t kernel_size = 3;
  int32_t stride = 1;
  int32_t dilation = 1;
  bool bias = false;
  int dimension = 3;
  fk::DType dtype = fk::DType::F32;
};

class Convolution : public SparseModule {
 public:
  explicit Convolution(const ConvOptions& o, ConvKind kind = ConvKind::Regular);
  SparseTensor forward(const SparseTensor& x) override;
  // Onto the coordinates of `out` (Regular and Transpose only).
  SparseTensor forward(const SparseTensor& x, const MapRef& out);
  const fk::Tensor& weight() const { return weight_; }
  const fk::Tensor& bias() const { return bias_; }
  const ConvOptions& options() const { return options_; }
  ConvKind kind() const { return kind_; }

 private:
  SparseTensor run(const SparseTensor& x, const std::optional<MapRef>& out);
  ConvOptions options_;
  ConvKind kind_;
  KernelRegion kernel_;
  fk::Tensor weight_, bias_;
};

// Convenience: the transposed kinds.
std::shared_ptr<Convolution> make_conv(const ConvOptions& o);
std::shared_ptr<Convolution> make_conv_transpose(const ConvOptions& o);
std::shared_ptr<Convolution> make_generative_conv_transpose(const ConvOptions& o);

class ChannelwiseConvolution : public SparseModule {
 public:
  // out_channels is ignored (= in_channels).
  explicit ChannelwiseConvolution(const ConvOptions& o);
  SparseTensor forward(const SparseTensor& x) override;
  const fk::Tensor& weight() const { return weight_; }

 private:
  ConvOptions options_;
  KernelRegion kernel_;
  fk::Tensor weight_, bias_;
};

// The reference's ResNetBase.weight_initialization, which its ResNets and
// MinkUNets run: every regular Convolution's weight under `root` drawn anew
// from N(0, 2 / fan_out) (He's, for ReLU), fan_out = C_out·K for a (K, C_in,
// C_out) kernel and size(0) = C_in for a 1x1 (C_in, C_out) matrix (its
// kaiming_normal_ reads a 2-D kernel as a Linear weight). Transposed
// convolutions (not MinkowskiConvolution subclasses there), biases and other
// layers keep theirs.
void kaiming_normal_fan_out(Module& root);

}  // namespace minkowski::nn
