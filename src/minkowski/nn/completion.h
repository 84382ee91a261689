#pragma once
// A completion decoder (the reference's completion / reconstruction
// examples): from a coarse sparse tensor, each level doubles the resolution
// with a generative transposed convolution (k2 s2: all 2^D children of every
// voxel), refines with a k3 convolution, scores every new voxel with a 1x1
// convolution (one occupancy logit) and prunes the voxels scored <= 0. In
// train mode, voxels that are in the target are kept too (teacher forcing), so
// later levels see the right coordinates while the classifiers learn;
// binary_cross_entropy_with_logits(logits[l], targets[l]) trains each level.
#include <vector>

#include "minkowski/nn/conv.h"
#include "minkowski/nn/norm.h"

namespace minkowski::nn {

// 1 where a row's coordinate, at x's tensor stride, holds a target point
// (target: M x (1+D) int32 [batch, x...] at stride 1, on either device: read
// on the host), else 0; x.size() x 1, x's feature dtype, on x's features'
// device.
fk::Tensor occupancy_targets(const SparseTensor& x, const fk::Tensor& target);

struct CompletionOptions {
  int64_t in_channels = 16;
  std::vector<int64_t> channels{16, 8};  // one level each
  int dimension = 3;
  fk::DType dtype = fk::DType::F32;
};

class CompletionDecoder : public Module {
 public:
  explicit CompletionDecoder(const CompletionOptions& o);

  struct Output {
    SparseTensor out;                 // the last level, pruned
    std::vector<fk::Tensor> logits;   // per level, before pruning (N_l x 1)
    std::vector<fk::Tensor> targets;  // per level when a target was given
  };
  // `target`: as occupancy_targets' (undefined: no teacher forcing or targets).
  Output forward(const SparseTensor& x, const fk::Tensor& target = fk::Tensor());

 private:
  struct Level {
    std::shared_ptr<Convolution> up, refine, classify;
    std::shared_ptr<BatchNorm> up_norm, refine_norm;
  };
  std::vector<Level> levels_;
};

}  // namespace minkowski::nn
