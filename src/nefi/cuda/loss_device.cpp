// The losses on a CUDA device (losses/loss_device.h): operand checks, the
// launches of loss_kernels.cu on the device's current stream, the host-side
// normalisation (the CPU loops' arithmetic) and the autograd nodes.
#include <memory>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/cuda/loss_kernels.h"
#include "nefi/losses/loss_device.h"
#include "nefi/scalar.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "nefi::loss (device)";

void check_input(const fk::Tensor& p, const char* what) {
  FK_CHECK(p.device().is_cuda() && (p.dtype() == fk::DType::F32 || p.dtype() == fk::DType::F64),
           kWhere, std::string("an f32/f64 ") + what + " on a CUDA device",
           std::string(fk::name(p.dtype())) + " on " + p.device().str());
}

// t on like's device in like's dtype, contiguous and cut from the graph
// (undefined stays undefined).
fk::Tensor operand(const fk::Tensor& t, const fk::Tensor& like) {
  if (!t.defined()) return {};
  FK_CHECK(t.shape() == like.shape(), kWhere, "an operand of shape " + like.shape().str(),
           t.shape().str());
  fk::autograd::NoGradGuard ng;
  fk::Tensor r = t.detach();
  if (r.device() != like.device()) r = r.to(like.device());
  if (r.dtype() != like.dtype()) r = r.to(like.dtype());
  return r.is_contiguous() ? r : r.contiguous();
}

template <typename T>
const T* ptr(const fk::Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

// f(tag) with tag a double or a float, by x's dtype.
template <typename F>
void by_dtype(const fk::Tensor& x, F&& f) {
  if (x.dtype() == fk::DType::F64)
    f(double{});
  else
    f(float{});
}

// The device, its stream, and a scope with it current.
struct OnDevice {
  int device;
  fk::cuda::detail::DeviceGuard guard;
  void* stream;
  explicit OnDevice(const fk::Tensor& t)
      : device(t.device().index), guard(device), stream(fk::cuda::current_stream(device)) {}
  fk::TensorOptions f64() const { return {fk::DType::F64, fk::cuda_device(device)}; }
};

int64_t row_count(const fk::Tensor& x, bool rows) {
  return rows ? x.size(0) : 1;
}

// The row values, (N) for rows and 0-dim otherwise, in dtype on device d.
fk::Tensor values_on(const std::vector<double>& v, fk::DType dt, fk::Device d, bool rows) {
  if (!rows) return make_scalar(v[0], dt).to(d);
  return fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size())}).to(dt).to(d);
}

// The upstream gradient of each row on the host (one read).
std::vector<double> host_values(const fk::Tensor& g) {
  return g.device().is_cpu() ? g.to_vector<double>() : g.to(fk::kCPU).to_vector<double>();
}

// coef[r] = g[r] · factor[r], uploaded as f64 on device d.
fk::Tensor coefficients(const fk::Tensor& g, const std::vector<double>& factor, fk::Device d) {
  std::vector<double> c = host_values(g);
  for (size_t r = 0; r < c.size(); ++r) c[r] *= factor[r];
  return fk::from_vector(c, fk::Dims{static_cast<int64_t>(c.size())}, d);
}

cuda::CellwiseTerm kernel_term(const CellLoss& l) {
  static constexpr int kKinds[] = {
      cuda::kCellAbs,   cuda::kCellSquare,     cuda::kCellRange,   cuda::kCellSquaredError,
      cuda::kCellHuber, cuda::kCellPoissonNll, cuda::kCellLogError};
  return {kKinds[static_cast<int>(l.term)], l.a, l.b};
}

// {sum w f, sum w} per row of contiguous operands on one device.
std::vector<double> row_sums(const cuda::CellwiseTerm& t, const fk::Tensor& p, const fk::Tensor& y,
                             const fk::Tensor& w, int64_t rows) {
  OnDevice on(p);
  const int64_t n = p.numel() / rows;
  fk::Tensor partials = fk::empty({rows * cuda::loss_sum_blocks(n) * 2}, on.f64());
  fk::Tensor sums = fk::empty({rows * 2}, on.f64());
  by_dtype(p, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch_cellwise_sums<T>(t, p.data<T>(), ptr<T>(y), ptr<T>(w), rows, n,
                                  partials.data<double>(), sums.data<double>(), on.stream);
  });
  fk::profile::count_launch(2);
  return sums.to(fk::kCPU).to_vector<double>();  // the host read (synchronizes)
}

struct CellwiseDeviceBackward : fk::autograd::Node {
  fk::Tensor p, y, w;  // contiguous operands taken in the forward
  cuda::CellwiseTerm term;
  int64_t rows = 1;
  std::vector<double> inv_den;  // 1 / the row's denominator
  double bias_factor = 0;       // NormalizedMSE: the gradient through mean p, per g
  const char* name() const override { return "CellwiseLossDeviceBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("cellwise_loss_device_backward");
    OnDevice on(p);
    const fk::Tensor coef = coefficients(grads[0], inv_den, p.device());
    const double bias = bias_factor == 0 ? 0 : bias_factor * host_values(grads[0])[0];
    fk::Tensor out = fk::empty(p.shape(), {p.dtype(), p.device()});
    by_dtype(p, [&](auto tag) {
      using T = decltype(tag);
      cuda::launch_cellwise_grad<T>(term, p.data<T>(), ptr<T>(y), ptr<T>(w), rows, p.numel() / rows,
                                    coef.data<double>(), bias, out.data<T>(), on.stream);
    });
    fk::profile::count_launch();
    fk::cuda::after_op(on.device);
    return {out};
  }
};

void record_cellwise(const fk::Tensor& p, const fk::Tensor& pc, const fk::Tensor& yc,
                     const fk::Tensor& wc, const cuda::CellwiseTerm& t, int64_t rows,
                     std::vector<double> inv_den, double bias_factor, fk::Tensor& out) {
  auto node = std::make_shared<CellwiseDeviceBackward>();
  node->p = pc;
  node->y = yc;
  node->w = wc;
  node->term = t;
  node->rows = rows;
  node->inv_den = std::move(inv_den);
  node->bias_factor = bias_factor;
  fk::autograd::record(node, {p}, out);
}

cuda::StencilGrid stencil_grid(const fk::Dims& grid, const std::vector<double>& scale,
                               const std::vector<int>& periodic_axes) {
  cuda::StencilGrid g;
  g.ndim = grid.size();
  FK_CHECK(
      g.ndim >= 1 && g.ndim <= cuda::kMaxStencilAxes && static_cast<int>(scale.size()) == g.ndim,
      kWhere, "a grid of 1 to 8 axes and one spacing per axis", grid.str());
  int64_t stride = 1;
  for (int a = g.ndim - 1; a >= 0; --a) {
    g.shape[a] = grid[a];
    g.stride[a] = stride;
    g.scale[a] = scale[a];
    stride *= grid[a];
  }
  for (int a : periodic_axes) {
    FK_CHECK(a >= 0 && a < g.ndim, "nefi::TV",
             "periodic axes in [0, " + std::to_string(g.ndim) + ")", std::to_string(a));
    g.periodic[a] = true;
  }
  return g;
}

fk::Dims grid_of(const fk::Tensor& x, bool rows) {
  return rows ? fk::Dims(std::vector<int64_t>(x.shape().begin() + 1, x.shape().end())) : x.shape();
}

struct TVDeviceBackward : fk::autograd::Node {
  fk::Tensor x;
  cuda::StencilGrid grid;
  TVOptions opt;
  int64_t rows = 1, n = 1;
  const char* name() const override { return "TotalVariationDeviceBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("total_variation_device_backward");
    OnDevice on(x);
    const fk::Tensor coef =
        coefficients(grads[0], std::vector<double>(rows, 1.0 / static_cast<double>(n)), x.device());
    fk::Tensor out = fk::empty(x.shape(), {x.dtype(), x.device()});
    by_dtype(x, [&](auto tag) {
      using T = decltype(tag);
      cuda::launch_tv_grad<T>(x.data<T>(), rows, grid, opt.isotropic, opt.eps, coef.data<double>(),
                              out.data<T>(), on.stream);
    });
    fk::profile::count_launch();
    fk::cuda::after_op(on.device);
    return {out};
  }
};

struct LaplacianDeviceBackward : fk::autograd::Node {
  fk::Tensor lap;  // (rows · n) f64: L x
  cuda::StencilGrid grid;
  fk::Dims shape;
  fk::DType dtype;
  int64_t rows = 1, n = 1;
  const char* name() const override { return "LaplacianLossDeviceBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("laplacian_loss_device_backward");
    OnDevice on(lap);
    // d mean (Lx)^2 / dx = 2 L^T L x / n, and L^T = L.
    const fk::Tensor coef = coefficients(
        grads[0], std::vector<double>(rows, 2.0 / static_cast<double>(n)), lap.device());
    fk::Tensor out = fk::empty(shape, {dtype, lap.device()});
    if (dtype == fk::DType::F64)
      cuda::launch_laplacian<double, double>(lap.data<double>(), rows, grid, coef.data<double>(),
                                             out.data<double>(), on.stream);
    else
      cuda::launch_laplacian<double, float>(lap.data<double>(), rows, grid, coef.data<double>(),
                                            out.data<float>(), on.stream);
    fk::profile::count_launch();
    fk::cuda::after_op(on.device);
    return {out};
  }
};

}  // namespace

std::vector<double> cellwise_sums_device(const CellLoss& loss, const fk::Tensor& p,
                                         const fk::Tensor& y, const fk::Tensor& mask, bool rows) {
  check_input(p, "operand");
  const fk::Tensor pc = operand(p, p);
  return row_sums(kernel_term(loss), pc, operand(y, pc), operand(mask, pc), row_count(p, rows));
}

fk::Tensor cellwise_loss_device(const CellLoss& loss, const fk::Tensor& p, const fk::Tensor& y,
                                const fk::Tensor& mask, bool rows, const RowNormalisation& norm) {
  fk::profile::OpScope scope("cellwise_loss_device");
  check_input(p, "prediction");
  FK_CHECK(!rows || p.dim() >= 1, kWhere, "rows (N, ...)", p.shape().str());
  const fk::Tensor pc = operand(p, p), yc = operand(y, pc), wc = operand(mask, pc);
  const int64_t R = row_count(p, rows);
  const cuda::CellwiseTerm t = kernel_term(loss);
  const std::vector<double> sums = row_sums(t, pc, yc, wc, R);
  std::vector<double> value(R), inv_den(R);
  for (int64_t r = 0; r < R; ++r) {
    double den;
    if (!norm.denominator.empty()) {
      den = norm.denominator[r];
    } else {
      FK_CHECK(sums[2 * r + 1] > 0, kWhere, "at least one observed cell", "an all-zero mask");
      den = sums[2 * r + 1] * (norm.scale.empty() ? 1.0 : norm.scale[r]);
    }
    value[r] = sums[2 * r] / den;
    inv_den[r] = 1.0 / den;
  }
  fk::Tensor out = values_on(value, p.dtype(), p.device(), rows);
  if (fk::autograd::needs_grad(p)) record_cellwise(p, pc, yc, wc, t, R, inv_den, 0, out);
  return out;
}

fk::Tensor normalized_mse_device(const fk::Tensor& p, const fk::Tensor& y, const fk::Tensor& mask) {
  fk::profile::OpScope scope("normalized_mse_device");
  check_input(p, "prediction");
  const fk::Tensor pc = operand(p, p), yc = operand(y, pc), wc = operand(mask, pc);
  const cuda::CellwiseTerm identity{cuda::kCellIdentity, 1, 1};
  const std::vector<double> ps = row_sums(identity, pc, {}, wc, 1);
  const std::vector<double> ys = row_sums(identity, yc, {}, wc, 1);
  const double W = ps[1], ym = ys[0] / W;
  FK_CHECK(W > 0, "nefi::NormalizedMSE", "at least one observed cell", "an all-zero mask");
  FK_CHECK(ym != 0, "nefi::NormalizedMSE", "observations with a non-zero mean", "mean 0");
  const double mp = ps[0] / W + 1e-12;
  // r = p / mp - y / ym; L = mean_w r^2. dL/dp_j = w_j (2 r_j / mp) / W plus,
  // through mp = mean_w p, w_j / W · dL/dmp with dL/dmp = -2 sum_w r p / (W mp^2).
  const cuda::CellwiseTerm t{cuda::kCellSquaredError, 1 / mp, 1 / ym};
  const std::vector<double> sums = row_sums(t, pc, yc, wc, 1);
  fk::Tensor out = values_on({sums[0] / W}, p.dtype(), p.device(), false);
  if (fk::autograd::needs_grad(p)) {
    const cuda::CellwiseTerm rp{cuda::kCellResidualTimesP, 1 / mp, 1 / ym};
    const double R = row_sums(rp, pc, yc, wc, 1)[0];
    record_cellwise(p, pc, yc, wc, t, 1, {1 / W}, -2 * R / (W * W * mp * mp), out);
  }
  return out;
}

fk::Tensor total_variation_device(const fk::Tensor& x, const std::vector<double>& inv_h,
                                  const TVOptions& opt, bool rows) {
  fk::profile::OpScope scope(rows ? "total_variation_rows_device" : "total_variation_device");
  check_input(x, "field");
  const fk::Tensor xc = operand(x, x);
  const cuda::StencilGrid g = stencil_grid(grid_of(x, rows), inv_h, opt.periodic_axes);
  const int64_t R = row_count(x, rows), n = x.numel() / R;
  std::vector<double> value(R);
  {
    OnDevice on(xc);
    fk::Tensor partials = fk::empty({R * cuda::loss_sum_blocks(n) * 2}, on.f64());
    fk::Tensor sums = fk::empty({R * 2}, on.f64());
    by_dtype(xc, [&](auto tag) {
      using T = decltype(tag);
      cuda::launch_tv_sums<T>(xc.data<T>(), R, g, opt.isotropic, opt.eps, partials.data<double>(),
                              sums.data<double>(), on.stream);
    });
    fk::profile::count_launch(2);
    const std::vector<double> s = sums.to(fk::kCPU).to_vector<double>();
    for (int64_t r = 0; r < R; ++r) value[r] = s[2 * r] / static_cast<double>(n);
  }
  fk::Tensor out = values_on(value, x.dtype(), x.device(), rows);
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<TVDeviceBackward>();
    node->x = xc;
    node->grid = g;
    node->opt = opt;
    node->rows = R;
    node->n = n;
    fk::autograd::record(node, {x}, out);
  }
  return out;
}

fk::Tensor laplacian_loss_device(const fk::Tensor& x, const std::vector<double>& h, bool rows) {
  fk::profile::OpScope scope("laplacian_loss_device");
  check_input(x, "field");
  const fk::Dims grid = grid_of(x, rows);
  FK_CHECK(static_cast<int>(h.size()) == grid.size(), kWhere, "one spacing per grid axis",
           std::to_string(h.size()) + " for " + grid.str());
  std::vector<double> scale(h.size(), 0.0);
  bool any = false;
  for (size_t a = 0; a < h.size(); ++a)
    if (grid[a] >= 2) {  // a single cell with replicated edges: exactly 0
      scale[a] = 1.0 / (h[a] * h[a]);
      any = true;
    }
  FK_CHECK(any, "nefi::Laplacian", "an axis with at least 2 cells", x.shape().str());
  const fk::Tensor xc = operand(x, x);
  const cuda::StencilGrid g = stencil_grid(grid, scale, {});
  const int64_t R = row_count(x, rows), n = x.numel() / R;
  fk::Tensor lap;
  {
    OnDevice on(xc);
    lap = fk::empty({R * n}, on.f64());
    by_dtype(xc, [&](auto tag) {
      using T = decltype(tag);
      cuda::launch_laplacian<T, double>(xc.data<T>(), R, g, nullptr, lap.data<double>(), on.stream);
    });
    fk::profile::count_launch();
  }
  const cuda::CellwiseTerm square{cuda::kCellSquare, 1, 1};
  const std::vector<double> sums = row_sums(square, lap, {}, {}, R);
  std::vector<double> value(R);
  for (int64_t r = 0; r < R; ++r) value[r] = sums[2 * r] / static_cast<double>(n);
  fk::Tensor out = values_on(value, x.dtype(), x.device(), rows);
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<LaplacianDeviceBackward>();
    node->lap = lap;
    node->grid = g;
    node->shape = x.shape();
    node->dtype = x.dtype();
    node->rows = R;
    node->n = n;
    fk::autograd::record(node, {x}, out);
  }
  return out;
}

}  // namespace nefi
