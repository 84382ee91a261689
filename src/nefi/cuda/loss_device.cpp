// The losses on a CUDA device (losses/loss_device.h): operand checks, the
// launches of loss_kernels.cu on the device's current stream and the autograd
// nodes. Values, normalisations and gradient coefficients stay in device
// memory (the CPU loops' f64 arithmetic done by one-thread-per-row kernels):
// nothing here reads the host, so a step that uses them can be captured.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/profile.h"
#include "nefi/cuda/loss_kernels.h"
#include "nefi/losses/loss_device.h"
#include "nefi/operators/table_cache.h"

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

// The cells of each of x's `rows` rows; an empty batch (0 rows) has none (as
// on the CPU: its values and gradient are empty, and nothing divides by 0).
int64_t cells_per_row(const fk::Tensor& x, int64_t rows) {
  return x.numel() / std::max<int64_t>(rows, 1);
}

// An empty result for the row values: (N) for rows, 0-dim otherwise.
fk::Tensor empty_values(const fk::Tensor& like, int64_t rows_n, bool rows) {
  return fk::empty(rows ? fk::Dims{rows_n} : fk::Dims{}, {like.dtype(), like.device()});
}

// The upstream gradient of each row as f64 on d: a device tensor stays there
// (no host read); a host one (an eager caller) is moved.
fk::Tensor upstream_f64(const fk::Tensor& g, fk::Device d, int64_t rows) {
  fk::autograd::NoGradGuard ng;
  fk::Tensor r = g.detach();
  if (r.device() != d) r = r.to(d);
  return r.to(fk::DType::F64).reshape(fk::Dims{rows});
}

// coef[r] = g[r] · factor[r] (factor: (rows) f64 on g's device), on the device.
fk::Tensor coefficients(const fk::Tensor& g, const fk::Tensor& factor) {
  fk::autograd::NoGradGuard ng;
  return fk::mul(upstream_f64(g, factor.device(), factor.numel()), factor).contiguous();
}
// coef[r] = g[r] · factor (one host constant for every row).
fk::Tensor coefficients(const fk::Tensor& g, double factor, fk::Device d, int64_t rows) {
  fk::autograd::NoGradGuard ng;
  return fk::mul(upstream_f64(g, d, rows), factor).contiguous();
}

// value[r] = sums[2 r] / den_r into out (p's dtype), inv_den[r] = 1 / den_r
// (inv_den undefined: not written), all enqueued on the device.
void row_values(const fk::Tensor& sums, int64_t rows, const cuda::RowDenominator& den,
                fk::Tensor& out, const fk::Tensor& inv_den) {
  OnDevice on(sums);
  double* inv = inv_den.defined() ? inv_den.data<double>() : nullptr;
  by_dtype(out, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch_row_values<T>(sums.data<double>(), rows, den, out.data<T>(), inv, on.stream);
  });
  fk::profile::count_launch();
  fk::cuda::after_op(on.device);  // the forward's last launch (no sync while capturing)
}

cuda::CellwiseTerm kernel_term(const CellLoss& l) {
  static constexpr int kKinds[] = {
      cuda::kCellAbs,   cuda::kCellSquare,     cuda::kCellRange,   cuda::kCellSquaredError,
      cuda::kCellHuber, cuda::kCellPoissonNll, cuda::kCellLogError};
  return {kKinds[static_cast<int>(l.term)], l.a, l.b};
}

// {sum w f, sum w} per row of contiguous operands on one device: (2 rows)
// f64 on the device, not read back. ab: the term's a, b from device memory.
fk::Tensor row_sums(const cuda::CellwiseTerm& t, const fk::Tensor& p, const fk::Tensor& y,
                    const fk::Tensor& w, int64_t rows, const fk::Tensor& ab = {}) {
  OnDevice on(p);
  const int64_t n = cells_per_row(p, rows);
  fk::Tensor partials = fk::empty({rows * cuda::loss_sum_blocks(n) * 2}, on.f64());
  fk::Tensor sums = fk::empty({rows * 2}, on.f64());
  by_dtype(p, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch_cellwise_sums<T>(t, ptr<double>(ab), p.data<T>(), ptr<T>(y), ptr<T>(w), rows, n,
                                  partials.data<double>(), sums.data<double>(), on.stream);
  });
  fk::profile::count_launch(2);
  return sums;
}

struct CellwiseDeviceBackward : fk::autograd::Node {
  fk::Tensor p, y, w;  // contiguous operands taken in the forward
  cuda::CellwiseTerm term;
  fk::Tensor ab;  // the term's a, b on the device (undefined: term.a, term.b)
  int64_t rows = 1;
  fk::Tensor inv_den;      // (rows) f64 on the device: 1 / the row's denominator
  fk::Tensor bias_factor;  // NormalizedMSE: (1) f64, the gradient through mean p per g
  const char* name() const override { return "CellwiseLossDeviceBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("cellwise_loss_device_backward");
    OnDevice on(p);
    const fk::Tensor coef = coefficients(grads[0], inv_den);
    const fk::Tensor bias =
        bias_factor.defined() ? coefficients(grads[0], bias_factor) : fk::Tensor();
    fk::Tensor out = fk::empty(p.shape(), {p.dtype(), p.device()});
    by_dtype(p, [&](auto tag) {
      using T = decltype(tag);
      cuda::launch_cellwise_grad<T>(term, ptr<double>(ab), p.data<T>(), ptr<T>(y), ptr<T>(w), rows,
                                    cells_per_row(p, rows), coef.data<double>(), ptr<double>(bias),
                                    out.data<T>(), on.stream);
    });
    fk::profile::count_launch();
    fk::cuda::after_op(on.device);
    return {out};
  }
};

void record_cellwise(const fk::Tensor& p, const fk::Tensor& pc, const fk::Tensor& yc,
                     const fk::Tensor& wc, const cuda::CellwiseTerm& t, const fk::Tensor& ab,
                     int64_t rows, const fk::Tensor& inv_den, const fk::Tensor& bias_factor,
                     fk::Tensor& out) {
  auto node = std::make_shared<CellwiseDeviceBackward>();
  node->p = pc;
  node->y = yc;
  node->w = wc;
  node->term = t;
  node->ab = ab;
  node->rows = rows;
  node->inv_den = inv_den;
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
    FK_CHECK(a >= 0 && a < g.ndim, "nefi::TV", "periodic axes in [0, " + fk::to_text(g.ndim) + ")",
             fk::to_text(a));
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
    const fk::Tensor coef = coefficients(grads[0], 1.0 / static_cast<double>(n), x.device(), rows);
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
    const fk::Tensor coef =
        coefficients(grads[0], 2.0 / static_cast<double>(n), lap.device(), rows);
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

fk::Tensor cellwise_sums_device(const CellLoss& loss, const fk::Tensor& p, const fk::Tensor& y,
                                const fk::Tensor& mask, bool rows) {
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
  FK_CHECK(norm.scale.empty() || static_cast<int64_t>(norm.scale.size()) == R, kWhere,
           "one scale per row (" + fk::to_text(R) + ")", fk::to_text(norm.scale.size()));
  const cuda::CellwiseTerm t = kernel_term(loss);
  fk::Tensor ab;
  if (loss.ab.defined()) {
    ab = operand(loss.ab, loss.ab);
    FK_CHECK(ab.device() == p.device() && ab.dtype() == fk::DType::F64 && ab.numel() == 2, kWhere,
             "term parameters (2) f64 on " + p.device().str(),
             ab.shape().str() + " " + fk::name(ab.dtype()) + " on " + ab.device().str());
  }
  const fk::Tensor sums = row_sums(t, pc, yc, wc, R, ab);
  cuda::RowDenominator den;
  fk::Tensor den_sums, row_scale;
  if (norm.denominator_sums.defined()) {
    den_sums = operand(norm.denominator_sums, norm.denominator_sums);
    FK_CHECK(den_sums.device() == p.device() && den_sums.dtype() == fk::DType::F64 &&
                 den_sums.numel() == 2 * R,
             kWhere, "denominator sums (2 rows) f64 on " + p.device().str(),
             den_sums.shape().str() + " " + fk::name(den_sums.dtype()) + " on " +
                 den_sums.device().str());
    den.values = den_sums.data<double>();
    den.stride = 2;
  } else if (!norm.scale.empty()) {
    bool uniform = true;
    for (double s : norm.scale) uniform = uniform && s == norm.scale[0];
    if (uniform) {
      den.scale = norm.scale[0];
    } else {  // uploaded by the first call (a solver's eager warm-up step), then kept
      static HostValueCopies row_scales;
      row_scale = row_scales.get(norm.scale, p.device());
      den.row_scale = row_scale.data<double>();
    }
  }
  fk::Tensor out = empty_values(p, R, rows);
  fk::Tensor inv_den = fk::empty({R}, {fk::DType::F64, p.device()});
  row_values(sums, R, den, out, inv_den);
  if (fk::autograd::needs_grad(p)) record_cellwise(p, pc, yc, wc, t, ab, R, inv_den, {}, out);
  return out;
}

fk::Tensor normalized_mse_device(const fk::Tensor& p, const fk::Tensor& y, const fk::Tensor& mask) {
  fk::profile::OpScope scope("normalized_mse_device");
  check_input(p, "prediction");
  const fk::Tensor pc = operand(p, p), yc = operand(y, pc), wc = operand(mask, pc);
  const cuda::CellwiseTerm identity{cuda::kCellIdentity, 1, 1};
  const fk::Tensor ps = row_sums(identity, pc, {}, wc, 1);
  const fk::Tensor ys = row_sums(identity, yc, {}, wc, 1);
  OnDevice on(pc);
  // c = {1 / mp, 1 / ym, W, mp}: the first two are the term's a, b. W = 0 or
  // ym = 0 (no observed cell, zero-mean data) give a non-finite value.
  fk::Tensor c = fk::empty({4}, on.f64());
  cuda::launch_normalized_constants(ps.data<double>(), ys.data<double>(), c.data<double>(),
                                    on.stream);
  fk::profile::count_launch();
  // r = p / mp - y / ym; L = mean_w r^2. dL/dp_j = w_j (2 r_j / mp) / W plus,
  // through mp = mean_w p, w_j / W · dL/dmp with dL/dmp = -2 sum_w r p / (W mp^2).
  const cuda::CellwiseTerm t{cuda::kCellSquaredError, 1, 1};
  const fk::Tensor sums = row_sums(t, pc, yc, wc, 1, c);
  fk::Tensor out = empty_values(p, 1, false);
  fk::Tensor inv_den = fk::empty({1}, on.f64());
  cuda::RowDenominator den;
  den.values = c.data<double>() + 2;  // W
  row_values(sums, 1, den, out, inv_den);
  if (fk::autograd::needs_grad(p)) {
    const cuda::CellwiseTerm rp{cuda::kCellResidualTimesP, 1, 1};
    const fk::Tensor r_sums = row_sums(rp, pc, yc, wc, 1, c);
    fk::Tensor factor = fk::empty({1}, on.f64());
    cuda::launch_normalized_bias_factor(c.data<double>(), r_sums.data<double>(),
                                        factor.data<double>(), on.stream);
    fk::profile::count_launch();
    record_cellwise(p, pc, yc, wc, t, c, 1, inv_den, factor, out);
  }
  return out;
}

fk::Tensor total_variation_device(const fk::Tensor& x, const std::vector<double>& inv_h,
                                  const TVOptions& opt, bool rows) {
  fk::profile::OpScope scope(rows ? "total_variation_rows_device" : "total_variation_device");
  check_input(x, "field");
  const fk::Tensor xc = operand(x, x);
  const cuda::StencilGrid g = stencil_grid(grid_of(x, rows), inv_h, opt.periodic_axes);
  const int64_t R = row_count(x, rows), n = cells_per_row(x, R);
  fk::Tensor out = empty_values(x, R, rows);
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
    cuda::RowDenominator den;
    den.constant = static_cast<double>(n);
    row_values(sums, R, den, out, {});
  }
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

fk::Tensor laplacian_loss_device(const fk::Tensor& x, const std::vector<double>& h, bool rows,
                                 const std::vector<int>& periodic_axes) {
  fk::profile::OpScope scope("laplacian_loss_device");
  check_input(x, "field");
  const fk::Dims grid = grid_of(x, rows);
  FK_CHECK(static_cast<int>(h.size()) == grid.size(), kWhere, "one spacing per grid axis",
           fk::to_text(h.size()) + " for " + grid.str());
  std::vector<double> scale(h.size(), 0.0);
  bool any = false;
  for (size_t a = 0; a < h.size(); ++a)
    if (grid[a] >= 2) {  // a single cell with replicated edges: exactly 0
      scale[a] = 1.0 / (h[a] * h[a]);
      any = true;
    }
  FK_CHECK(any, "nefi::Laplacian", "an axis with at least 2 cells", x.shape().str());
  const fk::Tensor xc = operand(x, x);
  const cuda::StencilGrid g = stencil_grid(grid, scale, periodic_axes);
  const int64_t R = row_count(x, rows), n = cells_per_row(x, R);
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
  const fk::Tensor sums = row_sums(square, lap, {}, {}, R);
  fk::Tensor out = empty_values(x, R, rows);
  cuda::RowDenominator den;
  den.constant = static_cast<double>(n);
  row_values(sums, R, den, out, {});
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
