#pragma once
// The plain references the fused MLP tests check against (the kernels' host
// emulation in field/fused_mlp_cells_test.cpp, the device op in
// cuda/fused_mlp_device_test.cpp): random parameters drawn as NeuralField
// draws them, and the network written out layer by layer with fk ops, each
// weight and bias its own leaf, its flat gradient assembled from theirs.
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "nefi/field/dense.h"

namespace nefi::fused_mlp_test {

// Layer l's share of the flat parameters: rows x fan_in weights, then rows
// biases.
struct MlpLayer {
  int64_t rows = 0, fan_in = 0;
};

// y, dL/dx and dL/dparams (flat, layer by layer weight then bias).
struct MlpResult {
  std::vector<double> y, dx, dp;
};

// Layer by layer, weights uniform in +-sqrt(6 / (fan_in + fan_out)) (sine:
// SIREN's bounds, 1 / fan_in first and sqrt(6 / fan_in) / w0 in the other
// hidden layers), then biases in +-0.1 so that their gradients are not
// trivial; f32 draws from gen.
inline std::vector<float> random_mlp_params(const std::vector<MlpLayer>& layers, bool sine,
                                            double w0, fk::Generator& gen) {
  auto draw = [&](int64_t count, double bound) {
    return fk::uniform({count}, -bound, bound, {fk::DType::F32}, &gen).to_vector<float>();
  };
  const int depth = static_cast<int>(layers.size()) - 1;
  std::vector<float> p;
  for (int l = 0; l <= depth; ++l) {
    const double fi = static_cast<double>(layers[l].fan_in), fo = layers[l].rows;
    double bound = std::sqrt(6.0 / (fi + fo));
    if (sine && l < depth) bound = l == 0 ? 1.0 / fi : std::sqrt(6.0 / fi) / w0;
    for (float v : draw(layers[l].rows * layers[l].fan_in, bound)) p.push_back(v);
    for (float v : draw(layers[l].rows, 0.1)) p.push_back(v);
  }
  return p;
}

// Hidden layer l's output from its input h, weight w and bias b.
using HiddenLayer =
    std::function<fk::Tensor(int l, const fk::Tensor& h, const fk::Tensor& w, const fk::Tensor& b)>;

// The network on x (its dtype and device for every leaf): hidden layers by
// `hidden`, x joined to h before layer `skip` (-1: never), the last layer
// nefi::dense without activation; the gradients of sum(y * r).
inline MlpResult layer_chain(const std::vector<MlpLayer>& layers, int skip, fk::Tensor x,
                             const std::vector<double>& params, const fk::Tensor& r,
                             const HiddenLayer& hidden) {
  const int depth = static_cast<int>(layers.size()) - 1;
  x.set_requires_grad(true);
  std::vector<fk::Tensor> w, b;
  int64_t at = 0;
  auto leaf = [&](int64_t count, fk::Dims shape) {
    std::vector<double> v(params.begin() + at, params.begin() + at + count);
    at += count;
    fk::Tensor t = fk::from_vector(v, shape).to(x.dtype()).to(x.device());
    t.set_requires_grad(true);
    return t;
  };
  for (const MlpLayer& L : layers) {
    w.push_back(leaf(L.rows * L.fan_in, {L.rows, L.fan_in}));
    b.push_back(leaf(L.rows, {L.rows}));
  }
  fk::Tensor h = x;
  for (int l = 0; l < depth; ++l) {
    if (l == skip) h = fk::cat({h, x}, 1);
    h = hidden(l, h, w[l], b[l]);
  }
  const fk::Tensor y = nefi::dense(h, w[depth], b[depth], nefi::DenseActivation::None);
  fk::sum(fk::mul(y, r)).backward();
  MlpResult res{y.to_vector<double>(), x.grad().to_vector<double>(), {}};
  for (int l = 0; l <= depth; ++l)
    for (const fk::Tensor* t : {&w[l], &b[l]})
      for (double v : t->grad().to_vector<double>()) res.dp.push_back(v);
  return res;
}

}  // namespace nefi::fused_mlp_test
