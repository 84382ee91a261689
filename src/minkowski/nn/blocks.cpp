#include "minkowski/nn/blocks.h"

#include "fk/error.h"
#include "fk/ops/unary.h"
#include "minkowski/nn/layers.h"

namespace minkowski::nn {

int64_t block_expansion(BlockKind kind) {
  return kind == BlockKind::Basic ? 1 : 4;
}

ResidualBlock::ResidualBlock(BlockKind kind, const BlockOptions& o)
    : out_channels_(o.planes * block_expansion(kind)) {
  FK_CHECK(o.in_channels > 0 && o.planes > 0, "nn::ResidualBlock",
           "positive input channels and planes",
           fk::to_text(o.in_channels) + ", " + fk::to_text(o.planes));
  auto conv = [&](int64_t in, int64_t out, int32_t k, int32_t stride) {
    return make_conv({in, out, k, stride, k == 1 ? 1 : o.dilation, false, o.dimension, o.dtype});
  };
  // (in, out, kernel, stride) of each convolution.
  struct Step {
    int64_t in, out;
    int32_t kernel, stride;
  };
  std::vector<Step> steps;
  if (kind == BlockKind::Basic) {
    steps = {{o.in_channels, o.planes, 3, o.stride}, {o.planes, o.planes, 3, 1}};
  } else {
    steps = {{o.in_channels, o.planes, 1, 1},
             {o.planes, o.planes, 3, o.stride},
             {o.planes, out_channels_, 1, 1}};
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    auto c = register_module("conv" + std::to_string(i + 1), conv(s.in, s.out, s.kernel, s.stride));
    auto n = register_module("norm" + std::to_string(i + 1),
                             std::make_shared<BatchNorm>(s.out, 1e-5, o.bn_momentum, o.dtype));
    stages_.emplace_back(c, n);
  }
  if (o.stride != 1 || o.in_channels != out_channels_) {
    shortcut_conv_ =
        register_module("downsample_conv", conv(o.in_channels, out_channels_, 1, o.stride));
    shortcut_norm_ =
        register_module("downsample_norm",
                        std::make_shared<BatchNorm>(out_channels_, 1e-5, o.bn_momentum, o.dtype));
  }
}

SparseTensor ResidualBlock::forward(const SparseTensor& x) {
  SparseTensor y = x;
  for (size_t i = 0; i < stages_.size(); ++i) {
    y = stages_[i].second->forward(stages_[i].first->forward(y));
    if (i + 1 < stages_.size()) y = with_features(y, fk::relu(y.F()));
  }
  // A strided 1x1 shortcut lands on the same strided map as the main path.
  const SparseTensor shortcut =
      shortcut_conv_ ? shortcut_norm_->forward(shortcut_conv_->forward(x, y.map_ref())) : x;
  const SparseTensor sum = add(y, shortcut);
  return with_features(sum, fk::relu(sum.F()));
}

std::shared_ptr<Sequential> make_stage(BlockKind kind, const BlockOptions& first, int count) {
  FK_CHECK(count >= 1, "nn::make_stage", "at least one block", fk::to_text(count));
  auto stage = std::make_shared<Sequential>();
  BlockOptions o = first;
  for (int i = 0; i < count; ++i) {
    stage->push_back(std::make_shared<ResidualBlock>(kind, o));
    o.in_channels = o.planes * block_expansion(kind);
    o.stride = 1;
  }
  return stage;
}

}  // namespace minkowski::nn
