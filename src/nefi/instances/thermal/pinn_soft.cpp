#include "nefi/instances/thermal/pinn_soft.h"

#include <algorithm>
#include <cmath>

#include "fk/autograd.h"
#include "fk/device.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/index.h"
#include "fk/ops/linalg.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/ops/view.h"
#include "fk/random.h"

namespace nefi::thermal {

TemperatureNet::TemperatureNet(int hidden, int depth, double scale, uint64_t seed, int n_octaves,
                               fk::DType dtype)
    : scale_(scale), n_octaves_(n_octaves) {
  FK_CHECK(hidden >= 1 && depth >= 1 && scale > 0 && n_octaves >= 0 && n_octaves <= 16,
           "nefi::thermal::TemperatureNet",
           "hidden >= 1, depth >= 1, scale > 0 and n_octaves in [0, 16]",
           fk::to_text(hidden) + ", " + fk::to_text(depth) + ", " + fk::to_text(scale) + ", " +
               fk::to_text(n_octaves));
  FK_CHECK(dtype == fk::DType::F32 || dtype == fk::DType::F64, "nefi::thermal::TemperatureNet",
           "f32 or f64 parameters", fk::name(dtype));
  fk::Generator gen(seed);
  int64_t in = 4 * (1 + 2 * n_octaves);
  for (int l = 0; l <= depth; ++l) {
    const int64_t out = l < depth ? hidden : 1;
    const double bound = std::sqrt(6.0 / static_cast<double>(in + out));  // Xavier uniform
    params_.push_back(fk::uniform({out, in}, -bound, bound, {fk::DType::F32}, &gen).to(dtype));
    params_.push_back(fk::zeros({out}, {dtype}));
    in = out;
  }
  for (auto& p : params_) p.set_requires_grad(true);
}

void TemperatureNet::to(fk::Device d) {
  fk::check_usable(d, "nefi::thermal::TemperatureNet::to");
  if (device() == d) return;
  fk::autograd::NoGradGuard ng;
  for (auto& p : params_) {
    p = p.detach().to(d);
    p.set_requires_grad(true);
  }
}

TemperatureNet::Encoded TemperatureNet::encode(const fk::Tensor& xt, bool with_derivatives,
                                               fk::Device device) const {
  FK_CHECK(xt.device().is_cpu() && xt.shape().size() == 2 && xt.shape()[1] == 4,
           "nefi::thermal::TemperatureNet::encode",
           "normalised (x, y, z, t) rows (N, 4) on the cpu",
           xt.shape().str() + " on " + xt.device().str());
  const fk::DType dt = params_[0].dtype();
  Encoded e;
  if (n_octaves_ == 0) {
    e.value = (xt.dtype() == dt ? xt : xt.to(dt)).to(device);
    return e;  // no derivatives: the first layer's input tangents are unit vectors
  }
  const std::vector<double> u = xt.to_vector<double>();
  const int64_t n = xt.shape()[0], width = 4 * (1 + 2 * n_octaves_);
  std::vector<double> v(n * width), d1[4], d2[3];
  if (with_derivatives) {
    for (auto& d : d1) d.assign(n * width, 0.0);
    for (auto& d : d2) d.assign(n * width, 0.0);
  }
  for (int64_t p = 0; p < n; ++p) {
    double* row = v.data() + p * width;
    for (int d = 0; d < 4; ++d) {
      row[d] = u[4 * p + d];
      if (with_derivatives) d1[d][p * width + d] = 1;
    }
    for (int k = 0; k < n_octaves_; ++k) {
      const double w = std::ldexp(M_PI, k);
      for (int d = 0; d < 4; ++d) {
        const int64_t is = 4 + 8 * k + d, ic = is + 4;
        const double sn = std::sin(w * u[4 * p + d]), cs = std::cos(w * u[4 * p + d]);
        row[is] = sn;
        row[ic] = cs;
        if (!with_derivatives) continue;
        d1[d][p * width + is] = w * cs;
        d1[d][p * width + ic] = -w * sn;
        if (d < 3) {
          d2[d][p * width + is] = -w * w * sn;
          d2[d][p * width + ic] = -w * w * cs;
        }
      }
    }
  }
  const fk::Dims shape{n, width};
  // Converted on the host, then uploaded: the device sees the CPU's values.
  auto table = [&](const std::vector<double>& host) {
    return fk::from_vector(host, shape).to(dt).to(device);
  };
  e.value = table(v);
  if (with_derivatives) {
    for (int k = 0; k < 4; ++k) e.d1[k] = table(d1[k]);
    for (int k = 0; k < 3; ++k) e.d2[k] = table(d2[k]);
  }
  return e;
}

fk::Tensor TemperatureNet::value(const Encoded& e) const {
  fk::Tensor h = e.value;
  const size_t n_layers = params_.size() / 2;
  for (size_t l = 0; l + 1 < n_layers; ++l)
    h = fk::tanh(fk::linear(h, params_[2 * l], params_[2 * l + 1]));
  const fk::Tensor out = fk::linear(h, params_[2 * n_layers - 2], params_[2 * n_layers - 1]);
  return fk::mul(fk::reshape(out, {e.value.shape()[0]}), scale_);
}

// Through a = tanh(z): a' = 1 − a², so the tangents become a'·dz and the
// second derivatives a'·d²z − 2 a a'·dz². The first layer's z tangents are
// W0's columns (raw inputs) or the features' derivatives times W0ᵀ.
TemperatureNet::Jet TemperatureNet::jet(const Encoded& e) const {
  const size_t n_layers = params_.size() / 2;
  const bool raw = n_octaves_ == 0;
  FK_CHECK(raw || e.d1[0].defined(), "nefi::thermal::TemperatureNet::jet",
           "points encoded with their derivatives", "an encoding without them");
  fk::Tensor h = e.value, d1[4], d2[3];
  for (size_t l = 0; l + 1 < n_layers; ++l) {
    const fk::Tensor& w = params_[2 * l];
    const fk::Tensor z = fk::linear(h, w, params_[2 * l + 1]);
    fk::Tensor dz[4], d2z[3];
    for (int k = 0; k < 4; ++k)
      dz[k] = l > 0 ? fk::linear(d1[k], w)
              : raw ? fk::unsqueeze(fk::select(w, 1, k), 0)
                    : fk::linear(e.d1[k], w);
    for (int k = 0; k < 3; ++k)
      if (l > 0 || !raw) d2z[k] = fk::linear(l > 0 ? d2[k] : e.d2[k], w);
    const fk::Tensor a = fk::tanh(z);
    const fk::Tensor da = fk::sub(fk::ones_like(a), fk::mul(a, a));
    const fk::Tensor curv = fk::mul(fk::mul(a, da), -2.0);
    for (int k = 0; k < 3; ++k) {
      const fk::Tensor bend = fk::mul(curv, fk::mul(dz[k], dz[k]));
      d2[k] = d2z[k].defined() ? fk::add(fk::mul(da, d2z[k]), bend) : bend;
    }
    for (int k = 0; k < 4; ++k) d1[k] = fk::mul(da, dz[k]);
    h = a;
  }
  const fk::Tensor& w = params_[2 * n_layers - 2];
  const int64_t n = e.value.shape()[0];
  auto out = [&](const fk::Tensor& t) {
    return fk::mul(fk::reshape(fk::linear(t, w), {n}), scale_);
  };
  Jet j;
  j.value = fk::mul(fk::reshape(fk::linear(h, w, params_[2 * n_layers - 1]), {n}), scale_);
  for (int k = 0; k < 4; ++k) j.d1[k] = out(d1[k]);
  for (int k = 0; k < 3; ++k) j.d2[k] = out(d2[k]);
  return j;
}

fk::Tensor PinnGeometry::normalise(const std::vector<double>& xyz,
                                   const std::vector<double>& t) const {
  const size_t n = t.size();
  std::vector<float> u(4 * n);
  for (size_t i = 0; i < n; ++i) {
    for (int a = 0; a < 3; ++a)
      u[4 * i + a] = static_cast<float>(2.0 * xyz[3 * i + a] / extent[a] - 1.0);
    u[4 * i + 3] = static_cast<float>(2.0 * t[i] / t_end - 1.0);
  }
  return fk::from_vector(u, fk::Dims{static_cast<int64_t>(n), 4});
}

SoftPinnSurface::SoftPinnSurface(std::shared_ptr<TemperatureNet> net, PinnGeometry geometry,
                                 fk::Dims grid)
    : net_(std::move(net)),
      geo_(std::move(geometry)),
      grid_(std::move(grid)),
      surface_(std::make_shared<TableCache<TemperatureNet::Encoded>>()) {
  FK_CHECK(net_ != nullptr, "nefi::thermal::SoftPinnSurface", "a temperature network", "none");
  FK_CHECK(geo_.extent.size() == 3 && geo_.t_end > 0 && !geo_.frame_times.empty(),
           "nefi::thermal::SoftPinnSurface", "a 3-D slab, t_end > 0 and observed frames",
           fk::to_text(geo_.extent.size()) + "-D, t_end " + fk::to_text(geo_.t_end));
  primary = "alpha";
}

std::string SoftPinnSurface::not_capturable_reason() const {
  return "pinn_soft's PDE-residual collocation points are resampled on the host and uploaded "
         "at every step (a replayed graph would reuse the captured points)";
}

fk::Dims SoftPinnSurface::output_shape(const fk::Dims& shape) const {
  return {static_cast<int64_t>(geo_.frame_times.size()), shape[0], shape[1]};
}

TemperatureNet::Encoded SoftPinnSurface::surface_points(const fk::Dims& grid,
                                                        fk::Device device) const {
  FK_CHECK(grid.size() == 3, "nefi::thermal::SoftPinnSurface", "a 3-D alpha grid", grid.str());
  return surface_->get(grid, device, net_->dtype(), [&](fk::Device d, fk::DType) {
    const fk::Dims& s = grid;
    const double hx = geo_.extent[0] / s[0], hy = geo_.extent[1] / s[1], hz = geo_.extent[2] / s[2];
    std::vector<double> xyz, t;
    for (double tf : geo_.frame_times)
      for (int64_t i = 0; i < s[0]; ++i)
        for (int64_t j = 0; j < s[1]; ++j) {
          xyz.insert(xyz.end(), {(i + 0.5) * hx, (j + 0.5) * hy, 0.5 * hz});
          t.push_back(tf);
        }
    return net_->encode(geo_.normalise(xyz, t), false, d);
  });
}

fk::Tensor SoftPinnSurface::apply(const fk::Tensor& alpha) const {
  const fk::Dims& s = alpha.shape();
  FK_CHECK(s.size() == 3, "nefi::thermal::SoftPinnSurface", "a 3-D alpha grid", s.str());
  return fk::reshape(net_->value(surface_points(s, net_->device())), output_shape(s));
}

void SoftPinnSurface::prepare_tables(fk::Device device, fk::DType dtype) const {
  (void)dtype;  // the points are in the network's dtype, whatever the field's
  if (grid_.size() == 3) surface_points(grid_, device);
}

std::shared_ptr<Operator> SoftPinnSurface::at_resolution(const fk::Dims& shape) const {
  // The surrogate is continuous: apply takes its grid from alpha; `shape` is
  // the grid prepare_tables readies. The network and the tables are shared.
  auto op = std::make_shared<SoftPinnSurface>(*this);
  op->grid_ = shape;
  return op;
}

namespace {

// Along one axis of n cells of width h: the two cells whose centres bracket
// coordinate x, their weights and the weights' derivatives in x.
struct AxisStencil {
  int64_t i0, i1;
  double w0, w1, dw0, dw1;
};

AxisStencil axis_stencil(double x, int64_t n, double h, bool wrap) {
  const double s = x / h - 0.5;
  const double f0 = std::floor(s);
  const double f = s - f0;
  auto i0 = static_cast<int64_t>(f0);
  if (wrap) return {(i0 % n + n) % n, ((i0 + 1) % n + n) % n, 1 - f, f, -1 / h, 1 / h};
  if (i0 < 0) return {0, 0, 1, 0, 0, 0};
  if (i0 >= n - 1) return {n - 1, n - 1, 1, 0, 0, 0};
  return {i0, i0 + 1, 1 - f, f, -1 / h, 1 / h};
}

const PinnGeometry& pinn_geometry(const LossContext& ctx, const char* who) {
  const auto* op = dynamic_cast<const SoftPinnSurface*>(ctx.op);
  FK_CHECK(op != nullptr, who, "a SoftPinnSurface operator (method pinn_soft)",
           ctx.op ? ctx.op->kind() : std::string("none"));
  return op->geometry();
}

}  // namespace

Interpolated trilinear(const fk::Tensor& v, const std::vector<double>& extent, bool periodic,
                       const std::vector<double>& xyz) {
  const fk::Dims& s = v.shape();
  FK_CHECK(s.size() == 3 && extent.size() == 3, "nefi::thermal::trilinear",
           "cell values on a 3-D grid", s.str());
  const int64_t n = static_cast<int64_t>(xyz.size() / 3);
  std::vector<int64_t> idx(8 * n);
  std::vector<double> w[4];  // in v's dtype below (exact for f64 cell values)
  for (auto& wk : w) wk.resize(8 * n);
  for (int64_t p = 0; p < n; ++p) {
    AxisStencil a[3];
    for (int d = 0; d < 3; ++d)
      a[d] = axis_stencil(xyz[3 * p + d], s[d], extent[d] / s[d], periodic && d < 2);
    for (int c = 0; c < 8; ++c) {
      const int bx = c >> 2, by = (c >> 1) & 1, bz = c & 1;
      const int64_t i = bx ? a[0].i1 : a[0].i0, j = by ? a[1].i1 : a[1].i0,
                    k = bz ? a[2].i1 : a[2].i0;
      const double wx = bx ? a[0].w1 : a[0].w0, wy = by ? a[1].w1 : a[1].w0,
                   wz = bz ? a[2].w1 : a[2].w0;
      const double dx = bx ? a[0].dw1 : a[0].dw0, dy = by ? a[1].dw1 : a[1].dw0,
                   dz = bz ? a[2].dw1 : a[2].dw0;
      idx[8 * p + c] = (i * s[1] + j) * s[2] + k;
      w[0][8 * p + c] = wx * wy * wz;
      w[1][8 * p + c] = dx * wy * wz;
      w[2][8 * p + c] = wx * dy * wz;
      w[3][8 * p + c] = wx * wy * dz;
    }
  }
  // The host-index form: the corners are in range by construction and
  // checked on the host, so a device step reads nothing back here (a device
  // index tensor's range check would be a host read in every step).
  const fk::Tensor corners =
      fk::reshape(fk::index_select(fk::reshape(v, {s.numel()}), 0, idx), {n, 8});
  auto weigh = [&](const std::vector<double>& wk) {
    const fk::Tensor weights = fk::from_vector(wk, fk::Dims{n, 8}).to(v.dtype()).to(v.device());
    return fk::sum(fk::mul(corners, weights), {1});
  };
  return {weigh(w[0]), {weigh(w[1]), weigh(w[2]), weigh(w[3])}};
}

PdeResidualLoss::PdeResidualLoss(int64_t n_points, uint64_t seed, std::string field)
    : Loss("pde"), n_points_(n_points), field_(std::move(field)), rng_(seed) {
  FK_CHECK(n_points >= 1, "config key 'pinn_collocation'", "at least 1 collocation point",
           fk::to_text(n_points));
}

fk::Tensor pde_residual(const SoftPinnSurface& op, const fk::Tensor& alpha,
                        const std::vector<double>& xyz, const std::vector<double>& t) {
  const PinnGeometry& g = op.geometry();
  FK_CHECK(xyz.size() == 3 * t.size(), "nefi::thermal::pde_residual", "3 coordinates per time",
           fk::to_text(xyz.size()) + " coordinates, " + fk::to_text(t.size()) + " times");
  FK_CHECK(alpha.device() == op.net().device(), "nefi::thermal::pde_residual",
           "alpha on the temperature network's device (" + op.net().device().str() + ")",
           alpha.device().str());
  const TemperatureNet::Jet j = op.net().jet(g.normalise(xyz, t));
  const Interpolated a = trilinear(alpha, g.extent, g.periodic, xyz);
  // Physical derivatives: ∂/∂x = (2 / L) ∂/∂u, ∂/∂t = (2 / t_end) ∂/∂u_t.
  fk::Tensor lap, flux;
  for (int k = 0; k < 3; ++k) {
    const double c = 2.0 / g.extent[k];
    const fk::Tensor second = fk::mul(j.d2[k], c * c);
    const fk::Tensor cross = fk::mul(fk::mul(a.grad[k], j.d1[k]), c);
    lap = k == 0 ? second : fk::add(lap, second);
    flux = k == 0 ? cross : fk::add(flux, cross);
  }
  return fk::sub(fk::sub(fk::mul(j.d1[3], 2.0 / g.t_end), fk::mul(a.value, lap)), flux);
}

fk::Tensor PdeResidualLoss::forward(const LossContext& ctx) const {
  const PinnGeometry& g = pinn_geometry(ctx, "nefi::thermal::PdeResidualLoss");
  const auto* op = dynamic_cast<const SoftPinnSurface*>(ctx.op);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  std::vector<double> xyz(3 * n_points_), t(n_points_);
  for (int64_t p = 0; p < n_points_; ++p) {
    for (int a = 0; a < 3; ++a) xyz[3 * p + a] = g.extent[a] * u01(rng_);
    t[p] = g.t_end * std::max(u01(rng_), 1e-3);
  }
  const fk::Tensor r = pde_residual(*op, ctx.field(field_), xyz, t);
  const double norm = op->net().scale() / g.t_end;
  return fk::div(fk::mean(fk::mul(r, r)), norm * norm);
}

InitialConditionLoss::InitialConditionLoss(FlashSpec flash) : Loss("ic"), flash_(flash) {}

fk::Tensor InitialConditionLoss::forward(const LossContext& ctx) const {
  const PinnGeometry& g = pinn_geometry(ctx, "nefi::thermal::InitialConditionLoss");
  const auto* op = dynamic_cast<const SoftPinnSurface*>(ctx.op);
  const TemperatureNet& net = op->net();
  const fk::Dims& s = ctx.domain->shape();
  const Tables tab = tables_.get(s, net.device(), net.dtype(), [&](fk::Device dev, fk::DType) {
    const std::vector<double> a = flash_cell_averages(flash_, s, g.extent);
    std::vector<double> xyz, t(s.numel(), 0.0);
    for (int64_t i = 0; i < s[0]; ++i)
      for (int64_t j = 0; j < s[1]; ++j)
        for (int64_t k = 0; k < s[2]; ++k)
          xyz.insert(xyz.end(), {(i + 0.5) * g.extent[0] / s[0], (j + 0.5) * g.extent[1] / s[1],
                                 (k + 0.5) * g.extent[2] / s[2]});
    return Tables{
        fk::from_vector(std::vector<float>(a.begin(), a.end()), fk::Dims{s.numel()}).to(dev),
        net.encode(g.normalise(xyz, t), false, dev)};
  });
  const fk::Tensor d = fk::sub(net.value(tab.points), tab.t0);
  const double scale = op->net().scale();
  return fk::div(fk::mean(fk::mul(d, d)), scale * scale);
}

}  // namespace nefi::thermal
