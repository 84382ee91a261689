#include "nefi/operators/scattering.h"

#include <cmath>
#include <numbers>

#include "fk/autograd.h"
#include "fk/blas.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/operators/scattering_device.h"

namespace nefi {
namespace {

using c128 = std::complex<double>;

struct BornBackward : fk::autograd::Node {
  std::shared_ptr<const BornOperator> op;
  fk::Dims in_shape;
  const char* name() const override { return "BornBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    const fk::Tensor& g = grads[0];
    const int64_t per = 2 * op->geometry().n_angles * op->geometry().n_receivers;
    const auto x = op->adjoint(g.to_vector<double>(), g.numel() / per);
    return {fk::from_vector(x, in_shape).to(g.dtype())};
  }
};

}  // namespace

double ScatteringGeometry::k0() const {
  return 2 * std::numbers::pi * n_background / wavelength;
}

void ScatteringGeometry::validate(double extent) const {
  FK_CHECK(wavelength > 0 && std::isfinite(wavelength), "scattering 'wavelength'", "a length > 0",
           fk::to_text(wavelength));
  FK_CHECK(n_background > 0, "scattering 'n_background'", "an index > 0",
           fk::to_text(n_background));
  FK_CHECK(n_angles >= 1 && n_angles <= 100000, "scattering 'n_angles'", "a count in [1, 1e5]",
           fk::to_text(n_angles));
  FK_CHECK(n_receivers >= 1 && n_receivers <= 100000, "scattering 'n_receivers'",
           "a count in [1, 1e5]", fk::to_text(n_receivers));
  FK_CHECK(receiver_radius > extent / std::sqrt(2.0), "scattering 'receiver_radius'",
           "a ring outside the square (radius > extent / sqrt 2 = " +
               fk::to_text(extent / std::sqrt(2.0)) + ")",
           fk::to_text(receiver_radius));
}

std::complex<double> hankel0(double z) {
  return {std::cyl_bessel_j(0.0, z), std::cyl_neumann(0.0, z)};
}

BornOperator::BornOperator(Domain domain, ScatteringGeometry geometry)
    : domain_(std::move(domain)), geometry_(geometry) {
  FK_CHECK(domain_.ndim() == 2 && domain_.shape()[0] == domain_.shape()[1] &&
               domain_.extent()[0] == domain_.extent()[1],
           "nefi::BornOperator", "a square 2-D domain", domain_.str());
  geometry_.validate(domain_.extent()[0]);
  prepare();
}

std::vector<c128> receiver_green(int64_t n, double D, const ScatteringGeometry& g) {
  const int64_t N = n * n, R = g.n_receivers, quarter = R % 4 == 0 ? R / 4 : 0;
  const double h = D / n, k0 = g.k0();
  const c128 w(0, 0.25 * k0 * k0 * h * h);
  std::vector<c128> t(R * N);
  for (int64_t r = 0; r < (quarter ? quarter : R); ++r) {
    const double phi = 2 * std::numbers::pi * r / R;
    const double x0 = g.receiver_radius * std::cos(phi), x1 = g.receiver_radius * std::sin(phi);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        t[r * N + i * n + j] = w * hankel0(k0 * std::hypot(x0 - ((i + 0.5) * h - D / 2),
                                                           x1 - ((j + 0.5) * h - D / 2)));
  }
  for (int64_t r = quarter; quarter && r < R; ++r) {  // cell (i, j) turns to (n - 1 - j, i)
    const c128* from = t.data() + (r - quarter) * N;
    c128* to = t.data() + r * N;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) to[(n - 1 - j) * n + i] = from[i * n + j];
  }
  return t;
}

void BornOperator::prepare() {
  const int64_t n = domain_.shape()[0], N = n * n, V = geometry_.n_angles,
                R = geometry_.n_receivers;
  const double D = domain_.extent()[0], h = D / n, k0 = geometry_.k0();
  auto t = std::make_shared<ScatteringTables>();
  t->green = receiver_green(n, D, geometry_);
  t->phase.resize(V * N), t->rotation.resize(V * R);
  for (int64_t l = 0; l < V; ++l) {
    const double th = 2 * std::numbers::pi * l / V, d0 = std::cos(th), d1 = std::sin(th);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        t->phase[l * N + i * n + j] =
            std::polar(1.0, k0 * (d0 * ((i + 0.5) * h - D / 2) + d1 * ((j + 0.5) * h - D / 2)));
    for (int64_t r = 0; r < R; ++r) {
      const double phi = 2 * std::numbers::pi * r / R;
      t->rotation[l * R + r] = std::polar(
          1.0, -k0 * geometry_.receiver_radius * (d0 * std::cos(phi) + d1 * std::sin(phi)));
    }
  }
  tables_ = t;
  device_cache_ = std::make_shared<DeviceCache>();
}

ScatteringTablesOnDevice BornOperator::tables_on(fk::Device device) const {
  std::lock_guard<std::mutex> lock(device_cache_->mu);
  auto it = device_cache_->by_device.find(device.str());
  if (it != device_cache_->by_device.end()) return it->second;
  auto upload = [&](const std::vector<c128>& v) {
    const double* re_im = reinterpret_cast<const double*>(v.data());  // [complex.numbers.general]
    const std::vector<double> flat(re_im, re_im + 2 * v.size());
    return fk::from_vector(flat, {static_cast<int64_t>(flat.size())}, device);
  };
  ScatteringTablesOnDevice d{upload(tables_->green), upload(tables_->phase),
                             upload(tables_->rotation)};
  device_cache_->by_device[device.str()] = d;
  return d;
}

// The tables serve every dtype (c128).
void BornOperator::prepare_tables(fk::Device device, fk::DType) const {
  if (device.is_cuda()) tables_on(device);
}

// Rows (batch, view) of q = phase * chi times green^T: one complex GEMM.
std::vector<double> BornOperator::project(const std::vector<double>& chi, int64_t batch) const {
  const ScatteringTables& t = *tables_;
  const int64_t N = domain_.numel(), V = geometry_.n_angles, R = geometry_.n_receivers;
  std::vector<c128> q(batch * V * N), u(batch * V * R);
  for (int64_t bt = 0; bt < batch; ++bt)
    for (int64_t l = 0; l < V; ++l) {
      const double* x = chi.data() + bt * N;
      const c128* a = t.phase.data() + l * N;
      c128* ql = q.data() + (bt * V + l) * N;
      for (int64_t j = 0; j < N; ++j) ql[j] = a[j] * x[j];
    }
  fk::gemm(fk::DType::C128, false, true, batch * V, R, N, 1.0, q.data(), N, t.green.data(), N, 0.0,
           u.data(), R);
  std::vector<double> out(batch * 2 * V * R);
  for (int64_t bt = 0; bt < batch; ++bt)
    for (int64_t p = 0; p < V * R; ++p) {
      c128 v = u[bt * V * R + p];
      if (geometry_.rytov) v *= t.rotation[p];
      out[bt * 2 * V * R + p] = v.real(), out[bt * 2 * V * R + V * R + p] = v.imag();
    }
  return out;
}

// The transpose under the real inner product: chi_j = sum_l Re(phase_lj p_lj)
// with p = conj(g) green (conj(g) G, not g conj(G): fk::gemm never conjugates).
std::vector<double> BornOperator::adjoint(const std::vector<double>& data, int64_t batch) const {
  const ScatteringTables& t = *tables_;
  const int64_t N = domain_.numel(), V = geometry_.n_angles, R = geometry_.n_receivers;
  std::vector<c128> g(batch * V * R), p(batch * V * N);
  for (int64_t bt = 0; bt < batch; ++bt)
    for (int64_t k = 0; k < V * R; ++k) {
      const double* re = data.data() + bt * 2 * V * R;
      c128 v(re[k], -re[V * R + k]);  // conj(g)
      if (geometry_.rytov) v *= t.rotation[k];
      g[bt * V * R + k] = v;
    }
  fk::gemm(fk::DType::C128, false, false, batch * V, N, R, 1.0, g.data(), R, t.green.data(), N, 0.0,
           p.data(), N);
  std::vector<double> out(batch * N, 0.0);
  for (int64_t bt = 0; bt < batch; ++bt)
    for (int64_t l = 0; l < V; ++l) {
      double* x = out.data() + bt * N;
      const c128* a = t.phase.data() + l * N;
      const c128* pl = p.data() + (bt * V + l) * N;
      for (int64_t j = 0; j < N; ++j)
        x[j] += a[j].real() * pl[j].real() - a[j].imag() * pl[j].imag();
    }
  return out;
}

std::string BornOperator::fidelity_tag() const {
  return std::string(geometry_.rytov ? "rytov-" : "born-") + std::to_string(domain_.shape()[0]) +
         "px-point-quadrature";
}

fk::Dims BornOperator::output_shape(const fk::Dims& shape) const {
  std::vector<int64_t> out(shape.begin(), shape.end());
  FK_CHECK(out.size() >= 2, "nefi::BornOperator", "a shape (..., n, n)", shape.str());
  out.resize(out.size() - 2);
  out.push_back(2);
  out.push_back(geometry_.n_angles);
  out.push_back(geometry_.n_receivers);
  return fk::Dims(out);
}

std::shared_ptr<Operator> BornOperator::at_resolution(const fk::Dims& shape) const {
  auto op = std::make_shared<BornOperator>(*this);
  op->domain_ = domain_.at(shape);
  op->prepare();
  return op;
}

fk::Tensor BornOperator::apply(const fk::Tensor& x) const {
  const int64_t n = domain_.shape()[0];
  FK_CHECK(x.dim() >= 2 && x.size(x.dim() - 2) == n && x.size(x.dim() - 1) == n,
           "nefi::BornOperator", "a field of shape (..., " + domain_.shape().str() + ")",
           x.shape().str());
  FK_CHECK(x.dtype() == fk::DType::F32 || x.dtype() == fk::DType::F64, "nefi::BornOperator",
           "a real f32/f64 field", fk::name(x.dtype()));
  if (!x.device().is_cpu()) return born_device(*this, x);
  fk::Tensor y;
  {
    fk::autograd::NoGradGuard ng;
    fk::profile::OpScope scope("born");
    y = fk::from_vector(project(x.detach().to_vector<double>(), x.numel() / (n * n)),
                        output_shape(x.shape()))
            .to(x.dtype());
  }
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<BornBackward>();
    node->op = std::make_shared<const BornOperator>(*this);  // shares the tables
    node->in_shape = x.shape();
    fk::autograd::record(node, {x}, y);
  }
  return y;
}

}  // namespace nefi
