#include "minkowski/nn/resnet.h"

#include <map>

#include "fk/error.h"
#include "fk/ops/unary.h"
#include "minkowski/nn/norm.h"

namespace minkowski::nn {

ResNetOptions resnet_options(const std::string& variant, int64_t in_channels, int64_t out_channels,
                             int dimension) {
  ResNetOptions o;
  o.in_channels = in_channels;
  o.out_channels = out_channels;
  o.dimension = dimension;
  // The reference's examples/resnet.py classes: basic blocks to depth 34,
  // bottlenecks (4x wider stage outputs) from 50.
  static const std::map<std::string, std::pair<BlockKind, std::array<int, 4>>> kDepths = {
      {"14", {BlockKind::Basic, {1, 1, 1, 1}}},
      {"18", {BlockKind::Basic, {2, 2, 2, 2}}},
      {"34", {BlockKind::Basic, {3, 4, 6, 3}}},
      {"50", {BlockKind::Bottleneck, {3, 4, 6, 3}}},
      {"101", {BlockKind::Bottleneck, {3, 4, 23, 3}}}};
  const auto it = kDepths.find(variant);
  FK_CHECK(it != kDepths.end(), "resnet_options", "14, 18, 34, 50 or 101", "'" + variant + "'");
  o.block = it->second.first;
  o.layers = it->second.second;
  return o;
}

ResNet::ResNet(const ResNetOptions& o) {
  auto body = std::make_shared<Sequential>();
  auto conv = [&](int64_t in, int64_t out, int32_t k, int32_t s) {
    return make_conv({in, out, k, s, 1, false, o.dimension, o.dtype});
  };
  // BatchNorm in the stem and the tail where the reference has InstanceNorm:
  // the tail's stride-3 conv leaves one voxel per item of a small shape,
  // which an instance norm maps to its bias alone (nothing reaches the head:
  // the 60-step shape classifier of classifier_test.cpp fell from 0.78 to
  // chance). A training batch of one such item is refused by BatchNorm.
  body->push_back(conv(o.in_channels, o.init_dim, 3, 2));
  body->push_back(std::make_shared<BatchNorm>(o.init_dim, 1e-5, 0.1, o.dtype));
  body->push_back(make_relu());
  body->push_back(std::make_shared<Pooling>(PoolingMode::Max, 2, 2));
  int64_t channels = o.init_dim;
  for (int i = 0; i < 4; ++i) {
    body->push_back(
        make_stage(o.block, {channels, o.planes[i], 2, 1, 0.1, o.dimension, o.dtype}, o.layers[i]));
    channels = o.planes[i] * block_expansion(o.block);
  }
  body->push_back(std::make_shared<Dropout>(o.dropout));
  body->push_back(conv(channels, channels, 3, 3));
  body->push_back(std::make_shared<BatchNorm>(channels, 1e-5, 0.1, o.dtype));
  body->push_back(std::make_shared<Activation>([](const fk::Tensor& f) { return fk::gelu(f); }));
  body->push_back(std::make_shared<GlobalPooling>(PoolingMode::Max));
  body_ = register_module("body", body);
  head_ =
      register_module("head", std::make_shared<Linear>(channels, o.out_channels, true, o.dtype));
  kaiming_normal_fan_out(*this);
}

SparseTensor ResNet::forward(const SparseTensor& x) {
  return head_->forward(body_->forward(x));
}

}  // namespace minkowski::nn
