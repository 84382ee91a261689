#include "minkowski/nn/minkunet.h"

#include <map>

#include "fk/error.h"
#include "fk/ops/unary.h"
#include "minkowski/nn/layers.h"

namespace minkowski::nn {
namespace {

SparseTensor relu(const SparseTensor& x) {
  return with_features(x, fk::relu(x.F()));
}

}  // namespace

MinkUNetOptions minkunet_options(const std::string& variant, int64_t in_channels,
                                 int64_t out_channels, int dimension) {
  MinkUNetOptions o;
  o.in_channels = in_channels;
  o.out_channels = out_channels;
  o.dimension = dimension;
  // The reference's classes (examples/minkunet.py): a depth and, for some,
  // a width letter. Depth 34's letters are its own widths, not 14's.
  using Planes = std::array<int64_t, 8>;
  static const std::map<std::string, Planes> kWidths = {
      {"14A", {32, 64, 128, 256, 128, 128, 96, 96}},
      {"14B", {32, 64, 128, 256, 128, 128, 128, 128}},
      {"14C", {32, 64, 128, 256, 192, 192, 128, 128}},
      {"14D", {32, 64, 128, 256, 384, 384, 384, 384}},
      {"18A", {32, 64, 128, 256, 128, 128, 96, 96}},
      {"18B", {32, 64, 128, 256, 128, 128, 128, 128}},
      {"18D", {32, 64, 128, 256, 384, 384, 384, 384}},
      {"34A", {32, 64, 128, 256, 256, 128, 64, 64}},
      {"34B", {32, 64, 128, 256, 256, 128, 64, 32}},
      {"34C", {32, 64, 128, 256, 256, 128, 96, 96}}};
  const std::string names = "14, 14A-D, 18, 18A, 18B, 18D, 34, 34A-C, 50, 101";
  // Depths 50 and 101 are bottleneck networks and have no width letters.
  static const std::map<std::string, std::pair<BlockKind, std::array<int, 8>>> kDepths = {
      {"14", {BlockKind::Basic, {1, 1, 1, 1, 1, 1, 1, 1}}},
      {"18", {BlockKind::Basic, {2, 2, 2, 2, 2, 2, 2, 2}}},
      {"34", {BlockKind::Basic, {2, 3, 4, 6, 2, 2, 2, 2}}},
      {"50", {BlockKind::Bottleneck, {2, 3, 4, 6, 2, 2, 2, 2}}},
      {"101", {BlockKind::Bottleneck, {2, 3, 4, 23, 2, 2, 2, 2}}}};
  const auto depth = kDepths.find(variant);
  const auto width = kWidths.find(variant);
  if (width != kWidths.end()) {
    o.layers = kDepths.at(variant.substr(0, 2)).second;
    o.planes = width->second;
  } else {
    FK_CHECK(depth != kDepths.end(), "minkunet_options", names, "'" + variant + "'");
    o.block = depth->second.first;
    o.layers = depth->second.second;
  }
  return o;
}

MinkUNet::MinkUNet(const MinkUNetOptions& o) : options_(o) {
  const int64_t e = block_expansion(o.block);
  auto conv = [&](int64_t in, int64_t out, int32_t k, int32_t s, ConvKind kind, bool bias) {
    return std::make_shared<Convolution>(ConvOptions{in, out, k, s, 1, bias, o.dimension, o.dtype},
                                         kind);
  };
  auto norm = [&](int64_t c) {
    return std::make_shared<BatchNorm>(c, 1e-5, o.bn_momentum, o.dtype);
  };
  auto stage = [&](int i, int64_t in) {
    return make_stage(o.block, {in, o.planes[i], 1, 1, o.bn_momentum, o.dimension, o.dtype},
                      o.layers[i]);
  };
  stem_conv_ =
      register_module("stem_conv", conv(o.in_channels, o.init_dim, 5, 1, ConvKind::Regular, false));
  stem_norm_ = register_module("stem_norm", norm(o.init_dim));
  // Channels leaving each encoder level, the stem's first: the skips.
  std::array<int64_t, 5> skip{o.init_dim, 0, 0, 0, 0};
  for (int i = 0; i < 4; ++i) {
    const std::string n = std::to_string(i + 1);
    down_[i].conv = register_module("down" + n + "_conv",
                                    conv(skip[i], skip[i], 2, 2, ConvKind::Regular, false));
    down_[i].norm = register_module("down" + n + "_norm", norm(skip[i]));
    down_[i].stage = register_module("down" + n + "_blocks", stage(i, skip[i]));
    skip[i + 1] = o.planes[i] * e;
  }
  int64_t channels = skip[4];
  for (int i = 0; i < 4; ++i) {
    const std::string n = std::to_string(i + 1);
    up_[i].conv = register_module(
        "up" + n + "_conv", conv(channels, o.planes[4 + i], 2, 2, ConvKind::Transpose, false));
    up_[i].norm = register_module("up" + n + "_norm", norm(o.planes[4 + i]));
    up_[i].stage =
        register_module("up" + n + "_blocks", stage(4 + i, o.planes[4 + i] + skip[3 - i]));
    channels = o.planes[4 + i] * e;
  }
  head_ = register_module("head", conv(channels, o.out_channels, 1, 1, ConvKind::Regular, true));
  kaiming_normal_fan_out(*this);
}

SparseTensor MinkUNet::forward(const SparseTensor& x) {
  std::array<SparseTensor, 5> skips;
  skips[0] = relu(stem_norm_->forward(stem_conv_->forward(x)));
  for (int i = 0; i < 4; ++i) {
    const Level& l = down_[i];
    skips[i + 1] = l.stage->forward(relu(l.norm->forward(l.conv->forward(skips[i]))));
  }
  SparseTensor y = skips[4];
  for (int i = 0; i < 4; ++i) {
    const Level& l = up_[i];
    // The transposed convolution lands on the encoder's map of that stride.
    const SparseTensor up = relu(l.norm->forward(l.conv->forward(y, skips[3 - i].map_ref())));
    y = l.stage->forward(cat(up, skips[3 - i]));
  }
  return head_->forward(y);
}

}  // namespace minkowski::nn
