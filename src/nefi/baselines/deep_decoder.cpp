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

// Zero mean and unit variance of every channel over its cells, then the
// learned scale and shift (C each).
fk::Tensor channel_normalise(const fk::Tensor& x, const fk::Tensor& scale,
                             const fk::Tensor& shift) {
  const int64_t c = x.size(0), cells = x.numel() / c;
  const fk::Tensor flat = x.reshape({c, cells});
  const fk::Tensor centred = flat - fk::sum(flat, {1}, true) / static_cast<double>(cells);
  const fk::Tensor var = fk::sum(fk::square(centred), {1}, true) / static_cast<double>(cells);
  const fk::Tensor unit = centred / fk::sqrt(var + 1e-5);
  return (unit * scale.reshape({c, 1}) + shift.reshape({c, 1})).reshape(x.shape());
}

}  // namespace

fk::Tensor linear_resize(const fk::Tensor& x, const fk::Dims& sizes, ResizeMatrices* cache) {
  const int nd = sizes.size();
  bool ok = x.dim() == nd + 1 && (nd == 2 || nd == 3);
  for (int64_t s : sizes) ok = ok && s >= 1;
  FK_CHECK(ok, "nefi::linear_resize", "x (C, a, b[, c]) and as many sizes >= 1",
           x.shape().str() + " -> " + sizes.str());
  fk::Tensor y = x;
  for (int a = 1; a <= nd; ++a) {
    const int64_t m = y.size(a), n = sizes[a - 1];
    if (m == n) continue;
    // Move axis a last, interpolate the rows, move it back.
    fk::Dims order, back = fk::Dims::filled(nd + 1, 0);
    for (int k = 0; k <= nd; ++k)
      if (k != a) order.push_back(k);
    order.push_back(a);
    for (int k = 0; k <= nd; ++k) back[static_cast<int>(order[k])] = k;
    const fk::Tensor last = fk::permute(y, order).contiguous();
    fk::Dims moved = last.shape();
    moved[nd] = n;
    fk::Tensor w;
    if (cache != nullptr) {
      fk::Tensor& kept = (*cache)[{m, n}];
      if (!kept.defined() || kept.device() != x.device() || kept.dtype() != x.dtype())
        kept = interpolation_matrix(m, n, x.dtype()).to(x.device());
      w = kept;
    } else {
      w = interpolation_matrix(m, n, x.dtype()).to(x.device());
    }
    const fk::Tensor r = fk::matmul(last.reshape({last.numel() / m, m}), w.t());
    y = fk::permute(r.reshape(moved), back).contiguous();
  }
  return y;
}

fk::Tensor bilinear_resize(const fk::Tensor& x, int64_t to0, int64_t to1) {
  return linear_resize(x, fk::Dims{to0, to1});
}

fk::Tensor deep_decoder_render(const fk::Tensor& input, const std::vector<fk::Tensor>& weights,
                               const fk::Dims& shape, ResizeMatrices* cache) {
  const int nd = shape.size();
  FK_CHECK(
      input.dim() == nd + 1 && weights.size() >= 4 && weights.size() % 3 == 1,
      "nefi::deep_decoder_render",
      "input (C, spatial...) of the shape's rank and 3 S + 1 weights (S >= 1)",
      input.shape().str() + ", " + shape.str() + ", " + fk::to_text(weights.size()) + " weights");
  const int64_t c = input.size(0), stages = static_cast<int64_t>(weights.size()) / 3;
  fk::Tensor x = input;
  for (int64_t k = 0; k < stages; ++k) {
    // Sizes grow geometrically from the input's to `shape` at the last stage.
    const double f = stages == 1 ? 1.0 : static_cast<double>(k) / static_cast<double>(stages - 1);
    fk::Dims size = fk::Dims::filled(nd, 1);
    for (int a = 0; a < nd; ++a) {
      const auto from = static_cast<double>(input.size(a + 1));
      size[a] = std::max<int64_t>(
          1, std::llround(from * std::pow(static_cast<double>(shape[a]) / from, f)));
    }
    x = linear_resize(x, size, cache);
    const int64_t cells = x.numel() / c;
    x = fk::matmul(weights[3 * k], x.reshape({c, cells})).reshape(x.shape());
    x = channel_normalise(fk::relu(x), weights[3 * k + 1], weights[3 * k + 2]);
  }
  return fk::matmul(weights[3 * stages], x.reshape({c, x.numel() / c})).reshape({x.numel() / c, 1});
}

DeepDecoderField::DeepDecoderField(HeadPtr head, int ndim, int64_t width, int64_t n_stages,
                                   uint64_t seed, fk::DType dtype)
    : head_(std::move(head)), ndim_(ndim), width_(width), n_stages_(n_stages), dtype_(dtype) {
  FK_CHECK(head_ && head_->n_in() == 1, "nefi::DeepDecoderField", "one single-channel head",
           head_ ? fk::to_text(head_->n_in()) + " channels" : "none");
  FK_CHECK(width >= 1 && n_stages >= 1 && (ndim == 2 || ndim == 3), "nefi::DeepDecoderField",
           "width >= 1, n_stages >= 1 and 2 or 3 dimensions",
           fk::to_text(width) + ", " + fk::to_text(n_stages) + ", " + fk::to_text(ndim));
  primary_ = head_->name();
  for (int64_t k = 0; k < n_stages; ++k) {
    const std::string id = std::to_string(k);
    for (const char* what : {"w", "scale", "shift"}) {
      std::string name = id;  // "<what><k>"; built in place (GCC 12 -Wrestrict)
      name.insert(0, what);
      params_.add(name, what[0] == 'w' ? fk::Dims{width, width} : fk::Dims{width});
    }
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
  fk::Dims in_shape = fk::Dims::filled(ndim_ + 1, kInputSize);
  in_shape[0] = width_;
  std::vector<double> z(in_shape.numel());
  for (double& v : z) v = uniform(rng);
  input_ = fk::from_vector(z, in_shape).to(dtype_).to(params_.flat().device());
  const double he = std::sqrt(2.0 / static_cast<double>(width_));
  for (int i = 0; i < params_.size(); ++i) {
    std::vector<double> w(params_.shape(i).numel());
    const bool out = i == params_.size() - 1;
    if (!out && i % 3 == 1) {
      std::fill(w.begin(), w.end(), 1.0);  // scale
    } else if (!out && i % 3 == 2) {
      std::fill(w.begin(), w.end(), 0.0);  // shift
    } else {
      // The output starts small: the image starts near the head's initial value.
      const double sd = out ? 0.1 / std::sqrt(static_cast<double>(width_)) : he;
      for (double& v : w) v = sd * normal(rng);
    }
    params_.raw(i).copy_(fk::from_vector(w, params_.shape(i)).to(dtype_));
  }
  params_.flat().bump_version();
}

FieldMap DeepDecoderField::forward(const Domain& domain, double progress) {
  FK_CHECK(domain.ndim() == ndim_, "nefi::DeepDecoderField",
           "a " + fk::to_text(ndim_) + "-D domain", domain.shape().str());
  const fk::Tensor raw = deep_decoder_render(input_, params_.views(), domain.shape(), &resize_) +
                         head_->init_bias()[0];
  return apply_heads({head_}, raw, domain.shape(), progress);
}

void DeepDecoderField::to(fk::Device d) {
  fk::check_usable(d, "nefi::DeepDecoderField::to");
  params_.to(d);
  input_ = input_.to(d);
  resize_.clear();
}

bool DeepDecoderField::retarget(double) {
  return params_.flat().device().is_cuda() && !heads_read_progress({head_});
}

void declare_deep_decoder_keys(Params& p, int64_t width, int64_t stages, double lr) {
  p.declare("dd_width", width, "deep decoder channels");
  p.declare("dd_stages", stages, "deep decoder stages");
  p.declare("dd_lr", lr, "deep decoder learning rate");
}

void check_deep_decoder_keys(const Params& p) {
  const int64_t width = p.i("dd_width"), stages = p.i("dd_stages");
  FK_CHECK(width >= 1 && width <= 1024, "config key 'dd_width'", "a width in [1, 1024]",
           fk::to_text(width));
  FK_CHECK(stages >= 1 && stages <= 8, "config key 'dd_stages'", "a count in [1, 8]",
           fk::to_text(stages));
}

std::shared_ptr<Field> deep_decoder_field(const Params& p, HeadPtr head, int ndim, uint64_t seed) {
  check_deep_decoder_keys(p);
  return std::make_shared<DeepDecoderField>(std::move(head), ndim, p.i("dd_width"),
                                            p.i("dd_stages"), seed);
}

}  // namespace nefi
