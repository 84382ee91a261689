#pragma once
// MinkUNet: the reference's sparse U-Net for semantic segmentation.
//
//   stem     conv k5 (in -> init) BN ReLU                         stride 1
//   encoder  4 x [conv k2 s2 (same channels) BN ReLU, stage_i]      strides 2..16
//   decoder  4 x [transposed conv k2 s2 -> planes[4+i] BN ReLU,
//                 cat with the encoder output of that stride, stage_{4+i}]
//   head     1x1 conv with bias -> out
//
// Each stage is `layers[i]` residual blocks of `planes[i]` (times the block's
// expansion). Named variants, the reference's classes: depth 14 / 18 / 34
// (layers 1x8 / 2x8 / 2,3,4,6,2,2,2,2, basic blocks) on the default planes
// (32,64,128,256,256,128,96,96), init 32, and the width letters each depth
// has: 14A-D and 18A/B/D (decoders 128,128,96,96 / 128x4 / 192,192,128,128
// / 384x4) and 34A-C (256,128,64,64 / 256,128,64,32 / 256,128,96,96: 34C is
// the default planes, the network of the reference's ScanNet weights); depth
// 50 / 101 (layers 2,3,4,6,2,2,2,2 / 2,3,4,23,2,2,2,2, bottleneck blocks: stage
// outputs 4 x planes) on the default planes, no letters.
// Convolution weights start as the reference's (kaiming_normal_fan_out).
#include <array>
#include <string>

#include "minkowski/nn/blocks.h"

namespace minkowski::nn {

struct MinkUNetOptions {
  int64_t in_channels = 3;
  int64_t out_channels = 20;
  int dimension = 3;
  BlockKind block = BlockKind::Basic;
  std::array<int, 8> layers{2, 2, 2, 2, 2, 2, 2, 2};
  std::array<int64_t, 8> planes{32, 64, 128, 256, 256, 128, 96, 96};
  int64_t init_dim = 32;
  double bn_momentum = 0.1;
  fk::DType dtype = fk::DType::F32;
};

// "14", "14A".."14D", "18", "18A", "18B", "18D", "34", "34A".."34C", "50",
// "101": the named layouts above; anything else is an fk::Error listing those names.
MinkUNetOptions minkunet_options(const std::string& variant, int64_t in_channels,
                                 int64_t out_channels, int dimension = 3);

class MinkUNet : public SparseModule {
 public:
  explicit MinkUNet(const MinkUNetOptions& o);
  SparseTensor forward(const SparseTensor& x) override;
  const MinkUNetOptions& options() const { return options_; }

 private:
  struct Level {
    std::shared_ptr<Convolution> conv;
    std::shared_ptr<BatchNorm> norm;
    std::shared_ptr<Sequential> stage;
  };
  MinkUNetOptions options_;
  std::shared_ptr<Convolution> stem_conv_;
  std::shared_ptr<BatchNorm> stem_norm_;
  std::array<Level, 4> down_, up_;
  std::shared_ptr<Convolution> head_;
};

}  // namespace minkowski::nn
