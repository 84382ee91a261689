#include "nefi/field/neural_field.h"

#include <cmath>

#include "fk/amp.h"
#include "fk/autograd.h"
#include "fk/device.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/ops/linalg.h"
#include "fk/ops/unary.h"
#include "fk/random.h"
#include "nefi/field/dense.h"
#include "nefi/field/dense_device.h"
#include "nefi/field/fast_tanh.h"
#include "nefi/field/fused_mlp_device.h"

namespace nefi {
namespace {

FieldMap heads_on(const std::vector<HeadPtr>& heads, const fk::Tensor& raw, const fk::Dims& shape,
                  bool rows, double progress) {
  FieldMap out;
  int c = 0;
  for (const HeadPtr& h : heads) {
    std::vector<fk::Tensor> cols;
    for (int j = 0; j < h->n_in(); ++j, ++c)
      cols.push_back(raw.size(1) == 1 ? raw.reshape(shape) : raw.select(1, c).reshape(shape));
    out[h->name()] =
        rows ? h->transform_rows(cols, out, progress) : h->transform(cols, out, progress);
  }
  return out;
}
}  // namespace

FieldMap apply_heads(const std::vector<HeadPtr>& heads, const fk::Tensor& raw,
                     const fk::Dims& shape, double progress) {
  return heads_on(heads, raw, shape, false, progress);
}

FieldMap apply_heads_rows(const std::vector<HeadPtr>& heads, const fk::Tensor& raw,
                          const fk::Dims& batch_shape, double progress) {
  return heads_on(heads, raw, batch_shape, true, progress);
}

NeuralField::NeuralField(int ndim, std::vector<HeadPtr> heads, NeuralFieldConfig cfg, uint64_t seed)
    : ndim_(ndim),
      heads_(std::move(heads)),
      cfg_(std::move(cfg)),
      enc_(ndim, cfg_.n_octaves, cfg_.include_input, cfg_.annealed, cfg_.periodic_axes) {
  FK_CHECK(!heads_.empty(), "nefi::NeuralField", "at least one head", "none");
  FK_CHECK(cfg_.hidden > 0 && cfg_.depth > 0, "nefi::NeuralField", "hidden > 0 and depth > 0",
           fk::to_text(cfg_.hidden) + ", " + fk::to_text(cfg_.depth));
  const std::string& a = cfg_.activation;
  FK_CHECK(
      a == "tanh" || a == "relu" || a == "gelu" || a == "silu" || a == "softplus" || a == "sine",
      "nefi::NeuralField", "activation tanh, relu, gelu, silu, softplus or sine", a);
  FK_CHECK(!cfg_.autocast || *cfg_.autocast == fk::DType::BF16 || *cfg_.autocast == fk::DType::F16,
           "nefi::NeuralField", "autocast bf16 or f16", fk::name(*cfg_.autocast));
  for (const HeadPtr& h : heads_) n_out_ += h->n_in();
  primary_ = heads_.front()->name();
  int in = enc_.out_dim();
  for (int i = 0; i < cfg_.depth; ++i) {
    const int fan_in = (i == cfg_.skip_at && i > 0) ? cfg_.hidden + enc_.out_dim() : in;
    params_.add("layer" + std::to_string(i) + ".weight", {cfg_.hidden, fan_in});
    params_.add("layer" + std::to_string(i) + ".bias", {cfg_.hidden});
    in = cfg_.hidden;
  }
  params_.add("out.weight", {n_out_, cfg_.hidden});
  params_.add("out.bias", {n_out_});
  params_.allocate(fk::DType::F32);
  reset_parameters(seed);
}

void NeuralField::reset_parameters(uint64_t seed) {
  fk::Generator gen(seed);
  fk::autograd::NoGradGuard ng;
  // The reference's rule: He (Kaiming-uniform, ReLU gain) for relu / gelu /
  // silu, SIREN for sine, Xavier-uniform otherwise (tanh, softplus); hidden
  // biases start at zero.
  const std::string& a = cfg_.activation;
  const bool sine = a == "sine";
  const bool xavier = !sine && a != "relu" && a != "gelu" && a != "silu";
  for (int i = 0; i <= cfg_.depth; ++i) {
    fk::Tensor w = params_.raw(2 * i), b = params_.raw(2 * i + 1);
    const double fan_out = static_cast<double>(w.size(0)), fan_in = static_cast<double>(w.size(1));
    double bound;
    if (sine && i < cfg_.depth) {
      bound = i == 0 ? 1.0 / fan_in : std::sqrt(6.0 / fan_in) / kSirenW0;
    } else if (xavier || i == cfg_.depth) {
      bound = std::sqrt(6.0 / (fan_in + fan_out));
    } else {
      bound = std::sqrt(6.0 / fan_in);
    }
    if (i == cfg_.depth) bound *= cfg_.out_init_scale;
    w.copy_(fk::uniform(w.shape(), -bound, bound, {fk::DType::F32}, &gen));
    if (i == cfg_.depth) {
      b.copy_(fk::from_vector(output_bias(heads_), fk::Dims{n_out_}));
    } else {
      fill_(b, 0.0);
    }
  }
  params_.flat().bump_version();
}

fk::Tensor NeuralField::activate(const fk::Tensor& x) const {
  const std::string& a = cfg_.activation;
  // Half-precision trunks (autocast) keep fk::tanh; f32 takes the fused path.
  if (a == "tanh") return x.dtype() == fk::DType::F32 ? fast_tanh(x) : fk::tanh(x);
  if (a == "relu") return fk::relu(x);
  if (a == "gelu") return fk::gelu(x);
  if (a == "silu") return fk::silu(x);
  if (a == "softplus") return fk::softplus(x);
  return fk::sin(fk::mul(x, kSirenW0));
}

const fk::Tensor& NeuralField::coords_for(const Domain& domain) {
  if (!coords_.defined() || !(coords_shape_ == domain.shape())) {
    coords_ = domain.coords(fk::DType::F32).reshape({domain.numel(), ndim_});
    coords_shape_ = domain.shape();
  }
  return coords_;
}

fk::Tensor NeuralField::raw(const Domain& domain, double progress) {
  FK_CHECK(domain.ndim() == ndim_, "nefi::NeuralField", fk::to_text(ndim_) + "-D domain",
           domain.str());
  const fk::Tensor x = enc_.forward(coords_for(domain), progress);
  if (!device().is_cpu()) {
    const FusedMlpSpec spec{
        cfg_.hidden, cfg_.depth,   n_out_, cfg_.skip_at, fused_mlp_activation(cfg_.activation),
        kSirenW0,    cfg_.autocast};
    if (use_fused_mlp(spec, x.size(0), x.size(1), device().index))
      return fused_mlp_device(x, params_.flat(), spec);
  }
  const std::vector<fk::Tensor> p = params_.views();
  fk::Tensor h = x;
  if (!device().is_cpu()) {
    h = trunk_on_device(x, p);
  } else if (cfg_.autocast == fk::DType::F16) {
    fk::amp::AutocastGuard ac(fk::DType::F16);
    for (int i = 0; i < cfg_.depth; ++i) {
      if (i == cfg_.skip_at && i > 0) h = fk::cat({h, x}, 1);
      h = activate(fk::linear(h, p[2 * i], p[2 * i + 1]));
    }
  } else {
    const DensePrecision precision =
        cfg_.autocast == fk::DType::BF16 ? DensePrecision::Bf16 : DensePrecision::F32;
    const std::string& a = cfg_.activation;
    const DenseActivation fused = a == "tanh"   ? DenseActivation::Tanh
                                  : a == "relu" ? DenseActivation::Relu
                                                : DenseActivation::None;
    // bf16: the encoding and each layer's output are rounded to bf16 once and
    // handed to the next layer (dense.h); a separate activation drops it.
    const Bf16Activation x16 = precision == DensePrecision::Bf16 ? to_bf16(x) : Bf16Activation{};
    Bf16Activation h16 = x16;
    for (int i = 0; i < cfg_.depth; ++i) {
      if (i == cfg_.skip_at && i > 0) {
        h = fk::cat({h, x}, 1);
        h16 = cat_columns(h16, x16);
      }
      Bf16Activation y16;
      h = dense(h, p[2 * i], p[2 * i + 1], fused, precision, h16,
                precision == DensePrecision::Bf16 ? &y16 : nullptr);  // one op each way
      h16 = std::move(y16);
      if (fused == DenseActivation::None) {
        h = activate(h);
        h16 = {};
      }
    }
  }
  if (h.dtype() != fk::DType::F32) h = h.to(fk::DType::F32);
  return dense(h, p[2 * cfg_.depth], p[2 * cfg_.depth + 1], DenseActivation::None);
}

void NeuralField::to(fk::Device d) {
  fk::check_usable(d, "nefi::NeuralField::to");
  params_.to(d);
  enc_.to(d);
}

bool NeuralField::retarget(double progress) {
  return enc_.retarget(progress) && !heads_read_progress(heads_);
}

// The hidden layers on the parameters' device: tanh, relu and sine fused
// into each layer's epilogue, the other activations as fk device ops.
fk::Tensor NeuralField::trunk_on_device(const fk::Tensor& x,
                                        const std::vector<fk::Tensor>& p) const {
  const DevicePrecision precision = cfg_.autocast == fk::DType::BF16  ? DevicePrecision::Bf16
                                    : cfg_.autocast == fk::DType::F16 ? DevicePrecision::F16
                                                                      : DevicePrecision::F32;
  const std::string& a = cfg_.activation;
  const DeviceActivation fused = a == "tanh"   ? DeviceActivation::Tanh
                                 : a == "relu" ? DeviceActivation::Relu
                                 : a == "sine" ? DeviceActivation::Sine
                                               : DeviceActivation::None;
  fk::Tensor h = x;
  for (int i = 0; i < cfg_.depth; ++i) {
    if (i == cfg_.skip_at && i > 0) h = fk::cat({h, x}, 1);
    h = dense_device(h, p[2 * i], p[2 * i + 1], fused, precision, kSirenW0);
    if (fused == DeviceActivation::None) h = activate(h);
  }
  return h;
}

FieldMap NeuralField::forward(const Domain& domain, double progress) {
  return apply_heads(heads_, raw(domain, progress), domain.shape(), progress);
}

}  // namespace nefi
