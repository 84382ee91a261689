#pragma once
// ResNet blocks on sparse tensors (the reference's ME.modules.resnet_block):
//   BasicBlock  conv3(stride) BN ReLU conv3 BN, + shortcut, ReLU   (expansion 1)
//   Bottleneck  conv1 BN ReLU conv3(stride) BN ReLU conv1 BN, + shortcut, ReLU
//               (expansion 4)
// The shortcut is the identity, or a 1x1 convolution with the block's stride
// and a BN when the stride or the channel count changes.
#include <memory>

#include "minkowski/nn/conv.h"
#include "minkowski/nn/norm.h"

namespace minkowski::nn {

enum class BlockKind { Basic, Bottleneck };

int64_t block_expansion(BlockKind kind);

struct BlockOptions {
  int64_t in_channels = 0;
  int64_t planes = 0;  // output channels = planes * expansion
  int32_t stride = 1;
  int32_t dilation = 1;
  double bn_momentum = 0.1;
  int dimension = 3;
  fk::DType dtype = fk::DType::F32;
};

class ResidualBlock : public SparseModule {
 public:
  ResidualBlock(BlockKind kind, const BlockOptions& o);
  SparseTensor forward(const SparseTensor& x) override;
  int64_t out_channels() const { return out_channels_; }

 private:
  std::vector<std::pair<std::shared_ptr<Convolution>, std::shared_ptr<BatchNorm>>> stages_;
  std::shared_ptr<Convolution> shortcut_conv_;
  std::shared_ptr<BatchNorm> shortcut_norm_;
  int64_t out_channels_;
};

// `count` blocks: the first maps in_channels with `stride`, the rest keep
// planes * expansion channels.
std::shared_ptr<Sequential> make_stage(BlockKind kind, const BlockOptions& first, int count);

}  // namespace minkowski::nn
