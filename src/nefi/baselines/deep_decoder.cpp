#include "nefi/baselines/deep_decoder.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/linalg.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/ops/view.h"

namespace nefi {
namespace {

constexpr int64_t kInputSize = 4;

// (n, m): row j interpolates output cell j from the m input cells.
fk::Tensor interpolation_matrix(int64_t m, int64_t n, fk::DType dtype) {
  std::vector<double> w(n * m, 0.0);
  const double scale = static_cast<double>(m) / static_cast<double>(n);
  for (int64_t j = 0; j < n; ++j) {
    const double src = std::clamp((j + 0.5) * scale - 0.5, 0.0, static_cast<double>(m - 1));
    const auto i0 = static_cast<int64_t>(src);
    const int64_t i1 = std::min(i0 + 1, m - 1);
    const double t = src - static_cast<double>(i0);
    w[j * m + i0] += 1 - t;
    w[j * m + i1] += t;
  }
  return fk::from_vector(w, fk::Dims{n, m}).to(dtype);
}

// Zero mean and unit variance of every channel over its pixels.
fk::Tensor channel_normalise(const fk::Tensor& x) {
  const int64_t c = x.size(0), hw = x.numel() / c;
  const fk::Tensor flat = x.reshape({c, hw});
  const fk::Tensor centred = flat - fk::sum(flat, {1}, true) / static_cast<double>(hw);
  const fk::Tensor var = fk::sum(fk::square(centred), {1}, true) / static_cast<double>(hw);
  return (centred / fk::sqrt(var + 1e-5)).reshape(x.shape());
}

}  // namespace

fk::Tensor bilinear_resize(const fk::Tensor& x, int64_t to0, int64_t to1) {
  FK_CHECK(x.dim() == 3 && to0 >= 1 && to1 >= 1, "nefi::bilinear_resize",
           "x (C, a, b) and sizes >= 1",
           x.shape().str() + " -> " + std::to_string(to0) + "x" + std::to_string(to1));
  const int64_t c = x.size(0), a = x.size(1), b = x.size(2);
  const fk::Tensor m0 = interpolation_matrix(a, to0, x.dtype());
  const fk::Tensor m1 = interpolation_matrix(b, to1, x.dtype());
  // Along axis 2: (C a, b) (b, to1); then along axis 1 on the transposed planes.
  const fk::Tensor y = fk::matmul(x.reshape({c * a, b}), m1.t()).reshape({c, a, to1});
  const fk::Tensor yt = fk::permute(y, {0, 2, 1}).contiguous().reshape({c * to1, a});
  const fk::Tensor z = fk::matmul(yt, m0.t()).reshape({c, to1, to0});
  return fk::permute(z, {0, 2, 1}).contiguous();
}

DeepDecoderField::DeepDecoderField(HeadPtr head, int64_t width, int64_t n_stages, uint64_t seed,
                                   fk::DType dtype)
    : head_(std::move(head)), width_(width), n_stages_(n_stages), dtype_(dtype) {
  FK_CHECK(head_ && head_->n_in() == 1, "nefi::DeepDecoderField", "one single-channel head",
           head_ ? std::to_string(head_->n_in()) + " channels" : "none");
  FK_CHECK(width >= 1 && n_stages >= 1, "nefi::DeepDecoderField", "width >= 1 and n_stages >= 1",
           std::to_string(width) + ", " + std::to_string(n_stages));
  primary_ = head_->name();
  for (int64_t k = 0; k < n_stages; ++k) {
    std::string name = std::to_string(k);  // "w<k>"; built in place (GCC 12 -Wrestrict)
    name.insert(0, 1, 'w');
    params_.add(name, {width, width});
  }
  params_.add("out", {1, width});
  params_.allocate(dtype);
  reset_parameters(seed);
}

void DeepDecoderField::reset_parameters(uint64_t seed) {
  fk::autograd::NoGradGuard ng;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 0.1);
  std::vector<double> z(width_ * kInputSize * kInputSize);
  for (double& v : z) v = uniform(rng);
  input_ = fk::from_vector(z, fk::Dims{width_, kInputSize, kInputSize}).to(dtype_);
  const double he = std::sqrt(2.0 / static_cast<double>(width_));
  for (int i = 0; i < params_.size(); ++i) {
    const double sd = i < n_stages_ ? he : 0.1 / std::sqrt(static_cast<double>(width_));
    std::vector<double> w(params_.shape(i).numel());
    for (double& v : w) v = sd * normal(rng);
    params_.raw(i).copy_(fk::from_vector(w, params_.shape(i)).to(dtype_));
  }
  params_.flat().bump_version();
}

fk::Tensor deep_decoder_render(const fk::Tensor& input, const std::vector<fk::Tensor>& weights,
                               int64_t n0, int64_t n1) {
  FK_CHECK(input.dim() == 3 && weights.size() >= 2, "nefi::deep_decoder_render",
           "input (C, a, b) and at least one stage plus the output weights",
           input.shape().str() + ", " + std::to_string(weights.size()) + " weights");
  const int64_t c = input.size(0), stages = static_cast<int64_t>(weights.size()) - 1;
  const double a0 = static_cast<double>(input.size(1)), b0 = static_cast<double>(input.size(2));
  fk::Tensor x = input;
  for (int64_t k = 0; k < stages; ++k) {
    const int64_t a = x.size(1), b = x.size(2);
    x = fk::matmul(weights[k], x.reshape({c, a * b})).reshape({c, a, b});
    x = channel_normalise(fk::relu(x));
    // Sizes grow geometrically from the input's to (n0, n1) at the last stage.
    const double f = static_cast<double>(k + 1) / static_cast<double>(stages);
    const auto size = [&](double from, int64_t to) {
      return std::max<int64_t>(1, std::llround(from * std::pow(static_cast<double>(to) / from, f)));
    };
    x = bilinear_resize(x, size(a0, n0), size(b0, n1));
  }
  return fk::matmul(weights[stages], x.reshape({c, n0 * n1})).reshape({n0 * n1, 1});
}

FieldMap DeepDecoderField::forward(const Domain& domain, double) {
  FK_CHECK(domain.ndim() == 2, "nefi::DeepDecoderField", "a 2-D domain", domain.shape().str());
  const int64_t n0 = domain.shape()[0], n1 = domain.shape()[1];
  const fk::Tensor raw =
      deep_decoder_render(input_, params_.views(), n0, n1) + head_->init_bias()[0];
  return apply_heads({head_}, raw, domain.shape());
}

}  // namespace nefi
