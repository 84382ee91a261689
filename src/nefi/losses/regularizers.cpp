#include "nefi/losses/regularizers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/profile.h"
#include "nefi/losses/loss_device.h"
#include "nefi/scalar.h"

namespace nefi {
namespace {

// Walks every cell and axis: calls f(cell, neighbour, axis) for each forward
// difference that exists (periodic axes wrap; others stop at the last cell).
struct Stencil {
  std::vector<int64_t> shape, stride;
  std::vector<bool> periodic;
  explicit Stencil(const fk::Dims& s, const std::vector<int>& per) {
    const int d = s.size();
    shape.assign(s.begin(), s.end());
    stride.assign(d, 1);
    for (int a = d - 2; a >= 0; --a) stride[a] = stride[a + 1] * shape[a + 1];
    periodic.assign(d, false);
    for (int a : per) {
      FK_CHECK(a >= 0 && a < d, "nefi::TV", "periodic axes in [0, " + fk::to_text(d) + ")",
               fk::to_text(a));
      periodic[a] = true;
    }
  }
  // Neighbour of cell i along axis a (or -1).
  int64_t next(int64_t i, int a) const {
    const int64_t c = (i / stride[a]) % shape[a];
    if (c + 1 < shape[a]) return i + stride[a];
    return periodic[a] ? i - c * stride[a] : -1;
  }
};

template <typename T>
double tv_value(const T* x, int64_t n, const Stencil& st, const std::vector<double>& inv_h,
                const TVOptions& o, T* grad /* nullable: the gradient dTV/dx * g */, double g) {
  const int d = static_cast<int>(st.shape.size());
  const double e2 = o.eps * o.eps;
  double total = 0;
  double diff[8];
  int64_t nb[8];
  for (int64_t i = 0; i < n; ++i) {
    double q = 0;
    for (int a = 0; a < d; ++a) {
      nb[a] = st.next(i, a);
      diff[a] = nb[a] < 0 ? 0.0 : (static_cast<double>(x[nb[a]]) - x[i]) * inv_h[a];
      q += diff[a] * diff[a];
    }
    if (o.isotropic) {
      const double r = std::sqrt(q + e2);
      total += r;
      if (grad)
        for (int a = 0; a < d; ++a) {
          if (nb[a] < 0) continue;
          const double c = g * diff[a] / r * inv_h[a];
          grad[nb[a]] += static_cast<T>(c);
          grad[i] -= static_cast<T>(c);
        }
    } else {
      for (int a = 0; a < d; ++a) {
        const double r = std::sqrt(diff[a] * diff[a] + e2);
        total += r;
        if (grad && nb[a] >= 0) {
          const double c = g * diff[a] / r * inv_h[a];
          grad[nb[a]] += static_cast<T>(c);
          grad[i] -= static_cast<T>(c);
        }
      }
    }
  }
  return total / static_cast<double>(n);
}

struct TVBackward : fk::autograd::Node {
  fk::autograd::SavedTensor x;
  std::vector<double> inv_h;
  TVOptions opt;
  const char* name() const override { return "TotalVariationBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override { fn(x); }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("total_variation_backward");
    const fk::Tensor& xt = x.unpack(name());
    fk::Tensor out = fk::empty(xt.shape(), {xt.dtype()});
    std::memset(out.data_ptr(), 0, out.nbytes());
    const Stencil st(xt.shape(), opt.periodic_axes);
    const double g = scalar_value(grads[0]) / static_cast<double>(xt.numel());
    if (xt.dtype() == fk::DType::F64)
      tv_value(xt.data<double>(), xt.numel(), st, inv_h, opt, out.data<double>(), g);
    else
      tv_value(xt.data<float>(), xt.numel(), st, inv_h, opt, out.data<float>(), g);
    return {out};
  }
};

// The TV of each row of x (N, *grid): one node, rows independent.
struct TVRowsBackward : fk::autograd::Node {
  fk::Tensor x;  // contiguous copy taken in the forward
  std::vector<double> inv_h;
  TVOptions opt;
  const char* name() const override { return "TotalVariationRowsBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("total_variation_rows_backward");
    const std::vector<double> gr = grads[0].to_vector<double>();
    fk::Tensor out = fk::zeros(x.shape(), {x.dtype()});
    const fk::Dims grid(std::vector<int64_t>(x.shape().begin() + 1, x.shape().end()));
    const Stencil st(grid, opt.periodic_axes);
    const int64_t rows = x.size(0), n = grid.numel();
    for (int64_t b = 0; b < rows; ++b) {
      if (gr[b] == 0.0) continue;  // a frozen or skipped problem
      const double g = gr[b] / static_cast<double>(n);
      if (x.dtype() == fk::DType::F64)
        tv_value(x.data<double>() + b * n, n, st, inv_h, opt, out.data<double>() + b * n, g);
      else
        tv_value(x.data<float>() + b * n, n, st, inv_h, opt, out.data<float>() + b * n, g);
    }
    return {out};
  }
};

struct FieldLoss : Loss {
  std::string field;
  FieldLoss(std::string n, std::string f) : Loss(std::move(n)), field(std::move(f)) {}
  // kind:name:field, the rest of a signature appended by the loss.
  std::string signature_of(const std::string& kind) const {
    return kind + ":" + name() + ":" + field;
  }
};

// A double in a signature, exactly (std::to_string keeps 6 decimals).
std::string fmt_exact(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

bool on_device(const fk::Tensor& t) {
  return !t.device().is_cpu();
}

// A cellwise regulariser of x on its device (mean over cells, or per row).
fk::Tensor device_term(CellTerm term, const fk::Tensor& x, bool rows, double a = 1, double b = 1) {
  return cellwise_loss_device({term, a, b}, x, {}, {}, rows, {});
}

// The mean of each row of t (N, ...): the per-problem value of a mean-reduced
// regulariser, one op each way.
fk::Tensor row_means(const fk::Tensor& t) {
  std::vector<int64_t> dims;
  for (int a = 1; a < t.dim(); ++a) dims.push_back(a);
  return fk::mean(t, fk::Dims(dims));
}

struct L1Loss : FieldLoss {
  using FieldLoss::FieldLoss;
  fk::Tensor forward(const LossContext& c) const override {
    const fk::Tensor& x = c.field(field);
    if (on_device(x)) return device_term(CellTerm::Abs, x, false);
    return fk::mean(fk::abs(x));
  }
  fk::Tensor forward_rows(const BatchLossContext& c) const override {
    const fk::Tensor& x = c.field(field);
    if (on_device(x)) return device_term(CellTerm::Abs, x, true);
    return row_means(fk::abs(x));
  }
  std::string signature() const override { return signature_of("l1"); }
};

// The spacing the differences divide by, infinite along component axes (a
// difference across components is then 0: the fused TV and the Laplacian,
// on the host and the device, scale by 1 / h).
std::vector<double> spacing_for(const LossContext* c, const BatchLossContext* b,
                                const fk::Dims& grid, bool use_spacing,
                                const std::vector<int>& component_axes) {
  std::vector<double> h(grid.size(), 1.0);
  if (use_spacing) h = c != nullptr ? c->domain->spacing(grid) : b->domain->spacing(grid);
  for (int a : component_axes) {
    FK_CHECK(a >= 0 && a < grid.size(), "nefi::regularizer",
             "component axes in [0, " + fk::to_text(grid.size()) + ")", fk::to_text(a));
    h[a] = std::numeric_limits<double>::infinity();
  }
  return h;
}

struct TVLoss : FieldLoss {
  TVOptions opt;
  TVLoss(std::string n, std::string f, TVOptions o)
      : FieldLoss(std::move(n), std::move(f)), opt(std::move(o)) {}
  fk::Tensor forward(const LossContext& c) const override {
    const fk::Tensor& x = c.field(field);
    return total_variation(
        x, spacing_for(&c, nullptr, x.shape(), opt.use_spacing, opt.component_axes), opt);
  }
  fk::Tensor forward_rows(const BatchLossContext& c) const override {
    const fk::Tensor& x = c.field(field);
    const fk::Dims grid(std::vector<int64_t>(x.shape().begin() + 1, x.shape().end()));
    return total_variation_rows(
        x, spacing_for(nullptr, &c, grid, opt.use_spacing, opt.component_axes), opt);
  }
  std::string signature() const override {
    // eps exactly: to_string's 6 decimals made 1e-7 and 1e-9 one loss to a batch
    std::string s = "tv:" + name() + ":" + field + (opt.isotropic ? ":iso" : ":aniso") + ":" +
                    fmt_exact(opt.eps) + (opt.use_spacing ? ":spacing" : "");
    for (int a : opt.periodic_axes) s += ":p" + std::to_string(a);
    for (int a : opt.component_axes) s += ":c" + std::to_string(a);
    return s;
  }
};

// sum_a second difference of x along grid axis a / h_a^2 with replicated
// edges, wrapped on the periodic grid axes, the grid's axes starting at x's
// axis `first` (1 for rows (N, *grid)).
fk::Tensor laplacian(const fk::Tensor& x, const std::vector<double>& h, int first,
                     const std::vector<int>& periodic) {
  fk::Tensor lap;
  for (int a = first; a < x.dim(); ++a) {
    if (x.size(a) < 2) continue;  // a single cell with replicated edges: exactly 0
    // Replicate padding: zero flux through the boundary; circular: a period.
    const bool wraps = std::find(periodic.begin(), periodic.end(), a - first) != periodic.end();
    std::vector<int64_t> pads(2 * x.dim(), 0);
    pads[2 * (x.dim() - 1 - a)] = 1;
    pads[2 * (x.dim() - 1 - a) + 1] = 1;
    fk::Tensor xp = fk::pad(x, pads, wraps ? fk::PadMode::Circular : fk::PadMode::Replicate);
    fk::Tensor l =
        fk::add(fk::sub(xp.narrow(a, 0, x.size(a)), fk::mul(x, 2.0)), xp.narrow(a, 2, x.size(a)));
    const double ha = h[a - first];
    if (ha != 1.0) l = fk::mul(l, 1.0 / (ha * ha));
    lap = lap.defined() ? fk::add(lap, l) : l;
  }
  FK_CHECK(lap.defined(), "nefi::Laplacian", "an axis with at least 2 cells", x.shape().str());
  return lap;
}

struct LaplacianLoss : FieldLoss {
  bool use_spacing;
  std::vector<int> periodic, components;
  LaplacianLoss(std::string n, std::string f, bool sp, std::vector<int> p, std::vector<int> comp)
      : FieldLoss(std::move(n), std::move(f)),
        use_spacing(sp),
        periodic(std::move(p)),
        components(std::move(comp)) {}
  // As TV's: an axis past the grid was taken as no periodic axis at all.
  void check_periodic(int64_t grid_dims) const {
    for (int a : periodic)
      FK_CHECK(a >= 0 && a < grid_dims, "nefi::laplacian_loss",
               "periodic axes in [0, " + fk::to_text(grid_dims) + ")", fk::to_text(a));
  }
  fk::Tensor forward(const LossContext& c) const override {
    const fk::Tensor& x = c.field(field);
    check_periodic(x.dim());
    const std::vector<double> h = spacing_for(&c, nullptr, x.shape(), use_spacing, components);
    if (on_device(x)) return laplacian_loss_device(x, h, false, periodic);
    return fk::mean(fk::square(laplacian(x, h, 0, periodic)));
  }
  fk::Tensor forward_rows(const BatchLossContext& c) const override {
    const fk::Tensor& x = c.field(field);
    check_periodic(x.dim() - 1);
    const fk::Dims grid(std::vector<int64_t>(x.shape().begin() + 1, x.shape().end()));
    const std::vector<double> h = spacing_for(nullptr, &c, grid, use_spacing, components);
    if (on_device(x)) return laplacian_loss_device(x, h, true, periodic);
    return row_means(fk::square(laplacian(x, h, 1, periodic)));
  }
  std::string signature() const override {
    std::string s = signature_of("laplacian") + (use_spacing ? ":spacing" : "");
    for (int a : periodic) s += ":p" + std::to_string(a);
    for (int a : components) s += ":c" + std::to_string(a);
    return s;
  }
};

struct TikhonovLoss : FieldLoss {
  using FieldLoss::FieldLoss;
  fk::Tensor forward(const LossContext& c) const override {
    const fk::Tensor& x = c.field(field);
    if (on_device(x)) return device_term(CellTerm::Square, x, false);
    return fk::mean(fk::square(x));
  }
  fk::Tensor forward_rows(const BatchLossContext& c) const override {
    const fk::Tensor& x = c.field(field);
    if (on_device(x)) return device_term(CellTerm::Square, x, true);
    return row_means(fk::square(x));
  }
  std::string signature() const override { return signature_of("tikhonov"); }
};

struct RangeLoss : FieldLoss {
  double lo, hi;
  RangeLoss(std::string n, std::string f, double l, double h)
      : FieldLoss(std::move(n), std::move(f)), lo(l), hi(h) {
    FK_CHECK(lo <= hi, "nefi::RangePenalty", "lo <= hi", fk::to_text(lo) + " > " + fk::to_text(hi));
  }
  fk::Tensor forward(const LossContext& c) const override {
    const fk::Tensor& x = c.field(field);
    if (on_device(x)) return device_term(CellTerm::Range, x, false, lo, hi);
    fk::Tensor below = fk::relu(fk::sub(fk::scalar_like(x, lo), x));
    fk::Tensor above = fk::relu(fk::sub(x, hi));
    return fk::mean(fk::add(fk::square(below), fk::square(above)));
  }
  fk::Tensor forward_rows(const BatchLossContext& c) const override {
    const fk::Tensor& x = c.field(field);
    if (on_device(x)) return device_term(CellTerm::Range, x, true, lo, hi);
    fk::Tensor below = fk::relu(fk::sub(fk::scalar_like(x, lo), x));
    fk::Tensor above = fk::relu(fk::sub(x, hi));
    return row_means(fk::add(fk::square(below), fk::square(above)));
  }
  std::string signature() const override {
    return signature_of("range") + ":" + fmt_exact(lo) + ":" + fmt_exact(hi);
  }
};

// relu(-sign D_a x / h_a)^2 over the forward differences along grid axis a
// (the grid's axes from x's axis `first`), the mean over differences.
fk::Tensor monotone_violation(const fk::Tensor& x, int axis, int sign, double h, int first) {
  const int64_t d = first + axis;
  FK_CHECK(d < x.dim() && x.size(d) >= 2, "nefi::Monotone",
           "a field with >= 2 cells along axis " + fk::to_text(axis), x.shape().str());
  const int64_t n = x.size(d);
  fk::Tensor diff = fk::sub(x.narrow(d, 1, n - 1), x.narrow(d, 0, n - 1));
  return fk::square(fk::relu(fk::mul(diff, -sign / h)));
}

struct MonotoneLoss : FieldLoss {
  int axis, sign;
  MonotoneLoss(std::string n, std::string f, int a, int s)
      : FieldLoss(std::move(n), std::move(f)), axis(a), sign(s) {
    FK_CHECK(a >= 0 && a <= 2 && (s == 1 || s == -1), "nefi::Monotone",
             "an axis in 0..2 and a direction of +1 (increasing) or -1 (decreasing)",
             fk::to_text(a) + ", " + fk::to_text(s));
  }
  fk::Tensor forward(const LossContext& c) const override {
    const fk::Tensor& x = c.field(field);
    const double h = axis < x.dim() ? c.domain->spacing(x.shape())[axis] : 1.0;
    return fk::mean(monotone_violation(x, axis, sign, h, 0));
  }
  fk::Tensor forward_rows(const BatchLossContext& c) const override {
    const fk::Tensor& x = c.field(field);
    const fk::Dims grid(std::vector<int64_t>(x.shape().begin() + 1, x.shape().end()));
    const double h = axis < grid.size() ? c.domain->spacing(grid)[axis] : 1.0;
    return row_means(monotone_violation(x, axis, sign, h, 1));
  }
  std::string signature() const override {
    return signature_of("monotone") + ":" + std::to_string(axis) + ":" + std::to_string(sign);
  }
};

// x's values, contiguous and cut from the graph: the TV kernels read them raw
// and the backward node keeps them.
fk::Tensor contiguous_values(const fk::Tensor& x) {
  fk::autograd::NoGradGuard ng;
  return x.is_contiguous() ? x.detach() : x.contiguous().detach();
}

std::vector<double> reciprocals(const std::vector<double>& h) {
  std::vector<double> r;
  for (double v : h) r.push_back(1.0 / v);
  return r;
}

}  // namespace

fk::Tensor total_variation(const fk::Tensor& x, const std::vector<double>& h,
                           const TVOptions& opt) {
  fk::profile::OpScope scope("total_variation");
  FK_CHECK(x.dim() >= 1 && x.dim() <= 8 && static_cast<int>(h.size()) == x.dim(), "nefi::TV",
           "a field and one spacing per axis", x.shape().str());
  FK_CHECK(x.dtype() == fk::DType::F32 || x.dtype() == fk::DType::F64, "nefi::TV",
           "an f32/f64 field", fk::name(x.dtype()));
  // A device field stays there: the same sums as fused device passes.
  if (on_device(x)) return total_variation_device(x, reciprocals(h), opt, false);
  const fk::Tensor xc = contiguous_values(x);
  const std::vector<double> inv_h = reciprocals(h);
  const Stencil st(xc.shape(), opt.periodic_axes);
  const double v = xc.dtype() == fk::DType::F64
                       ? tv_value<double>(xc.data<double>(), xc.numel(), st, inv_h, opt, nullptr, 0)
                       : tv_value<float>(xc.data<float>(), xc.numel(), st, inv_h, opt, nullptr, 0);
  fk::Tensor out = make_scalar(v, x.dtype());
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<TVBackward>();
    node->x = xc;
    node->inv_h = inv_h;
    node->opt = opt;
    fk::autograd::record(node, {x}, out);
  }
  return out;
}

fk::Tensor total_variation_rows(const fk::Tensor& x, const std::vector<double>& h,
                                const TVOptions& opt) {
  fk::profile::OpScope scope("total_variation_rows");
  FK_CHECK(x.dim() >= 2 && x.dim() <= 9 && static_cast<int>(h.size()) == x.dim() - 1,
           "nefi::TV rows", "fields (N, *grid) and one spacing per grid axis", x.shape().str());
  FK_CHECK(x.dtype() == fk::DType::F32 || x.dtype() == fk::DType::F64, "nefi::TV rows",
           "an f32/f64 field", fk::name(x.dtype()));
  if (on_device(x)) return total_variation_device(x, reciprocals(h), opt, true);
  const fk::Tensor xc = contiguous_values(x);
  const std::vector<double> inv_h = reciprocals(h);
  const fk::Dims grid(std::vector<int64_t>(xc.shape().begin() + 1, xc.shape().end()));
  const Stencil st(grid, opt.periodic_axes);
  const int64_t rows = xc.size(0), n = grid.numel();
  std::vector<double> value(rows);
  for (int64_t b = 0; b < rows; ++b)
    value[b] = xc.dtype() == fk::DType::F64
                   ? tv_value<double>(xc.data<double>() + b * n, n, st, inv_h, opt, nullptr, 0)
                   : tv_value<float>(xc.data<float>() + b * n, n, st, inv_h, opt, nullptr, 0);
  fk::Tensor out = fk::from_vector(value, fk::Dims{rows}).to(x.dtype());
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<TVRowsBackward>();
    node->x = xc;
    node->inv_h = inv_h;
    node->opt = opt;
    fk::autograd::record(node, {x}, out);
  }
  return out;
}

LossPtr l1_loss(std::string f, std::string n) {
  return std::make_shared<L1Loss>(std::move(n), std::move(f));
}
LossPtr tv_loss(std::string f, TVOptions o, std::string n) {
  // |grad x| + eps: at eps 0 a flat region's gradient is 0 / 0 (NaN)
  FK_CHECK(std::isfinite(o.eps) && o.eps > 0, "nefi::tv_loss", "a smoothing eps > 0",
           fk::to_text(o.eps));
  return std::make_shared<TVLoss>(std::move(n), std::move(f), std::move(o));
}
LossPtr laplacian_loss(std::string f, bool use_spacing, std::string n,
                       std::vector<int> periodic_axes, std::vector<int> component_axes) {
  return std::make_shared<LaplacianLoss>(std::move(n), std::move(f), use_spacing,
                                         std::move(periodic_axes), std::move(component_axes));
}
LossPtr tikhonov_loss(std::string f, std::string n) {
  return std::make_shared<TikhonovLoss>(std::move(n), std::move(f));
}
LossPtr monotone_loss(int axis, int sign, std::string f, std::string n) {
  return std::make_shared<MonotoneLoss>(std::move(n), std::move(f), axis, sign);
}
LossPtr range_penalty_loss(double lo, double hi, std::string f, std::string n) {
  return std::make_shared<RangeLoss>(std::move(n), std::move(f), lo, hi);
}

}  // namespace nefi
