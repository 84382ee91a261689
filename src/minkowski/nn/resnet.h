#pragma once
// Sparse ResNet classifier (the reference's examples/resnet.py layout):
//
//   stem   conv k3 s2 (in -> init) BN ReLU, max pooling k2 s2
//   4 stages of `layers[i]` residual blocks of planes[i], each entered with stride 2
//   tail   Dropout, conv k3 s3 BN GELU, global max pooling, Linear with bias -> out
//
// BN where the reference has InstanceNorm (stem and tail): the tail leaves one
// voxel per item of a small shape, which an instance norm maps to its bias.
//
// Convolution weights start as the reference's (kaiming_normal_fan_out).
//
// forward() returns one row of logits per batch item. Named variants, the
// reference's classes: "14" (layers 1,1,1,1), "18" (2,2,2,2) and "34" (3,4,6,3)
// of basic blocks; "50" (3,4,6,3) and "101" (3,4,23,3) of bottlenecks (stage
// outputs 4 x planes); planes 64..512, init 64.
#include <array>
#include <string>

#include "minkowski/nn/blocks.h"
#include "minkowski/nn/layers.h"

namespace minkowski::nn {

struct ResNetOptions {
  int64_t in_channels = 3;
  int64_t out_channels = 10;
  int dimension = 3;
  BlockKind block = BlockKind::Basic;
  std::array<int, 4> layers{2, 2, 2, 2};
  std::array<int64_t, 4> planes{64, 128, 256, 512};
  int64_t init_dim = 64;
  double dropout = 0.5;
  fk::DType dtype = fk::DType::F32;
};

ResNetOptions resnet_options(const std::string& variant, int64_t in_channels, int64_t out_channels,
                             int dimension = 3);

class ResNet : public SparseModule {
 public:
  explicit ResNet(const ResNetOptions& o);
  SparseTensor forward(const SparseTensor& x) override;

 private:
  std::shared_ptr<Sequential> body_;
  std::shared_ptr<Linear> head_;
};

}  // namespace minkowski::nn
