#include "nefi/field/layered_field.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary/binary.h"
#include "fk/ops/linalg.h"
#include "fk/ops/reduce/sum.h"
#include "fk/ops/unary.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "nefi::LayeredField";
// The interfaces stay where they are until progress reaches this.
constexpr double kHoldInterfaces = 0.1;

// The lateral modes' degree pairs (k_0, k_1; k_1 = 0 with one lateral
// axis), by degree max(k) and then in order.
std::vector<std::pair<int, int>> mode_indices(int lateral, int degree) {
  std::vector<std::pair<int, int>> k;
  for (int l = 1; l <= degree && lateral > 0; ++l) {
    if (lateral == 1) {
      k.emplace_back(l, 0);
      continue;
    }
    for (int a = 0; a <= l; ++a)
      for (int b = 0; b <= l; ++b)
        if (std::max(a, b) == l) k.emplace_back(a, b);
  }
  return k;
}

double gate(int l, int degree, double progress) {
  const double t = std::clamp(progress * degree - (l - 1), 0.0, 1.0);
  return 0.5 * (1 - std::cos(std::numbers::pi * t));
}

}  // namespace

int layered_mode_count(int lateral, int degree) {
  return static_cast<int>(mode_indices(lateral, degree).size());
}

fk::Tensor layered_modes(const fk::Dims& lateral_shape, int degree, double progress,
                         fk::DType dtype) {
  const int lateral = lateral_shape.size();
  FK_CHECK(lateral <= 2 && degree >= 0 && degree <= kLayeredMaxDegree, kWhere,
           "0 to 2 lateral axes and a mode degree in [0, " + fk::to_text(kLayeredMaxDegree) + "]",
           fk::to_text(lateral) + " axes, degree " + fk::to_text(degree));
  const auto k = mode_indices(lateral, degree);
  const int64_t cells = lateral_shape.numel(), M = static_cast<int64_t>(k.size());
  const int64_t n0 = lateral > 0 ? lateral_shape[0] : 1, n1 = lateral > 1 ? lateral_shape[1] : 1;
  // sqrt(2) cos(pi k (x + 1) / 2) at the cell centres x = (2 i + 1) / n - 1,
  // per axis and degree (degree 0: 1).
  auto table = [&](int64_t n) {
    std::vector<double> t(static_cast<size_t>((degree + 1) * n), 1.0);
    for (int kk = 1; kk <= degree; ++kk)
      for (int64_t i = 0; i < n; ++i)
        t[kk * n + i] =
            std::numbers::sqrt2 * std::cos(std::numbers::pi * kk * (static_cast<double>(i) + 0.5) /
                                           static_cast<double>(n));
    return t;
  };
  const std::vector<double> w0 = table(n0), w1 = table(n1);
  std::vector<double> g(static_cast<size_t>(M));
  for (int64_t m = 0; m < M; ++m) g[m] = gate(std::max(k[m].first, k[m].second), degree, progress);
  std::vector<double> phi(static_cast<size_t>(cells * M));
  for (int64_t i = 0; i < n0; ++i)
    for (int64_t j = 0; j < n1; ++j)
      for (int64_t m = 0; m < M; ++m)
        phi[(i * n1 + j) * M + m] = g[m] * w0[k[m].first * n0 + i] * w1[k[m].second * n1 + j];
  return fk::from_vector(phi, {cells, M}).to(dtype);
}

fk::Tensor layered_values(const fk::Tensor& z, const fk::Tensor& phi, const fk::Tensor& base,
                          const fk::Tensor& jumps, const fk::Tensor& depths,
                          const fk::Tensor& modes, double eps) {
  FK_CHECK(
      z.dim() == 1 && phi.dim() == 2 && base.dim() == 1 && jumps.dim() == 2 &&
          depths.shape() == jumps.shape() && jumps.size(0) == base.size(0) && jumps.size(1) >= 1,
      "nefi::layered_values", "z (n), phi (cells, M), base (C), jumps and depths (C, K - 1 >= 1)",
      z.shape().str() + ", " + phi.shape().str() + ", " + base.shape().str() + ", " +
          jumps.shape().str() + ", " + depths.shape().str());
  FK_CHECK(eps > 0 && std::isfinite(eps), "nefi::layered_values", "an interface width eps > 0",
           fk::to_text(eps));
  const int64_t C = base.size(0), I = jumps.size(1), M = phi.size(1), n = z.size(0);
  fk::Tensor Z = depths.unsqueeze(1);  // (C, 1 or cells, I)
  if (M > 0) {
    FK_CHECK(modes.defined() && modes.shape() == fk::Dims({C, I, M}), "nefi::layered_values",
             "modes (C, K - 1, M) = " + fk::Dims({C, I, M}).str(),
             modes.defined() ? modes.shape().str() : "none");
    const fk::Tensor bend =
        fk::matmul(phi, modes.reshape({C * I, M}).t()).reshape({phi.size(0), C, I});
    Z = fk::add(Z, bend.permute({1, 0, 2}));
  } else {  // flat interfaces, broadcast over the lateral cells
    Z = fk::add(Z, fk::zeros({1, phi.size(0), 1}, {Z.dtype(), Z.device()}));
  }
  const fk::Tensor arg =
      fk::mul(fk::sub(z.reshape({1, n, 1, 1}), Z.unsqueeze(1)), 1.0 / eps);  // (C, n, cells, I)
  const fk::Tensor steps = fk::sum(fk::mul(fk::sigmoid(arg), jumps.reshape({C, 1, 1, I})), {3});
  return fk::add(steps, base.reshape({C, 1, 1})).permute({1, 2, 0});  // (n, cells, C)
}

void check_layered_config(const LayeredConfig& cfg, const fk::Dims& shape, const char* who) {
  FK_CHECK(shape.size() >= 1 && shape.size() <= 3, who, "a 1-, 2- or 3-D domain", shape.str());
  FK_CHECK(cfg.layers >= 2 && cfg.layers <= 64, who, "a layer count in [2, 64]",
           fk::to_text(cfg.layers));
  FK_CHECK(cfg.axis >= 0 && cfg.axis < shape.size(), who,
           "a layer axis in [0, " + fk::to_text(shape.size()) + ")", fk::to_text(cfg.axis));
  FK_CHECK(cfg.modes >= 0 && cfg.modes <= kLayeredMaxDegree, who,
           "an interface mode degree in [0, " + fk::to_text(kLayeredMaxDegree) + "]",
           fk::to_text(cfg.modes));
  FK_CHECK(cfg.eps_start > 0 && cfg.eps_end > 0 && std::isfinite(cfg.eps_start) &&
               std::isfinite(cfg.eps_end),
           who, "interface widths eps > 0",
           fk::to_text(cfg.eps_start) + ", " + fk::to_text(cfg.eps_end));
}

int add_layered_interfaces(FlatParams& params, int64_t channels, const LayeredConfig& cfg,
                           int ndim) {
  const int64_t I = cfg.layers - 1, modes = layered_mode_count(ndim - 1, cfg.modes);
  const int first = params.add("jumps", {channels, I});
  params.add("depths", {channels, I});
  if (modes > 0) params.add("modes", {channels, I, modes});
  return first;
}

void reset_layered_interfaces(FlatParams& params, int first, const LayeredConfig& cfg) {
  const int64_t C = params.shape(first)[0];
  params.raw(first).copy_(fk::zeros(params.shape(first), {fk::DType::F32}));
  std::vector<double> d;
  for (int64_t c = 0; c < C; ++c)
    for (int i = 1; i < cfg.layers; ++i) d.push_back(-1.0 + 2.0 * i / cfg.layers);
  params.raw(first + 1).copy_(fk::from_vector(d, params.shape(first + 1)).to(fk::DType::F32));
  if (first + 2 < params.size() && params.name(first + 2) == "modes")
    params.raw(first + 2).copy_(fk::zeros(params.shape(first + 2), {fk::DType::F32}));
}

LayeredField::LayeredField(const fk::Dims& shape, std::vector<HeadPtr> heads, LayeredConfig cfg)
    : heads_(std::move(heads)), cfg_(cfg) {
  FK_CHECK(!heads_.empty(), kWhere, "at least one head", "none");
  check_layered_config(cfg_, shape, kWhere);
  ndim_ = shape.size();
  for (const HeadPtr& h : heads_) n_out_ += h->n_in();
  primary_ = heads_.front()->name();
  params_.add("base", {n_out_});
  add_layered_interfaces(params_, n_out_, cfg_, ndim_);
  params_.allocate(fk::DType::F32);
  reset_parameters(0);
}

double layered_eps(const LayeredConfig& cfg, double progress) {
  return cfg.eps_start * std::pow(cfg.eps_end / cfg.eps_start, std::clamp(progress, 0.0, 1.0));
}

double LayeredField::eps(double progress) const {
  return layered_eps(cfg_, progress);
}

void LayeredField::reset_parameters(uint64_t seed) {
  (void)seed;  // the start is the same for every seed: flat, even, no jumps
  fk::autograd::NoGradGuard ng;
  params_.raw(0).copy_(fk::from_vector(output_bias(heads_), fk::Dims{n_out_}).to(fk::DType::F32));
  reset_layered_interfaces(params_, 1, cfg_);
  params_.flat().bump_version();
}

fk::Tensor layered_grid(const fk::Dims& shape, const LayeredConfig& cfg, double progress,
                        std::vector<fk::Tensor> params, LayeredRows* rows) {
  const int nd = shape.size(), a = cfg.axis;
  FK_CHECK(a >= 0 && a < nd && (params.size() == 3 || params.size() == 4), "nefi::layered_grid",
           "a layer axis of the grid and (base, jumps, depths[, modes])",
           "axis " + fk::to_text(a) + " of " + shape.str() + " and " + fk::to_text(params.size()) +
               " parameters");
  const int64_t n = shape[a], C = params[0].size(0);
  std::vector<int64_t> lateral;
  for (int b = 0; b < nd; ++b)
    if (b != a) lateral.push_back(shape[b]);
  const fk::Dims lateral_shape(lateral);
  const fk::Device device = params[0].device();
  FK_CHECK(device.is_cpu() || rows != nullptr, "nefi::layered_grid",
           "a cache for the rows it uploads to " + device.str(), "none");
  LayeredRows made;
  LayeredRows& r = device.is_cpu() ? made : *rows;
  if (!r.z.defined() || !(r.shape == shape) || r.progress != progress || r.z.device() != device) {
    std::vector<double> z(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) z[i] = (2.0 * static_cast<double>(i) + 1.0) / n - 1.0;
    r.z = fk::from_vector(z, {n}).to(fk::DType::F32).to(device);
    r.phi = layered_modes(lateral_shape, cfg.modes, progress, fk::DType::F32).to(device);
    r.shape = shape;
    r.progress = progress;
  }
  if (progress < kHoldInterfaces)  // the values first: see the header
    for (size_t i = 2; i < params.size(); ++i) params[i] = params[i].detach();
  const fk::Tensor raw = layered_values(r.z, r.phi, params[0], params[1], params[2],
                                        params.size() > 3 ? params[3] : fk::Tensor(),
                                        layered_eps(cfg, progress));  // (n, lateral cells, C)
  // Back to the grid's axis order, channels last.
  std::vector<int64_t> split = {n};
  split.insert(split.end(), lateral.begin(), lateral.end());
  split.push_back(C);
  std::vector<int64_t> order;
  for (int t = 0, l = 0; t < nd; ++t) order.push_back(t == a ? 0 : 1 + l++);
  order.push_back(nd);
  return raw.contiguous()
      .reshape(fk::Dims(split))
      .permute(fk::Dims(order))
      .contiguous()
      .reshape({shape.numel(), C});
}

FieldMap LayeredField::forward(const Domain& domain, double progress) {
  FK_CHECK(domain.ndim() == ndim_, kWhere, fk::to_text(ndim_) + "-D domain", domain.str());
  return apply_heads(heads_, layered_grid(domain.shape(), cfg_, progress, params_.views(), &rows_),
                     domain.shape(), progress);
}

void LayeredField::to(fk::Device d) {
  fk::check_usable(d, "nefi::LayeredField::to");
  params_.to(d);
  rows_ = LayeredRows();
}

}  // namespace nefi
