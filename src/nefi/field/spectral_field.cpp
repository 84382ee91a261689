#include "nefi/field/spectral_field.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "fk/autograd.h"
#include "fk/device.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/fft.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "nefi::SpectralField";

// Each mode's index per axis, C order over `modes`.
std::vector<int64_t> mode_index(int64_t flat, const fk::Dims& modes) {
  std::vector<int64_t> k(modes.size());
  for (int a = modes.size() - 1; a >= 0; --a) {
    k[a] = flat % modes[a];
    flat /= modes[a];
  }
  return k;
}

}  // namespace

std::vector<double> spectral_gains(const fk::Dims& modes, const std::vector<double>& extent,
                                   double smoothness) {
  FK_CHECK(static_cast<int>(extent.size()) == modes.size(), "nefi::spectral_gains",
           "one extent per axis (" + fk::to_text(modes.size()) + ")", fk::to_text(extent.size()));
  const double longest = *std::max_element(extent.begin(), extent.end());
  std::vector<double> g(modes.numel());
  double energy = 0;  // sum of g^2 nu before the normalisation
  for (int64_t f = 0; f < modes.numel(); ++f) {
    const std::vector<int64_t> k = mode_index(f, modes);
    double kappa2 = 0, nu = 1;
    for (int a = 0; a < modes.size(); ++a) {
      const double kappa = static_cast<double>(k[a]) * longest / extent[a];
      kappa2 += kappa * kappa;
      if (k[a] > 0) nu *= 0.5;
    }
    g[f] = std::pow(1 + kappa2, -0.5 * smoothness);
    energy += g[f] * g[f] * nu;
  }
  const double c = 1 / std::sqrt(energy);
  for (double& v : g) v *= c;
  return g;
}

SpectralField::SpectralField(const Domain& domain, std::vector<HeadPtr> heads, SpectralConfig cfg)
    : heads_(std::move(heads)), cfg_(cfg) {
  FK_CHECK(!heads_.empty(), kWhere, "at least one head", "none");
  FK_CHECK(cfg_.modes >= 0, kWhere, "modes >= 0 (0: one per cell)", fk::to_text(cfg_.modes));
  FK_CHECK(cfg_.smoothness >= 0 && cfg_.smoothness <= 8, kWhere, "a smoothness in [0, 8]",
           fmt::format("{:g}", cfg_.smoothness));
  for (const HeadPtr& h : heads_) n_out_ += h->n_in();
  primary_ = heads_.front()->name();
  build(domain);
  reset_parameters(0);
}

void SpectralField::build(const Domain& domain) {
  shape_ = domain.shape();
  modes_ = shape_;
  if (cfg_.modes > 0)
    for (int a = 0; a < shape_.size(); ++a) modes_[a] = std::min<int64_t>(cfg_.modes, shape_[a]);
  gains_ = spectral_gains(modes_, domain.extent(), cfg_.smoothness);
  fk::Dims gs = modes_;
  gs.insert(0, 1);
  // DCT-III weighs every mode but the first along an axis by 2.
  std::vector<double> halved = gains_;
  for (int64_t f = 0; f < modes_.numel(); ++f)
    for (int64_t k : mode_index(f, modes_))
      if (k > 0) halved[f] *= 0.5;
  dct_gains_ = fk::from_vector(halved, gs).to(fk::DType::F32).to(device_);
  fk::Dims ps = modes_;
  ps.insert(0, n_out_);
  params_.clear();
  params_.add("coefficients", ps);
  params_.allocate(fk::DType::F32);
  params_.to(device_);
}

void SpectralField::to(fk::Device d) {
  fk::check_usable(d, "nefi::SpectralField::to");
  params_.to(d);
  dct_gains_ = dct_gains_.to(d);
  device_ = d;
}

bool SpectralField::retarget(double) {
  return device_.is_cuda() && !heads_read_progress(heads_);
}

void SpectralField::reset_parameters(uint64_t) {
  fk::autograd::NoGradGuard ng;
  const std::vector<double> bias = output_bias(heads_);
  std::vector<double> theta(params_.numel(), 0.0);
  const int64_t per = modes_.numel();
  for (int c = 0; c < n_out_; ++c) theta[c * per] = bias[c] / gains_[0];
  params_.raw(0).copy_(fk::from_vector(theta, params_.shape(0)).to(fk::DType::F32).to(device_));
  params_.flat().bump_version();
}

void SpectralField::on_stage_start(const Domain& domain) {
  if (domain.shape() == shape_) return;
  FK_CHECK(domain.ndim() == shape_.size(), kWhere, fk::to_text(shape_.size()) + "-D grids",
           domain.str());
  const fk::Dims old_modes = modes_;
  const std::vector<double> old_gains = gains_;
  const std::vector<double> old = params_.raw(0).to_vector<double>();
  build(domain);
  // Each shared mode keeps its amplitude g theta; the others start at 0.
  std::vector<double> theta(params_.numel(), 0.0);
  const int64_t per = modes_.numel(), old_per = old_modes.numel();
  for (int64_t f = 0; f < per; ++f) {
    const std::vector<int64_t> k = mode_index(f, modes_);
    int64_t of = 0;
    bool shared = true;
    for (int a = 0; a < modes_.size(); ++a) {
      shared = shared && k[a] < old_modes[a];
      of = of * old_modes[a] + k[a];
    }
    if (!shared) continue;
    for (int c = 0; c < n_out_; ++c)
      theta[c * per + f] = old[c * old_per + of] * old_gains[of] / gains_[f];
  }
  fk::autograd::NoGradGuard ng;
  params_.raw(0).copy_(fk::from_vector(theta, params_.shape(0)).to(fk::DType::F32).to(device_));
}

FieldMap SpectralField::forward(const Domain& domain, double progress) {
  FK_CHECK(domain.shape() == shape_, kWhere, "the grid shape " + shape_.str(),
           domain.shape().str());
  const fk::Tensor theta = params_.views()[0];  // (C, m...)
  std::vector<int64_t> sizes, dims;
  for (int a = 0; a < shape_.size(); ++a) {
    sizes.push_back(shape_[a]);  // the modes padded with zeros to the cells
    dims.push_back(a + 1);
  }
  const fk::Tensor raw = fk::dct(fk::mul(theta, dct_gains_), fk::DctType::III, sizes, dims);
  return apply_heads(heads_, raw.reshape({n_out_, shape_.numel()}).t(), shape_, progress);
}

}  // namespace nefi
