#include "nefi/operators/scattering.h"

#include <cmath>
#include <numbers>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"

namespace nefi {
namespace {

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
           std::to_string(wavelength));
  FK_CHECK(n_background > 0, "scattering 'n_background'", "an index > 0",
           std::to_string(n_background));
  FK_CHECK(n_angles >= 1 && n_angles <= 100000, "scattering 'n_angles'", "a count in [1, 1e5]",
           std::to_string(n_angles));
  FK_CHECK(n_receivers >= 1 && n_receivers <= 100000, "scattering 'n_receivers'",
           "a count in [1, 1e5]", std::to_string(n_receivers));
  FK_CHECK(receiver_radius > extent / std::sqrt(2.0), "scattering 'receiver_radius'",
           "a ring outside the square (radius > extent / sqrt 2 = " +
               std::to_string(extent / std::sqrt(2.0)) + ")",
           std::to_string(receiver_radius));
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

void BornOperator::prepare() {
  const int64_t n = domain_.shape()[0], N = n * n, V = geometry_.n_angles,
                R = geometry_.n_receivers;
  const double D = domain_.extent()[0], h = D / n, k0 = geometry_.k0();
  auto t = std::make_shared<Tables>();
  t->gr.resize(R * N), t->gi.resize(R * N), t->c.resize(V * N), t->s.resize(V * N);
  t->rot_c.resize(V * R), t->rot_s.resize(V * R);
  std::vector<double> y0(N), y1(N);  // cell centres relative to c
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      y0[i * n + j] = (i + 0.5) * h - D / 2, y1[i * n + j] = (j + 0.5) * h - D / 2;
  const double w = k0 * k0 * h * h;
  for (int64_t r = 0; r < R; ++r) {
    const double phi = 2 * std::numbers::pi * r / R;
    const double x0 = geometry_.receiver_radius * std::cos(phi),
                 x1 = geometry_.receiver_radius * std::sin(phi);
    for (int64_t j = 0; j < N; ++j) {
      const std::complex<double> g =
          std::complex<double>(0, 0.25) * hankel0(k0 * std::hypot(x0 - y0[j], x1 - y1[j]));
      t->gr[r * N + j] = w * g.real(), t->gi[r * N + j] = w * g.imag();
    }
    for (int64_t l = 0; l < V; ++l) {
      const double th = 2 * std::numbers::pi * l / V;
      const double ph = k0 * (std::cos(th) * x0 + std::sin(th) * x1);
      t->rot_c[l * R + r] = std::cos(ph), t->rot_s[l * R + r] = -std::sin(ph);
    }
  }
  for (int64_t l = 0; l < V; ++l) {
    const double th = 2 * std::numbers::pi * l / V, d0 = std::cos(th), d1 = std::sin(th);
    for (int64_t j = 0; j < N; ++j) {
      const double ph = k0 * (d0 * y0[j] + d1 * y1[j]);
      t->c[l * N + j] = std::cos(ph), t->s[l * N + j] = std::sin(ph);
    }
  }
  tables_ = t;
}

std::vector<double> BornOperator::project(const std::vector<double>& chi, int64_t batch) const {
  const Tables& t = *tables_;
  const int64_t N = domain_.numel(), V = geometry_.n_angles, R = geometry_.n_receivers;
  std::vector<double> out(batch * 2 * V * R), a(N), b(N);
  for (int64_t bt = 0; bt < batch; ++bt) {
    const double* x = chi.data() + bt * N;
    double* re = out.data() + bt * 2 * V * R;
    double* im = re + V * R;
    for (int64_t l = 0; l < V; ++l) {
      for (int64_t j = 0; j < N; ++j) a[j] = t.c[l * N + j] * x[j], b[j] = t.s[l * N + j] * x[j];
      for (int64_t r = 0; r < R; ++r) {
        const double* gr = t.gr.data() + r * N;
        const double* gi = t.gi.data() + r * N;
        double sr = 0, si = 0;
        for (int64_t j = 0; j < N; ++j) {
          sr += gr[j] * a[j] - gi[j] * b[j];
          si += gr[j] * b[j] + gi[j] * a[j];
        }
        if (geometry_.rytov) {
          const double cr = t.rot_c[l * R + r], ci = t.rot_s[l * R + r];
          const double tr = sr * cr - si * ci;
          si = sr * ci + si * cr, sr = tr;
        }
        re[l * R + r] = sr, im[l * R + r] = si;
      }
    }
  }
  return out;
}

std::vector<double> BornOperator::adjoint(const std::vector<double>& data, int64_t batch) const {
  const Tables& t = *tables_;
  const int64_t N = domain_.numel(), V = geometry_.n_angles, R = geometry_.n_receivers;
  std::vector<double> out(batch * N, 0.0), hr(N), hi(N);
  for (int64_t bt = 0; bt < batch; ++bt) {
    const double* re = data.data() + bt * 2 * V * R;
    const double* im = re + V * R;
    double* x = out.data() + bt * N;
    for (int64_t l = 0; l < V; ++l) {
      std::fill(hr.begin(), hr.end(), 0.0);
      std::fill(hi.begin(), hi.end(), 0.0);
      for (int64_t r = 0; r < R; ++r) {
        double gre = re[l * R + r], gim = im[l * R + r];
        if (geometry_.rytov) {  // g <- conj(rotation) g
          const double cr = t.rot_c[l * R + r], ci = -t.rot_s[l * R + r];
          const double tr = gre * cr - gim * ci;
          gim = gre * ci + gim * cr, gre = tr;
        }
        const double* gr = t.gr.data() + r * N;
        const double* gi = t.gi.data() + r * N;
        for (int64_t j = 0; j < N; ++j) {  // h = sum_r G_rj conj(g_lr)
          hr[j] += gr[j] * gre + gi[j] * gim;
          hi[j] += gi[j] * gre - gr[j] * gim;
        }
      }
      for (int64_t j = 0; j < N; ++j) x[j] += t.c[l * N + j] * hr[j] - t.s[l * N + j] * hi[j];
    }
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
