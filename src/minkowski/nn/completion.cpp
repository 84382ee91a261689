#include "minkowski/nn/completion.h"

#include <set>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/unary.h"
#include "minkowski/nn/layers.h"
#include "minkowski/ops/prune.h"

namespace minkowski::nn {
namespace {

SparseTensor relu(const SparseTensor& x) {
  return with_features(x, fk::relu(x.F()));
}

}  // namespace

fk::Tensor occupancy_targets(const SparseTensor& x, const fk::Tensor& target) {
  const int d = x.dimension();
  FK_CHECK(target.dim() == 2 && target.size(1) == d + 1, "occupancy_targets",
           "M x " + fk::to_text(d + 1) + " target coordinates", target.shape().str());
  const auto& stride = x.tensor_stride();
  auto snap = [&](int32_t v, int axis) {
    const int32_t s = stride.size() == 1 ? stride[0] : stride[axis];
    return (v >= 0 ? v / s : -((-v + s - 1) / s)) * s;  // floor(v / s) * s
  };
  std::set<std::vector<int32_t>> occupied;
  const auto t = target.to_vector<int32_t>();
  for (size_t i = 0; i < t.size(); i += d + 1) {
    std::vector<int32_t> c{t[i]};
    for (int a = 0; a < d; ++a) c.push_back(snap(t[i + 1 + a], a));
    occupied.insert(std::move(c));
  }
  const auto c = x.C().to_vector<int32_t>();
  std::vector<double> out(static_cast<size_t>(x.size()));
  for (int64_t r = 0; r < x.size(); ++r) {
    const auto* row = c.data() + r * (d + 1);
    out[r] = occupied.count(std::vector<int32_t>(row, row + d + 1)) ? 1.0 : 0.0;
  }
  return fk::from_vector(out, {x.size(), 1}).to(x.F().dtype()).to(x.F().device());
}

CompletionDecoder::CompletionDecoder(const CompletionOptions& o) {
  FK_CHECK(!o.channels.empty(), "CompletionDecoder", "at least one level", "none");
  int64_t in = o.in_channels;
  for (size_t i = 0; i < o.channels.size(); ++i) {
    const int64_t c = o.channels[i];
    const std::string n = "level" + std::to_string(i + 1) + "_";
    Level l;
    l.up = register_module(
        n + "up", make_generative_conv_transpose({in, c, 2, 2, 1, false, o.dimension, o.dtype}));
    l.up_norm = register_module(n + "up_norm", std::make_shared<BatchNorm>(c, 1e-5, 0.1, o.dtype));
    l.refine =
        register_module(n + "refine", make_conv({c, c, 3, 1, 1, false, o.dimension, o.dtype}));
    l.refine_norm =
        register_module(n + "refine_norm", std::make_shared<BatchNorm>(c, 1e-5, 0.1, o.dtype));
    l.classify =
        register_module(n + "classify", make_conv({c, 1, 1, 1, 1, true, o.dimension, o.dtype}));
    levels_.push_back(l);
    in = c;
  }
}

CompletionDecoder::Output CompletionDecoder::forward(const SparseTensor& x,
                                                     const fk::Tensor& target) {
  Output result;
  SparseTensor y = x;
  for (const Level& l : levels_) {
    y = relu(l.up_norm->forward(l.up->forward(y)));
    y = relu(l.refine_norm->forward(l.refine->forward(y)));
    const fk::Tensor logits = l.classify->forward(y).F();
    result.logits.push_back(logits);
    const auto score = logits.detach().to_vector<double>();
    std::vector<bool> keep(score.size());
    for (size_t r = 0; r < score.size(); ++r) keep[r] = score[r] > 0.0;
    if (target.defined()) {
      const fk::Tensor t = occupancy_targets(y, target);
      result.targets.push_back(t);
      if (training()) {
        const auto tv = t.to_vector<double>();
        for (size_t r = 0; r < keep.size(); ++r) keep[r] = keep[r] || tv[r] > 0.5;
      }
    }
    y = prune(y, keep);
  }
  result.out = y;
  return result;
}

}  // namespace minkowski::nn
