#include "minkowski/nn/conv.h"

#include <cmath>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/random.h"
#include "minkowski/nn/autocast.h"
#include "minkowski/nn/layers.h"
#include "minkowski/ops/conv.h"

namespace minkowski::nn {
namespace {

void check_options(const ConvOptions& o, const char* where) {
  FK_CHECK(o.in_channels > 0 && o.out_channels > 0, where, "positive channel counts",
           fk::to_text(o.in_channels) + " -> " + fk::to_text(o.out_channels));
  FK_CHECK(o.kernel_size > 0 && o.stride > 0 && o.dilation > 0 && o.dimension > 0, where,
           "positive kernel size, stride, dilation and dimension",
           fk::to_text(o.kernel_size) + ", " + fk::to_text(o.stride) + ", " +
               fk::to_text(o.dilation) + ", " + fk::to_text(o.dimension));
  FK_CHECK(fk::is_floating(o.dtype), where, "a floating dtype", fk::name(o.dtype));
}

fk::Tensor uniform_init(const fk::Dims& shape, int64_t fan, fk::DType dtype) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan));
  return fk::uniform(shape, -bound, bound, {fk::DType::F32}).to(dtype);
}

}  // namespace

Convolution::Convolution(const ConvOptions& o, ConvKind kind)
    : options_(o), kind_(kind), kernel_(KernelRegion::cube({o.kernel_size}, {o.dilation})) {
  check_options(o, "nn::Convolution");
  const int64_t k = kernel_.volume(o.dimension);
  // A 2-D weight for every 1x1 unit-stride layer, transposed ones too, as
  // the reference (and fieldkit.minkowski) keep it: their checkpoints load.
  const bool matrix = k == 1 && o.stride == 1;
  const int64_t fan = (kind == ConvKind::Regular ? o.in_channels : o.out_channels) * k;
  const fk::Dims shape =
      matrix ? fk::Dims{o.in_channels, o.out_channels} : fk::Dims{k, o.in_channels, o.out_channels};
  weight_ = register_parameter("weight", uniform_init(shape, fan, o.dtype));
  if (o.bias) bias_ = register_parameter("bias", uniform_init({1, o.out_channels}, fan, o.dtype));
}

SparseTensor Convolution::run(const SparseTensor& x_in, const std::optional<MapRef>& out) {
  FK_CHECK(x_in.channels() == options_.in_channels, "nn::Convolution",
           fk::to_text(options_.in_channels) + " input channels", fk::to_text(x_in.channels()));
  const std::vector<int32_t> stride{options_.stride};
  const SparseTensor x = with_features(x_in, autocast(x_in.F()));
  // (a 1x1 layer's 2-D weight as the one offset's matrix: a map other than
  // the identity, onto given coordinates or transposed, takes K x C_in x C_out)
  const fk::Tensor w2 = autocast(weight_), b = autocast(bias_);
  const fk::Tensor w = w2.dim() == 2 ? w2.unsqueeze(0) : w2;
  switch (kind_) {
    case ConvKind::Regular:
      return convolution(x, w, b, kernel_, stride, out);
    case ConvKind::Transpose:
      return convolution_transpose(x, w, b, kernel_, stride, out);
    case ConvKind::GenerativeTranspose:
      FK_CHECK(!out, "nn::Convolution (generative transpose)", "no output coordinates",
               "given ones");
      return generative_convolution_transpose(x, w, b, kernel_, stride);
  }
  throw fk::Error("nn::Convolution: unknown kind");
}

SparseTensor Convolution::forward(const SparseTensor& x) {
  return run(x, std::nullopt);
}

SparseTensor Convolution::forward(const SparseTensor& x, const MapRef& out) {
  return run(x, out);
}

std::shared_ptr<Convolution> make_conv(const ConvOptions& o) {
  return std::make_shared<Convolution>(o, ConvKind::Regular);
}
std::shared_ptr<Convolution> make_conv_transpose(const ConvOptions& o) {
  return std::make_shared<Convolution>(o, ConvKind::Transpose);
}
std::shared_ptr<Convolution> make_generative_conv_transpose(const ConvOptions& o) {
  return std::make_shared<Convolution>(o, ConvKind::GenerativeTranspose);
}

ChannelwiseConvolution::ChannelwiseConvolution(const ConvOptions& o)
    : options_(o), kernel_(KernelRegion::cube({o.kernel_size}, {o.dilation})) {
  options_.out_channels = o.in_channels;
  check_options(options_, "nn::ChannelwiseConvolution");
  const int64_t k = kernel_.volume(o.dimension);
  // fan = C·K, the reference's (its reset_parameters); K alone drew weights
  // sqrt(C) too wide.
  const int64_t fan = o.in_channels * k;
  weight_ = register_parameter("weight", uniform_init({k, o.in_channels}, fan, o.dtype));
  if (o.bias) bias_ = register_parameter("bias", uniform_init({1, o.in_channels}, fan, o.dtype));
}

SparseTensor ChannelwiseConvolution::forward(const SparseTensor& x) {
  return channelwise_convolution(with_features(x, autocast(x.F())), autocast(weight_),
                                 autocast(bias_), kernel_, {options_.stride});
}

void kaiming_normal_fan_out(Module& root) {
  auto* conv = dynamic_cast<Convolution*>(&root);
  if (conv && conv->kind() == ConvKind::Regular) {
    fk::Tensor w = conv->weight();
    const fk::Dims& shape = w.shape();
    const int64_t fan_out = shape.size() == 3 ? shape[0] * shape[2] : shape[0];
    const double std = std::sqrt(2.0 / static_cast<double>(fan_out));
    fk::autograd::NoGradGuard no_grad;
    w.copy_(fk::normal(shape, 0.0, std, {fk::DType::F32}).to(w.dtype()).to(w.device()));
  }
  for (const auto& [name, child] : root.children()) kaiming_normal_fan_out(*child);
}

}  // namespace minkowski::nn
