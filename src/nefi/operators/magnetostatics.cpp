#include "nefi/operators/magnetostatics.h"

#include <cmath>
#include <complex>
#include <cstring>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/profile.h"
#include "nefi/operators/fft_convolution.h"

namespace nefi {
namespace {

using c128 = std::complex<double>;

// Angular wavenumber of FFT bin i of m at spacing h, and the same with the
// Nyquist bin zeroed (for the odd factors k_a / k).
double wavenumber(int64_t i, int64_t m, double h) {
  return 2 * std::numbers::pi * static_cast<double>(i <= (m - 1) / 2 ? i : i - m) / (m * h);
}
double odd_wavenumber(int64_t i, int64_t m, double h) {
  return m % 2 == 0 && i == m / 2 ? 0.0 : wavenumber(i, m, h);
}

// (1 - e^{-x}) / x, continuous at 0.
double one_minus_exp_over(double x) {
  return x < 1e-8 ? 1.0 - 0.5 * x : -std::expm1(-x) / x;
}

struct MagnetostaticsBackward : fk::autograd::Node {
  fk::Tensor H;  // a per-resolution constant, not a saved activation
  std::vector<int64_t> L;
  bool two_channels = false;
  const char* name() const override { return "MagnetostaticsBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    fk::Tensor g = grads[0].contiguous();
    // The channel sum's adjoint copies the cotangent to both channels.
    if (two_channels) g = fk::stack({g, g}, g.dim() - 2).contiguous();
    const std::vector<int64_t> zeros{0, 0};
    return {spectral_filter(g, H, L, zeros, zeros, /*conjugate=*/true).contiguous()};
  }
};

}  // namespace

MagneticSource magnetic_source_from(const std::string& name, const std::string& key) {
  if (name == "stream") return MagneticSource::kStream;
  if (name == "current") return MagneticSource::kCurrent;
  FK_CHECK(name == "film", "config key '" + key + "'", "stream, current or film", name);
  return MagneticSource::kFilm;
}

FieldComponent field_component_from(const std::string& name, const std::string& key) {
  if (name == "x") return FieldComponent::kX;
  if (name == "y") return FieldComponent::kY;
  if (name == "z") return FieldComponent::kZ;
  FK_CHECK(name == "nv", "config key '" + key + "'", "z, x, y or nv", name);
  return FieldComponent::kNV;
}

fk::Tensor magnetostatic_transfer(int64_t m0, int64_t m1, const std::vector<double>& h,
                                  const MagnetostaticsOptions& o) {
  const int64_t mh = m1 / 2 + 1, plane = m0 * mh;
  const bool current = o.source == MagneticSource::kCurrent;
  std::vector<c128> H((current ? 2 : 1) * plane);
  std::array<double, 3> n = o.nv_axis;
  if (o.component != FieldComponent::kNV) n = {0, 0, 0};
  const double norm = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  if (norm > 0)
    for (double& v : n) v /= norm;
  const c128 I(0, 1);
  for (int64_t i = 0; i < m0; ++i)
    for (int64_t j = 0; j < mh; ++j) {
      const double k0 = wavenumber(i, m0, h[0]), k1 = wavenumber(j, m1, h[1]);
      const double k = std::hypot(k0, k1);
      // Odd factors k_a / k (zero at k = 0 and on the Nyquist lines).
      const double u0 = k > 0 ? odd_wavenumber(i, m0, h[0]) / k : 0.0;
      const double u1 = k > 0 ? odd_wavenumber(j, m1, h[1]) / k : 0.0;
      const double decay = std::exp(-k * o.standoff) * one_minus_exp_over(k * o.layer_thickness);
      c128 project = 1.0;  // B_z -> the read component
      if (o.component == FieldComponent::kX) project = -I * u0;
      if (o.component == FieldComponent::kY) project = -I * u1;
      if (o.component == FieldComponent::kNV) project = n[2] - I * (n[0] * u0 + n[1] * u1);
      const double half_mu0 = 0.5 * o.mu0;
      const int64_t at = i * mh + j;
      switch (o.source) {
        case MagneticSource::kStream:
          H[at] = half_mu0 * k * decay * project;
          break;
        case MagneticSource::kFilm:
          H[at] = half_mu0 * -std::expm1(-k * o.film_thickness) * decay * project;
          break;
        case MagneticSource::kCurrent:  // i (k0 K_1 - k1 K_0) / k
          H[at] = -I * u1 * half_mu0 * decay * project;
          H[plane + at] = I * u0 * half_mu0 * decay * project;
          break;
      }
    }
  return current ? fk::from_vector(H, {2, m0, mh}) : fk::from_vector(H, {m0, mh});
}

MagnetostaticsOperator::MagnetostaticsOperator(Domain domain, MagnetostaticsOptions options)
    : domain_(std::move(domain)), options_(options) {
  const char* who = "nefi::MagnetostaticsOperator";
  FK_CHECK(domain_.ndim() == 2, who, "a 2-D domain", domain_.str());
  FK_CHECK(options_.standoff > 0, who, "a standoff z0 > 0", fk::to_text(options_.standoff));
  FK_CHECK(options_.layer_thickness >= 0, who, "a sensor layer thickness >= 0",
           fk::to_text(options_.layer_thickness));
  FK_CHECK(options_.source != MagneticSource::kFilm || options_.film_thickness > 0, who,
           "a film thickness > 0", fk::to_text(options_.film_thickness));
  const auto& a = options_.nv_axis;
  FK_CHECK(options_.component != FieldComponent::kNV || a[0] * a[0] + a[1] * a[1] + a[2] * a[2] > 0,
           who, "a non-zero NV axis", "(0, 0, 0)");
  FK_CHECK(options_.mu0 > 0, who, "mu0 > 0", fk::to_text(options_.mu0));
  FK_CHECK(options_.pad_factor >= 1 && options_.pad_factor <= 8, who, "pad_factor in [1, 8]",
           fk::to_text(options_.pad_factor));
  prepare();
}

void MagnetostaticsOperator::prepare() {
  fft_shape_ = {domain_.shape()[0] * options_.pad_factor, domain_.shape()[1] * options_.pad_factor};
  H128_ = magnetostatic_transfer(fft_shape_[0], fft_shape_[1], domain_.spacing(), options_);
  H64_ = H128_.to(fk::DType::C64);
  device_transfers_ = std::make_shared<DeviceTransfers>();
}

fk::Tensor MagnetostaticsOperator::transfer_on(fk::DType real_dtype, fk::Device device) const {
  const fk::Tensor& host = real_dtype == fk::DType::F32 ? H64_ : H128_;
  if (device.is_cpu()) return host;
  std::lock_guard<std::mutex> lock(device_transfers_->mu);
  fk::Tensor& on = device_transfers_->by_key[device.str() + " " + fk::name(real_dtype)];
  if (!on.defined()) on = host.to(device);
  return on;
}

void MagnetostaticsOperator::prepare_tables(fk::Device device, fk::DType dtype) const {
  if (device.is_cuda()) transfer_on(dtype, device);
}

std::shared_ptr<Operator> MagnetostaticsOperator::at_resolution(const fk::Dims& shape) const {
  auto op = std::make_shared<MagnetostaticsOperator>(*this);
  op->domain_ = domain_.at(shape);
  op->prepare();
  return op;
}

fk::Dims MagnetostaticsOperator::output_shape(const fk::Dims& shape) const {
  if (options_.source != MagneticSource::kCurrent) return shape;
  std::vector<int64_t> out(shape.begin(), shape.end());
  FK_CHECK(out.size() >= 3 && out[out.size() - 3] == 2, "nefi::MagnetostaticsOperator",
           "a current of shape (..., 2, n0, n1)", shape.str());
  out.erase(out.end() - 3);
  return fk::Dims(out);
}

fk::Tensor MagnetostaticsOperator::apply(const fk::Tensor& x) const {
  const int64_t n0 = domain_.shape()[0], n1 = domain_.shape()[1];
  const bool current = options_.source == MagneticSource::kCurrent;
  const std::string want =
      current ? "(..., 2, " + domain_.shape().str() + ")" : "(..., " + domain_.shape().str() + ")";
  const int d = x.dim();
  FK_CHECK(d >= (current ? 3 : 2) && x.size(d - 2) == n0 && x.size(d - 1) == n1 &&
               (!current || x.size(d - 3) == 2),
           "nefi::MagnetostaticsOperator", "a source of shape " + want, x.shape().str());
  FK_CHECK(x.dtype() == fk::DType::F32 || x.dtype() == fk::DType::F64,
           "nefi::MagnetostaticsOperator", "a real f32/f64 source", fk::name(x.dtype()));
  const std::vector<int64_t>& L = fft_shape_;
  const std::vector<int64_t> zeros{0, 0};
  const fk::Tensor H = transfer_on(x.dtype(), x.device());
  fk::Tensor y = spectral_filter(x.detach(), H, L, zeros, zeros, false);
  if (current) {
    fk::profile::OpScope scope("magnetostatics_channel_sum");
    fk::autograd::NoGradGuard ng;
    y = (y.select(d - 3, 0) + y.select(d - 3, 1)).contiguous();
  }
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<MagnetostaticsBackward>();
    node->H = H;
    node->L = L;
    node->two_channels = current;
    fk::autograd::record(node, {x}, y);
  }
  return y;
}

}  // namespace nefi
