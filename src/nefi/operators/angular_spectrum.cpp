#include "nefi/operators/angular_spectrum.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/fft.h"
#include "fk/profile.h"
#include "nefi/operators/angular_spectrum_device.h"

namespace nefi {
namespace {

using c128 = std::complex<double>;

// Source index of padded position p along an axis of length n placed at
// offset `off` in a padded length m: -1 outside (zero padding), else the
// clamped index (edge padding).
int64_t pad_source(int64_t p, int64_t n, int64_t off, bool edge) {
  const int64_t i = p - off;
  if (i >= 0 && i < n) return i;
  if (!edge) return -1;
  return i < 0 ? 0 : n - 1;
}

// FFT over the last two axes of (batch, m0, m1) complex values.
Field2 fft2(const Field2& v, int64_t batch, int64_t m0, int64_t m1, bool inverse) {
  fk::Tensor t = fk::from_vector(v, {batch, m0, m1});
  t = inverse ? fk::ifftn(t, {}, {1, 2}) : fk::fftn(t, {}, {1, 2});
  return t.contiguous().to_vector<c128>();
}

struct HolographyBackward : fk::autograd::Node {
  std::shared_ptr<const HolographyOperator> op;
  fk::Tensor t;  // (batch, n0, n1) c128 transmission
  fk::Tensor u;  // (batch, n_dist, n0, n1) c128 fields at the planes
  fk::Dims in_shape;
  fk::DType dtype;
  const char* name() const override { return "HolographyBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override;
};

}  // namespace

Field2 transfer_function(int64_t m0, int64_t m1, const std::vector<double>& spacing, double dz,
                         const PropagationOptions& o) {
  Field2 H(m0 * m1);
  const double inv_l2 = 1.0 / (o.wavelength * o.wavelength);
  const int64_t m[2] = {m0, m1};
  double limit[2];
  for (int a = 0; a < 2; ++a) {
    const double df = 1.0 / (static_cast<double>(m[a]) * spacing[a]);
    limit[a] = o.band_limit ? 1.0 / (o.wavelength * std::sqrt(std::pow(2 * df * dz, 2) + 1))
                            : std::numeric_limits<double>::infinity();
  }
  for (int64_t i = 0; i < m0; ++i) {
    const double fx = static_cast<double>(i <= (m0 - 1) / 2 ? i : i - m0) / (m0 * spacing[0]);
    for (int64_t j = 0; j < m1; ++j) {
      const double fy = static_cast<double>(j <= (m1 - 1) / 2 ? j : j - m1) / (m1 * spacing[1]);
      const double q = inv_l2 - fx * fx - fy * fy;
      const bool pass = q > 0 && std::abs(fx) <= limit[0] && std::abs(fy) <= limit[1];
      H[i * m1 + j] = pass ? std::polar(1.0, 2 * std::numbers::pi * dz * std::sqrt(q)) : 0.0;
    }
  }
  return H;
}

Field2 propagate(const Field2& u, int64_t batch, int64_t n0, int64_t n1,
                 const std::vector<double>& spacing, double dz, const PropagationOptions& o,
                 bool adjoint) {
  const int64_t m0 = n0 * o.pad_factor, m1 = n1 * o.pad_factor;
  const int64_t off0 = (m0 - n0) / 2, off1 = (m1 - n1) / 2;
  const Field2 H = transfer_function(m0, m1, spacing, dz, o);
  Field2 big(batch * m0 * m1, 0.0);
  // Forward pads (gather); the adjoint places the input in the window only
  // (crop^T), filters with conj(H), then sums the padding back (pad^T).
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t p = 0; p < m0; ++p)
      for (int64_t q = 0; q < m1; ++q) {
        const int64_t i = adjoint ? (p - off0 >= 0 && p - off0 < n0 ? p - off0 : -1)
                                  : pad_source(p, n0, off0, o.edge_pad);
        const int64_t j = adjoint ? (q - off1 >= 0 && q - off1 < n1 ? q - off1 : -1)
                                  : pad_source(q, n1, off1, o.edge_pad);
        if (i >= 0 && j >= 0) big[(b * m0 + p) * m1 + q] = u[(b * n0 + i) * n1 + j];
      }
  big = fft2(big, batch, m0, m1, false);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t k = 0; k < m0 * m1; ++k) big[b * m0 * m1 + k] *= adjoint ? std::conj(H[k]) : H[k];
  big = fft2(big, batch, m0, m1, true);
  Field2 out(batch * n0 * n1, 0.0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t p = 0; p < m0; ++p)
      for (int64_t q = 0; q < m1; ++q) {
        const int64_t i = adjoint ? pad_source(p, n0, off0, o.edge_pad)
                                  : (p - off0 >= 0 && p - off0 < n0 ? p - off0 : -1);
        const int64_t j = adjoint ? pad_source(q, n1, off1, o.edge_pad)
                                  : (q - off1 >= 0 && q - off1 < n1 ? q - off1 : -1);
        if (i >= 0 && j >= 0) out[(b * n0 + i) * n1 + j] += big[(b * m0 + p) * m1 + q];
      }
  return out;
}

fk::Tensor propagate(const fk::Tensor& u, const std::vector<double>& spacing, double dz,
                     const PropagationOptions& o, bool adjoint) {
  FK_CHECK(u.dim() == 3 && u.dtype() == fk::DType::C128, "nefi::propagate",
           "fields (batch, n0, n1) c128", std::string(fk::name(u.dtype())) + " " + u.shape().str());
  const int64_t batch = u.size(0), n0 = u.size(1), n1 = u.size(2);
  if (u.device().is_cpu())
    return fk::from_vector(
        propagate(u.contiguous().to_vector<c128>(), batch, n0, n1, spacing, dz, o, adjoint),
        u.shape());
  const fk::Tensor H =
      fk::from_vector(transfer_function(n0 * o.pad_factor, n1 * o.pad_factor, spacing, dz, o),
                      {n0 * o.pad_factor, n1 * o.pad_factor}, u.device());
  return propagate_device(u, H, o, adjoint);
}

HolographyOperator::HolographyOperator(Domain domain, std::vector<double> distances,
                                       PropagationOptions options, double absorption)
    : domain_(std::move(domain)),
      distances_(std::move(distances)),
      options_(options),
      absorption_(absorption) {
  FK_CHECK(domain_.ndim() == 2, "nefi::HolographyOperator", "a 2-D domain", domain_.str());
  FK_CHECK(options_.wavelength > 0, "nefi::HolographyOperator", "a wavelength > 0",
           fk::to_text(options_.wavelength));
  FK_CHECK(!distances_.empty(), "nefi::HolographyOperator", "at least one distance", "none");
  for (double z : distances_)
    FK_CHECK(z >= 0, "nefi::HolographyOperator", "distances >= 0", fk::to_text(z));
  FK_CHECK(absorption_ >= 0, "nefi::HolographyOperator", "absorption >= 0",
           fk::to_text(absorption_));
  FK_CHECK(options_.pad_factor >= 1 && options_.pad_factor <= 8, "nefi::HolographyOperator",
           "pad_factor in [1, 8]", fk::to_text(options_.pad_factor));
}

fk::Tensor HolographyOperator::transfer_on(double dz, fk::Device device) const {
  const int64_t m0 = domain_.shape()[0] * options_.pad_factor;
  const int64_t m1 = domain_.shape()[1] * options_.pad_factor;
  // The options are fixed per operator; the grid, spacing and distance key it.
  const TransferKey key{{m0, m1}, domain_.spacing(), dz, device.str()};
  std::lock_guard<std::mutex> lock(cache_->mu);
  auto it = cache_->tensors.find(key);
  if (it != cache_->tensors.end()) return it->second;
  fk::Tensor H =
      fk::from_vector(transfer_function(m0, m1, domain_.spacing(), dz, options_), {m0, m1}, device);
  cache_->tensors[key] = H;
  return H;
}

// One transfer function per distance, for every dtype (c128).
void HolographyOperator::prepare_tables(fk::Device device, fk::DType) const {
  if (!device.is_cuda()) return;
  for (double dz : distances_) transfer_on(dz, device);
}

std::shared_ptr<Operator> HolographyOperator::at_resolution(const fk::Dims& shape) const {
  auto op = std::make_shared<HolographyOperator>(*this);
  op->domain_ = domain_.at(shape);
  return op;
}

fk::Dims HolographyOperator::output_shape(const fk::Dims& shape) const {
  std::vector<int64_t> out(shape.begin(), shape.end());
  FK_CHECK(out.size() >= 2, "nefi::HolographyOperator", "a shape (..., n0, n1)", shape.str());
  out.insert(out.end() - 2, static_cast<int64_t>(distances_.size()));
  return fk::Dims(out);
}

fk::Tensor HolographyOperator::apply(const fk::Tensor& phi) const {
  const int64_t n0 = domain_.shape()[0], n1 = domain_.shape()[1];
  FK_CHECK(phi.dim() >= 2 && phi.size(phi.dim() - 2) == n0 && phi.size(phi.dim() - 1) == n1,
           "nefi::HolographyOperator", "a phase of shape (..., " + domain_.shape().str() + ")",
           phi.shape().str());
  FK_CHECK(phi.dtype() == fk::DType::F32 || phi.dtype() == fk::DType::F64,
           "nefi::HolographyOperator", "a real f32/f64 phase", fk::name(phi.dtype()));
  if (!phi.device().is_cpu()) return holography_device(*this, phi);
  const bool record = fk::autograd::needs_grad(phi);
  const int64_t batch = phi.numel() / (n0 * n1), nd = static_cast<int64_t>(distances_.size());
  Field2 t, u(batch * nd * n0 * n1);
  fk::Tensor y;
  {
    fk::autograd::NoGradGuard ng;
    fk::profile::OpScope scope("holography");
    const auto p = phi.detach().to_vector<double>();
    t.resize(p.size());
    for (size_t k = 0; k < p.size(); ++k) t[k] = std::polar(std::exp(-absorption_), p[k]);
    std::vector<double> I(u.size());
    for (int64_t d = 0; d < nd; ++d) {
      const Field2 ud =
          propagate(t, batch, n0, n1, domain_.spacing(), distances_[d], options_, false);
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t k = 0; k < n0 * n1; ++k) {
          const int64_t at = (b * nd + d) * n0 * n1 + k;
          u[at] = ud[b * n0 * n1 + k];
          I[at] = std::norm(u[at]);
        }
    }
    y = fk::from_vector(I, output_shape(phi.shape())).to(phi.dtype());
  }
  if (record) {
    auto node = std::make_shared<HolographyBackward>();
    node->op = std::make_shared<const HolographyOperator>(*this);
    node->t = fk::from_vector(t, {batch, n0, n1});
    node->u = fk::from_vector(u, {batch, nd, n0, n1});
    node->in_shape = phi.shape();
    node->dtype = phi.dtype();
    fk::autograd::record(node, {phi}, y);
  }
  return y;
}

namespace {

std::vector<fk::Tensor> HolographyBackward::apply(std::vector<fk::Tensor>&& grads) {
  fk::autograd::NoGradGuard ng;
  const int64_t batch = t.size(0), nd = u.size(1), n0 = t.size(1), n1 = t.size(2);
  const auto g = grads[0].to_vector<double>();
  const Field2 tv = t.to_vector<c128>(), uv = u.to_vector<c128>();
  Field2 w(batch * n0 * n1, 0.0), src(batch * n0 * n1);
  for (int64_t d = 0; d < nd; ++d) {
    // dI/du* = u: the field-side cotangent of I_d = |u_d|^2 is 2 g_d u_d.
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t k = 0; k < n0 * n1; ++k) {
        const int64_t at = (b * nd + d) * n0 * n1 + k;
        src[b * n0 * n1 + k] = 2.0 * g[at] * uv[at];
      }
    const Field2 back = propagate(src, batch, n0, n1, op->domain().spacing(), op->distances()[d],
                                  op->options(), /*adjoint=*/true);
    for (size_t k = 0; k < w.size(); ++k) w[k] += back[k];
  }
  // t = exp(i phi - a): dL/dphi = Re(conj(w) i t) = -Im(t conj(w)).
  std::vector<double> dphi(w.size());
  for (size_t k = 0; k < w.size(); ++k) dphi[k] = -std::imag(tv[k] * std::conj(w[k]));
  return {fk::from_vector(dphi, in_shape).to(dtype)};
}

}  // namespace

}  // namespace nefi
