#include "nefi/operators/nv_relaxometry.h"

#include <cmath>
#include <utility>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/unary.h"

namespace nefi {
namespace {

constexpr double kMu0Over4Pi = 1e-7;  // T m / A

// A kernel of 2n - 1 cells per axis sampled from f(dx, dy) at the cell
// offsets; n = extent / spacing (the grid the operator runs at).
PsfFunction full_extent_kernel(std::vector<double> extent,
                               std::function<double(double, double)> f) {
  return [extent = std::move(extent), f = std::move(f)](const std::vector<double>& h) {
    FK_CHECK(h.size() == 2 && extent.size() == 2, "nefi::NVOperator", "a 2-D grid",
             fk::to_text(h.size()) + "-D");
    PsfSample s;
    int64_t r[2];
    for (int a = 0; a < 2; ++a) {
      r[a] = std::llround(extent[a] / h[a]) - 1;
      s.shape.push_back(2 * r[a] + 1);
    }
    s.values.resize(s.shape.numel());
    for (int64_t i = -r[0]; i <= r[0]; ++i)
      for (int64_t j = -r[1]; j <= r[1]; ++j)
        s.values[(i + r[0]) * s.shape[1] + (j + r[1])] = f(i * h[0], j * h[1]);
    return s;
  };
}

// |R|^2 and (R.n)^2 for R = (dx, dy, z0) and the unit NV axis n.
std::pair<double, double> offset_and_projection(const NVPhysics& p, double dx, double dy) {
  const auto& a = p.nv_axis;
  const double len = std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
  const double rn = (dx * a[0] + dy * a[1] + p.z0 * a[2]) / len;
  return {dx * dx + dy * dy + p.z0 * p.z0, rn * rn};
}

}  // namespace

void NVPhysics::validate() const {
  FK_CHECK(!freqs.empty(), "config key 'n_freq'", "at least one frequency", "none");
  FK_CHECK(z0 > 0 && std::isfinite(z0), "config key 'z0'", "a standoff > 0", fk::to_text(z0));
  FK_CHECK(gamma > 0 && std::isfinite(gamma), "config key 'gamma'", "a line width > 0",
           fk::to_text(gamma));
  FK_CHECK(length_scale > 0 && std::isfinite(length_scale), "config key 'length_scale'",
           "metres per unit > 0", fk::to_text(length_scale));
  const double len = std::hypot(nv_axis[0], nv_axis[1], nv_axis[2]);
  FK_CHECK(
      len > 0 && std::isfinite(len), "config key 'nv_axis'", "a non-zero finite 3-vector",
      fk::to_text(nv_axis[0]) + ", " + fk::to_text(nv_axis[1]) + ", " + fk::to_text(nv_axis[2]));
}

double NVPhysics::g0() const {
  if (!physical_units) return 1.0;
  const double z = z0 * length_scale;
  return 2.0 * kMu0Over4Pi / (z * z * z);
}

double nv_power(const NVPhysics& p, double dx, double dy) {
  // Normalised: P/g0^2 = z0^6 (|R|^2 + 3 (R.n)^2) / (4 |R|^8), independent of units.
  const auto [r2, rn2] = offset_and_projection(p, dx, dy);
  const double z2 = p.z0 * p.z0, z6 = z2 * z2 * z2;
  const double norm = z6 * (r2 + 3 * rn2) / (4 * r2 * r2 * r2 * r2);
  return p.physical_units ? norm * p.g0() * p.g0() : norm;
}

double nv_gzz(const NVPhysics& p, double dx, double dy) {
  // Normalised: G_nn/g0 = z0^3 (3 (R.n)^2 - |R|^2) / (2 |R|^5).
  const auto [r2, rn2] = offset_and_projection(p, dx, dy);
  const double norm = p.z0 * p.z0 * p.z0 * (3 * rn2 - r2) / (2 * r2 * r2 * std::sqrt(r2));
  return p.physical_units ? norm * p.g0() : norm;
}

PsfFunction nv_power_kernel(const NVPhysics& phys, std::vector<double> extent) {
  return full_extent_kernel(std::move(extent),
                            [phys](double dx, double dy) { return nv_power(phys, dx, dy); });
}

PsfFunction nv_gzz_kernel(const NVPhysics& phys, std::vector<double> extent) {
  return full_extent_kernel(std::move(extent),
                            [phys](double dx, double dy) { return nv_gzz(phys, dx, dy); });
}

NVOperator::NVOperator(Domain domain, NVPhysics phys, NVMode mode)
    : domain_(domain),
      phys_(std::move(phys)),
      mode_(mode),
      conv_(mode == NVMode::kF2 ? nv_power_kernel(phys_, domain.extent())
                                : nv_gzz_kernel(phys_, domain.extent()),
            domain) {
  phys_.validate();
  primary = "rho";
  freqs_ = fk::from_vector(phys_.freqs, {static_cast<int64_t>(phys_.freqs.size()), 1, 1});
}

void NVOperator::prepare_tables(fk::Device device, fk::DType dtype) const {
  conv_.prepare_tables(device, dtype);
  if (device.is_cuda()) freqs_on_->get(freqs_, dtype, device);
}

std::shared_ptr<Operator> NVOperator::at_resolution(const fk::Dims& shape) const {
  auto op = std::make_shared<NVOperator>(*this);
  op->domain_ = domain_.at(shape);
  op->conv_ = *std::static_pointer_cast<FFTConvolution>(conv_.at_resolution(shape));
  return op;
}

fk::Dims NVOperator::output_shape(const fk::Dims& shape) const {
  return {static_cast<int64_t>(phys_.freqs.size()), shape[0], shape[1]};
}

fk::Tensor NVOperator::forward(const FieldMap& fields) const {
  auto rho = fields.find("rho");
  FK_CHECK(rho != fields.end(), "nefi::NVOperator", "a field named 'rho'", "none");
  auto wl = fields.find("omega_L");
  return spectra(rho->second, wl == fields.end() ? fk::Tensor() : wl->second);
}

fk::Tensor NVOperator::apply(const fk::Tensor& rho) const {
  return spectra(rho, fk::Tensor());
}

fk::Tensor NVOperator::spectra(const fk::Tensor& rho, const fk::Tensor& omega_l) const {
  FK_CHECK(rho.dim() >= 2, "nefi::NVOperator", "rho of shape (..., " + domain_.shape().str() + ")",
           rho.shape().str());
  fk::Tensor c = conv_.apply(rho);  // checks the trailing shape and dtype
  if (mode_ == NVMode::kF1) c = fk::square(c);
  // The frequency grid (copied there once) and the default Larmor value live
  // on rho's device (the convolution's output is there too).
  const fk::Tensor w = freqs_on_->get(freqs_, rho.dtype(), rho.device());
  fk::Tensor detuning;
  if (omega_l.defined()) {
    FK_CHECK(omega_l.shape() == rho.shape(), "nefi::NVOperator",
             "omega_L of rho's shape " + rho.shape().str(), omega_l.shape().str());
    detuning = fk::sub(omega_l.to(rho.dtype()).unsqueeze(rho.dim() - 2), w);
  } else {
    detuning = fk::sub(fk::full({1, 1, 1}, phys_.larmor_default, {rho.dtype(), rho.device()}), w);
  }
  // L = 1 / (1 + (detuning / gamma)^2)
  const fk::Tensor lorentz = fk::reciprocal(
      fk::add(fk::mul(fk::square(detuning), 1.0 / (phys_.gamma * phys_.gamma)), 1.0));
  return fk::mul(c.unsqueeze(c.dim() - 2), lorentz);
}

std::vector<double> nv_direct_spectra(const Domain& domain, const NVPhysics& phys,
                                      const std::vector<double>& rho,
                                      const std::vector<double>& omega_l) {
  phys.validate();
  FK_CHECK(domain.ndim() == 2, "nefi::nv_direct_spectra", "a 2-D domain", domain.shape().str());
  const int64_t H = domain.shape()[0], W = domain.shape()[1], nf = phys.freqs.size();
  FK_CHECK(static_cast<int64_t>(rho.size()) == H * W && omega_l.size() == rho.size(),
           "nefi::nv_direct_spectra", fk::to_text(H * W) + " values of rho and omega_L",
           fk::to_text(rho.size()) + " and " + fk::to_text(omega_l.size()));
  const std::vector<double> h = domain.spacing();
  std::vector<double> out(nf * H * W, 0.0), lorentz(nf);
  for (int64_t si = 0; si < H; ++si)
    for (int64_t sj = 0; sj < W; ++sj) {
      const double amp = rho[si * W + sj];
      if (amp == 0) continue;
      for (int64_t f = 0; f < nf; ++f) {
        const double d = (phys.freqs[f] - omega_l[si * W + sj]) / phys.gamma;
        lorentz[f] = amp / (1 + d * d);
      }
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j) {
          const double p = nv_power(phys, (i - si) * h[0], (j - sj) * h[1]);
          for (int64_t f = 0; f < nf; ++f) out[(f * H + i) * W + j] += p * lorentz[f];
        }
    }
  return out;
}

const char* nv_direct_tag() {
  return "F3-direct-float64";
}

}  // namespace nefi
