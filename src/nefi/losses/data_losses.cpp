#include "nefi/losses/data_losses.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/profile.h"
#include "nefi/losses/loss_device.h"
#include "nefi/losses/observation_constants.h"
#include "nefi/scalar.h"

namespace nefi {
namespace {

fk::Tensor as_contig(const fk::Tensor& t, fk::DType dt) {
  fk::Tensor u = t.dtype() == dt ? t : t.to(dt);
  return u.is_contiguous() ? u : u.contiguous();
}

// An observation (data or mask) for the host loops of a CPU prediction: one
// on a device is copied over, as the device path copies a host one to the
// prediction's device (the loops would read device memory).
fk::Tensor on_host(const fk::Tensor& t, fk::DType dt) {
  return as_contig(t.device().is_cpu() ? t : t.to(fk::kCPU), dt);
}

struct MseBackward : fk::autograd::Node {
  fk::autograd::SavedTensor p, y, w;
  double wsum = 1, scale = 1;
  const char* name() const override { return "MaskedMseBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(p);
    fn(y);
    fn(w);
  }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("masked_mse_backward");
    const fk::Tensor& pt = p.unpack(name());
    const fk::Tensor& yt = y.unpack(name());
    const fk::Tensor wt = w.defined() ? w.unpack(name()) : fk::Tensor();
    const double g = scalar_value(grads[0]) * 2.0 / (wsum * scale);
    fk::Tensor out = fk::empty(pt.shape(), {pt.dtype()});
    const int64_t n = pt.numel();
    auto run = [&](auto tag) {
      using T = decltype(tag);
      const T* pp = pt.data<T>();
      const T* yy = yt.data<T>();
      const T* ww = wt.defined() ? wt.data<T>() : nullptr;
      T* o = out.data<T>();
      for (int64_t i = 0; i < n; ++i)
        o[i] = static_cast<T>(g * (ww ? ww[i] : T(1)) * (static_cast<double>(pp[i]) - yy[i]));
    };
    if (pt.dtype() == fk::DType::F64)
      run(double{});
    else
      run(float{});
    return {out};
  }
};

struct MseRowsBackward : fk::autograd::Node {
  fk::Tensor p, y, w;  // contiguous copies taken in the forward
  std::vector<double> wsum, scale;
  const char* name() const override { return "MaskedMseRowsBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("masked_mse_rows_backward");
    // As the forward: an empty batch (0 rows) has no cells, and no division by 0.
    const int64_t rows = p.size(0), n = p.numel() / std::max<int64_t>(rows, 1);
    const std::vector<double> gr = grads[0].to_vector<double>();
    fk::Tensor out = fk::zeros(p.shape(), {p.dtype()});
    auto run = [&](auto tag) {
      using T = decltype(tag);
      for (int64_t b = 0; b < rows; ++b) {
        if (gr[b] == 0.0) continue;  // a frozen or skipped problem: no gradient
        const double g = gr[b] * 2.0 / (wsum[b] * scale[b]);
        const T* pp = p.data<T>() + b * n;
        const T* yy = y.data<T>() + b * n;
        const T* ww = w.defined() ? w.data<T>() + b * n : nullptr;
        T* o = out.data<T>() + b * n;
        for (int64_t i = 0; i < n; ++i)
          o[i] = static_cast<T>(g * (ww ? ww[i] : T(1)) * (static_cast<double>(pp[i]) - yy[i]));
      }
    };
    p.dtype() == fk::DType::F64 ? run(double{}) : run(float{});
    return {out};
  }
};

fk::Tensor obs_mask(const LossContext& c) {
  return c.obs->mask;
}

bool on_device(const fk::Tensor& t) {
  return !t.device().is_cpu();
}

// mean_w f(p, y) of a cellwise term on p's device (each row's, with rows).
fk::Tensor device_mean(CellLoss term, const fk::Tensor& p, const fk::Tensor& y,
                       const fk::Tensor& mask, bool rows) {
  return cellwise_loss_device(term, p, y, mask, rows, {});
}

// sigma^2 of a noise-aware MSE; an unknown (< 0) or zero noise level is refused.
double noise_variance(double noise_std) {
  FK_CHECK(noise_std > 0, "nefi::MSE(noise_aware)", "a measurement with a known positive noise_std",
           fk::to_text(noise_std));
  return noise_std * noise_std;
}

struct MseLoss : Loss {
  bool noise_aware;
  MseLoss(std::string n, bool na) : Loss(std::move(n)), noise_aware(na) {}
  bool is_data() const override { return true; }
  fk::Tensor forward(const LossContext& c) const override {
    const double scale = noise_aware ? noise_variance(c.obs->noise_std) : 1.0;
    return masked_mse(c.pred, c.obs->data, obs_mask(c), scale);
  }
  fk::Tensor forward_rows(const BatchLossContext& c) const override {
    std::vector<double> scale(c.noise_std.size(), 1.0);
    for (size_t b = 0; b < scale.size() && noise_aware; ++b)
      scale[b] = noise_variance(c.noise_std[b]);
    return masked_mse_rows(c.pred, c.obs, c.mask, scale);
  }
  void check_observations(const Measurement& obs) const override {
    if (noise_aware) (void)noise_variance(obs.noise_std);
  }
  std::string signature() const override {
    return "mse:" + name() + (noise_aware ? ":noise_aware" : "");
  }
};

// Mask-weighted mean of t (differentiable in t), the mask in t's dtype.
// The weight sum stays a 0-dim tensor: dividing by it is dividing by the
// host scalar it used to be read back as (a 0-dim tensor of t's dtype).
fk::Tensor wmean(const fk::Tensor& t, const fk::Tensor& mask) {
  if (!mask.defined()) return fk::mean(t);
  return fk::div(fk::sum(fk::mul(t, mask)), fk::sum(mask).detach());
}

// The mask in dtype on device (undefined: none).
fk::Tensor mask_as(const fk::Tensor& mask, fk::DType dtype, fk::Device device) {
  return mask.defined() ? mask.to(dtype).to(device) : fk::Tensor();
}

// 1 / v as a 0-dim tensor of dtype: the host's 1.0 / v rounded to the dtype
// once, as `fk::mul(t, 1.0 / v)` multiplies by.
fk::Tensor inverse_scale(double v, fk::DType dtype) {
  return fk::full(fk::Dims{}, 1.0 / v, {dtype});
}

fk::Dims trailing_dims(const fk::Tensor& t) {
  std::vector<int64_t> d;
  for (int a = 1; a < t.dim(); ++a) d.push_back(a);
  return fk::Dims(d);
}

// wmean of each row of t (N, ...) with the stacked masks (N, ...), one op
// each way: the per-problem value of a mask-weighted data term.
fk::Tensor wmean_rows(const fk::Tensor& t, const fk::Tensor& mask) {
  if (!mask.defined()) return fk::mean(t, trailing_dims(t));
  fk::Tensor m = mask.to(t.dtype());
  fk::Tensor counts;
  {
    fk::autograd::NoGradGuard ng;
    counts = fk::sum(m, trailing_dims(m));
  }
  return fk::div(fk::sum(fk::mul(t, m), trailing_dims(t)), counts);
}

// The refusals of degenerate observations: raised by the CPU forward, and by
// check_observations on the host ahead of a device run (whose forward reads
// nothing back, so there they would be a non-finite value).
void require_energy(double sum_w_y2) {
  FK_CHECK(sum_w_y2 > 0, "nefi::RelativeMSE", "observations with non-zero energy", "all zeros");
}
void require_mean(double mean_w_y) {
  FK_CHECK(mean_w_y != 0, "nefi::NormalizedMSE", "observations with a non-zero mean", "mean 0");
}

// sum w y, sum w y^2 and sum w over a measurement's cells, in f64 on the host.
struct ObservedSums {
  double wy = 0, wy2 = 0, w = 0;
};
ObservedSums observed_sums(const Measurement& m) {
  const std::vector<double> y = m.data.to_vector<double>();
  const std::vector<double> w =
      m.mask.defined() ? m.mask.to_vector<double>() : std::vector<double>();
  ObservedSums s;
  for (size_t i = 0; i < y.size(); ++i) {
    const double wi = w.empty() ? 1.0 : w[i];
    s.wy += wi * y[i];
    s.wy2 += wi * y[i] * y[i];
    s.w += wi;
  }
  return s;
}

// A double in a signature, exactly (std::to_string keeps 6 decimals).
std::string fmt_exact(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

struct RelativeMseLoss : Loss {
  using Loss::Loss;
  bool is_data() const override { return true; }
  // {y, mask (undefined: none), sum w y^2} in the prediction's dtype (the
  // sum taken in the observations' dtype, then converted, as the host scalar
  // was); on a device {the denominator sums of RowNormalisation}.
  ObservationConstants data_side;
  fk::Tensor forward(const LossContext& c) const override {
    const fk::Tensor& y = c.obs->data;
    const fk::Tensor& mask = c.obs->mask;
    const fk::DType dt = c.pred.dtype();
    if (on_device(c.pred)) {
      RowNormalisation norm;
      norm.denominator_sums = data_side.get(y, mask, dt, c.pred.device(), [&] {
        return std::vector<fk::Tensor>{denominator_sums(c.pred, y, mask, false)};
      })[0];
      return cellwise_loss_device({CellTerm::SquaredError}, c.pred, y, mask, false, norm);
    }
    const std::vector<fk::Tensor> k = data_side.get(y, mask, dt, fk::kCPU, [&] {
      fk::Tensor y2 = fk::square(y);
      const fk::Tensor denom = mask.defined() ? fk::sum(fk::mul(y2, mask)) : fk::sum(y2);
      require_energy(denom.item());
      return std::vector<fk::Tensor>{y.to(dt), mask_as(mask, dt, fk::kCPU), denom.to(dt)};
    });
    fk::Tensor r = fk::square(fk::sub(c.pred, k[0]));
    if (k[1].defined()) r = fk::mul(r, k[1]);
    return fk::div(fk::sum(r), k[2]);
  }
  fk::Tensor forward_rows(const BatchLossContext& c) const override {
    if (on_device(c.pred)) {
      // {y, mask} on the device (converted there to the prediction's dtype
      // by the loss, as from the host), and their denominator sums.
      const std::vector<fk::Tensor> k =
          rows_side.get(c.obs, c.mask, c.pred.dtype(), c.pred.device(), [&] {
            const fk::Tensor y = c.obs.to(c.pred.device());
            const fk::Tensor m = c.mask.defined() ? c.mask.to(c.pred.device()) : fk::Tensor();
            return std::vector<fk::Tensor>{y, m, denominator_sums(c.pred, y, m, true)};
          });
      RowNormalisation norm;
      norm.denominator_sums = k[2];
      return cellwise_loss_device({CellTerm::SquaredError}, c.pred, k[0], k[1], true, norm);
    }
    const fk::Tensor y = c.obs.to(c.pred.dtype());
    fk::Tensor denom;
    {
      fk::autograd::NoGradGuard ng;
      // In the observations' dtype, as forward sums them.
      fk::Tensor y2 = fk::square(c.obs);
      if (c.mask.defined()) y2 = fk::mul(y2, c.mask.to(y2.dtype()));
      denom = fk::sum(y2, trailing_dims(y2));
      for (double d : denom.to_vector<double>()) require_energy(d);
    }
    fk::Tensor r = fk::square(fk::sub(c.pred, y));
    if (c.mask.defined()) r = fk::mul(r, c.mask.to(c.pred.dtype()));
    return fk::div(fk::sum(r, trailing_dims(r)), denom.to(c.pred.dtype()));
  }
  std::string signature() const override { return "relative_mse:" + name(); }
  void check_observations(const Measurement& obs) const override {
    require_energy(observed_sums(obs).wy2);
  }

 private:
  // forward_rows's device constants of the stacked observations: made by
  // the first call that meets them (a solver's eager warm-up step), then kept.
  ObservationConstants rows_side;
  // sum w y^2 per row (the denominators of sum w (p - y)^2 / sum w y^2),
  // left on the device (zero energy gives a non-finite value there).
  static fk::Tensor denominator_sums(const fk::Tensor& p, const fk::Tensor& y,
                                     const fk::Tensor& mask, bool rows) {
    return cellwise_sums_device({CellTerm::Square}, y.to(p.device()), {}, mask, rows);
  }
};

struct LogMseLoss : Loss {
  std::string normalize;
  double eps;
  LogMseLoss(std::string n, std::string norm, double e)
      : Loss(std::move(n)), normalize(std::move(norm)), eps(e) {
    FK_CHECK(normalize == "max" || normalize == "mean" || normalize == "none", "nefi::LogMSE",
             "normalize max, mean or none", normalize);
  }
  // On the CPU {1 / s, log(y / s + eps), the mask} in the prediction's
  // dtype; on a device {the term's {1 / s, eps}}; made once per observation.
  ObservationConstants data_side;
  bool is_data() const override { return true; }
  fk::Tensor forward(const LossContext& c) const override {
    const fk::DType dt = c.pred.dtype();
    if (on_device(c.pred)) {
      const fk::Tensor y = c.obs->data.to(dt);
      CellLoss term{CellTerm::LogError, 1.0, eps};
      if (normalize != "none")
        term.ab = data_side.get(c.obs->data, c.obs->mask, dt, c.pred.device(), [&] {
          return std::vector<fk::Tensor>{
              device_scale_terms(y.to(c.pred.device()), mask_as(c.obs->mask, dt, c.pred.device()))};
        })[0];
      return device_mean(term, c.pred, y, c.obs->mask, false);
    }
    const std::vector<fk::Tensor> k = data_side.get(c.obs->data, c.obs->mask, dt, fk::kCPU, [&] {
      const fk::Tensor y = c.obs->data.to(dt);
      double s = normalize == "none" ? 1.0 : scale(y, mask_as(c.obs->mask, dt, fk::kCPU)).item();
      if (!(s > 0)) s = 1.0;  // NaN too (an all-zero mask's mean)
      const fk::Tensor inv_s = inverse_scale(s, dt);
      return std::vector<fk::Tensor>{inv_s, fk::log(fk::add(fk::mul(fk::relu(y), inv_s), eps)),
                                     mask_as(c.obs->mask, dt, fk::kCPU)};
    });
    fk::Tensor lp = fk::log(fk::add(fk::mul(fk::relu(c.pred), k[0]), eps));
    return wmean(fk::square(fk::sub(lp, k[1])), k[2]);
  }

 private:
  // s over the observed cells, in y's dtype: max |y| where the mask is > 0,
  // or its mask-weighted mean |y| (a masked-out cell, a saturated or dead
  // pixel, set the scale of the cells that are fitted before).
  fk::Tensor scale(const fk::Tensor& y, const fk::Tensor& mask) const {
    fk::autograd::NoGradGuard ng;
    const fk::Tensor a = fk::abs(y);
    if (!mask.defined()) return normalize == "max" ? fk::amax(a) : fk::mean(a);
    if (normalize == "max")
      return fk::amax(
          fk::where(fk::gt(mask, fk::scalar_like(mask, 0.0)), a, fk::scalar_like(a, 0.0)));
    return fk::div(fk::sum(fk::mul(a, mask)), fk::sum(mask));
  }
  // The term's {1 / s, eps} as (2) f64 on y's device: s as scale() takes it,
  // 1 where not > 0, as the host path takes it but without reading s back (a
  // captured step cannot).
  fk::Tensor device_scale_terms(const fk::Tensor& y, const fk::Tensor& mask) const {
    fk::autograd::NoGradGuard ng;
    fk::Tensor s = scale(y, mask).to(fk::DType::F64);
    s = fk::where(fk::le(s, fk::scalar_like(s, 0.0)), fk::scalar_like(s, 1.0), s);
    return fk::stack({fk::div(fk::scalar_like(s, 1.0), s), fk::scalar_like(s, eps)}, 0);
  }
};

struct NormalizedMseLoss : Loss {
  using Loss::Loss;
  bool is_data() const override { return true; }
  // On the CPU {y / mean_w y, the mask} in the prediction's dtype, made once
  // per observation (the device pass takes mean_w y in its own sums).
  ObservationConstants data_side;
  fk::Tensor forward(const LossContext& c) const override {
    if (on_device(c.pred)) return normalized_mse_device(c.pred, c.obs->data, c.obs->mask);
    const fk::DType dt = c.pred.dtype();
    const std::vector<fk::Tensor> k = data_side.get(c.obs->data, c.obs->mask, dt, fk::kCPU, [&] {
      const fk::Tensor y = c.obs->data.to(dt);
      const fk::Tensor m = mask_as(c.obs->mask, dt, fk::kCPU);
      const double ym = wmean(y, m).item();
      require_mean(ym);
      return std::vector<fk::Tensor>{fk::mul(y, inverse_scale(ym, dt)), m};
    });
    fk::Tensor pn = fk::div(c.pred, fk::add(wmean(c.pred, k[1]), 1e-12));
    return wmean(fk::square(fk::sub(pn, k[0])), k[1]);
  }
  void check_observations(const Measurement& obs) const override {
    const ObservedSums s = observed_sums(obs);
    require_mean(s.w > 0 ? s.wy / s.w : 0.0);
  }
};

struct HuberLoss : Loss {
  double delta;
  HuberLoss(std::string n, double d) : Loss(std::move(n)), delta(d) {
    FK_CHECK(d > 0, "nefi::Huber", "delta > 0", fk::to_text(d));
  }
  bool is_data() const override { return true; }
  fk::Tensor forward(const LossContext& c) const override {
    if (on_device(c.pred))
      return device_mean({CellTerm::Huber, delta}, c.pred, c.obs->data, c.obs->mask, false);
    fk::Tensor r = fk::abs(fk::sub(c.pred, c.obs->data.to(c.pred.dtype())));
    fk::Tensor quad = fk::mul(fk::square(r), 0.5);
    fk::Tensor lin = fk::mul(fk::sub(r, 0.5 * delta), delta);
    fk::Tensor h = fk::where(fk::lt(r, fk::scalar_like(r, delta)), quad, lin);
    return wmean(h, c.obs->mask.defined() ? c.obs->mask.to(c.pred.dtype()) : fk::Tensor());
  }
  fk::Tensor forward_rows(const BatchLossContext& c) const override {
    if (on_device(c.pred))
      return device_mean({CellTerm::Huber, delta}, c.pred, c.obs, c.mask, true);
    fk::Tensor r = fk::abs(fk::sub(c.pred, c.obs.to(c.pred.dtype())));
    fk::Tensor quad = fk::mul(fk::square(r), 0.5);
    fk::Tensor lin = fk::mul(fk::sub(r, 0.5 * delta), delta);
    return wmean_rows(fk::where(fk::lt(r, fk::scalar_like(r, delta)), quad, lin), c.mask);
  }
  std::string signature() const override { return "huber:" + name() + ":" + fmt_exact(delta); }
};

struct PoissonNllLoss : Loss {
  double eps;
  PoissonNllLoss(std::string n, double e) : Loss(std::move(n)), eps(e) {}
  bool is_data() const override { return true; }
  fk::Tensor forward(const LossContext& c) const override {
    if (on_device(c.pred))
      return device_mean({CellTerm::PoissonNll, eps}, c.pred, c.obs->data, c.obs->mask, false);
    const fk::Tensor y = c.obs->data.to(c.pred.dtype());
    return wmean(cells(c.pred, y),
                 c.obs->mask.defined() ? c.obs->mask.to(c.pred.dtype()) : fk::Tensor());
  }
  fk::Tensor forward_rows(const BatchLossContext& c) const override {
    if (on_device(c.pred))
      return device_mean({CellTerm::PoissonNll, eps}, c.pred, c.obs, c.mask, true);
    const fk::Tensor y = c.obs.to(c.pred.dtype());
    return wmean_rows(cells(c.pred, y), c.mask);
  }
  std::string signature() const override { return "poisson_nll:" + name() + ":" + fmt_exact(eps); }
  // Each cell's term: p - y log(p + eps) for p >= 0, below 0 its quadratic
  // continuation (nefi/cuda/loss_cells.h: bounded below, where relu(p) in
  // the log let the term fall without bound).
  fk::Tensor cells(const fk::Tensor& p_in, const fk::Tensor& y_in) const {
    // In f64: the curvature (y + eps) / eps^2 passes f32's range for small
    // eps. Each branch sees p only on its own side (else 0), so the log stays
    // finite, the unselected branch's zero gradient meets finite factors (an
    // inf curvature times 0 was NaN everywhere), and at p = 0 the slope is the
    // log's 1 - y / eps (relu's backward gave 0 there).
    const fk::Tensor p = p_in.to(fk::DType::F64), y = y_in.to(fk::DType::F64);
    const fk::Tensor zero = fk::scalar_like(p, 0.0), in_range = fk::ge(p, zero);
    const fk::Tensor up = fk::where(in_range, p, zero), down = fk::where(in_range, zero, p);
    const fk::Tensor above = fk::sub(up, fk::mul(y, fk::log(fk::add(up, eps))));
    const fk::Tensor curvature = fk::mul(fk::add(fk::relu(y), eps), 1 / (eps * eps));
    const fk::Tensor below = fk::add(
        fk::add(fk::mul(y, -std::log(eps)), fk::mul(fk::add(fk::mul(y, -1 / eps), 1.0), down)),
        fk::mul(fk::mul(curvature, 0.5), fk::square(down)));
    return fk::where(in_range, above, below).to(p_in.dtype());
  }
};

}  // namespace

fk::Tensor masked_mse(const fk::Tensor& p, const fk::Tensor& y, const fk::Tensor& mask,
                      double scale) {
  fk::profile::OpScope scope("masked_mse");
  FK_CHECK(p.shape() == y.shape(), "nefi::MSE",
           "prediction and data of one shape " + y.shape().str(), p.shape().str());
  FK_CHECK(!mask.defined() || mask.shape() == y.shape(), "nefi::MSE",
           "a mask of shape " + y.shape().str(), mask.defined() ? mask.shape().str() : "");
  FK_CHECK(p.dtype() == fk::DType::F32 || p.dtype() == fk::DType::F64, "nefi::MSE",
           "an f32/f64 prediction", fk::name(p.dtype()));
  if (on_device(p))
    return cellwise_loss_device({CellTerm::SquaredError}, p, y, mask, false, {{scale}, {}});
  const fk::DType dt = p.dtype();
  fk::Tensor pc, yc, wc;
  {
    fk::autograd::NoGradGuard ng;  // host copies only; the node below records against p
    pc = as_contig(p, dt);
    yc = on_host(y, dt);
    if (mask.defined()) wc = on_host(mask, dt);
  }
  const int64_t n = pc.numel();
  double s = 0, wsum = 0;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* pp = pc.data<T>();
    const T* yy = yc.data<T>();
    const T* ww = wc.defined() ? wc.data<T>() : nullptr;
    for (int64_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(pp[i]) - yy[i];
      const double w = ww ? ww[i] : 1.0;
      s += w * d * d;
      wsum += w;
    }
  };
  if (dt == fk::DType::F64)
    run(double{});
  else
    run(float{});
  FK_CHECK(wsum > 0, "nefi::MSE", "at least one observed cell", "an all-zero mask");
  fk::Tensor out = make_scalar(s / (wsum * scale), dt);
  if (fk::autograd::needs_grad(p)) {
    auto node = std::make_shared<MseBackward>();
    node->p = pc.detach();
    node->y = yc;
    if (wc.defined()) node->w = wc;
    node->wsum = wsum;
    node->scale = scale;
    // pc may be a copy of p (to / contiguous): record against p so the
    // gradient flows back through those differentiable conversions.
    fk::autograd::record(node, {p}, out);
  }
  return out;
}

fk::Tensor masked_mse_rows(const fk::Tensor& p, const fk::Tensor& y, const fk::Tensor& mask,
                           const std::vector<double>& scale) {
  fk::profile::OpScope scope("masked_mse_rows");
  FK_CHECK(p.dim() >= 1 && p.shape() == y.shape() &&
               (!mask.defined() || mask.shape() == y.shape()) &&
               static_cast<int64_t>(scale.size()) == p.size(0),
           "nefi::MSE rows", "prediction, data and mask (N, ...) and N scales",
           p.shape().str() + ", " + y.shape().str() + ", " + fk::to_text(scale.size()));
  FK_CHECK(p.dtype() == fk::DType::F32 || p.dtype() == fk::DType::F64, "nefi::MSE rows",
           "an f32/f64 prediction", fk::name(p.dtype()));
  if (on_device(p))
    return cellwise_loss_device({CellTerm::SquaredError}, p, y, mask, true, {scale, {}});
  const fk::DType dt = p.dtype();
  fk::Tensor pc, yc, wc;
  {
    fk::autograd::NoGradGuard ng;
    pc = as_contig(p, dt).detach();
    yc = on_host(y, dt);
    if (mask.defined()) wc = on_host(mask, dt);
  }
  const int64_t rows = p.size(0), n = p.numel() / std::max<int64_t>(rows, 1);
  std::vector<double> value(rows), wsum(rows);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    for (int64_t b = 0; b < rows; ++b) {
      const T* pp = pc.data<T>() + b * n;
      const T* yy = yc.data<T>() + b * n;
      const T* ww = wc.defined() ? wc.data<T>() + b * n : nullptr;
      double s = 0, ws = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double d = static_cast<double>(pp[i]) - yy[i];
        const double w = ww ? ww[i] : 1.0;
        s += w * d * d;
        ws += w;
      }
      FK_CHECK(ws > 0, "nefi::MSE", "at least one observed cell", "an all-zero mask");
      value[b] = s / (ws * scale[b]);
      wsum[b] = ws;
    }
  };
  dt == fk::DType::F64 ? run(double{}) : run(float{});
  fk::Tensor out = fk::from_vector(value, fk::Dims{rows}).to(dt);
  if (fk::autograd::needs_grad(p)) {
    auto node = std::make_shared<MseRowsBackward>();
    node->p = pc;
    node->y = yc;
    node->w = wc;
    node->wsum = wsum;
    node->scale = scale;
    fk::autograd::record(node, {p}, out);
  }
  return out;
}

LossPtr mse_loss(bool na, std::string n) {
  return std::make_shared<MseLoss>(std::move(n), na);
}
LossPtr relative_mse_loss(std::string n) {
  return std::make_shared<RelativeMseLoss>(std::move(n));
}
LossPtr log_mse_loss(std::string norm, double eps, std::string n) {
  return std::make_shared<LogMseLoss>(std::move(n), std::move(norm), eps);
}
LossPtr normalized_mse_loss(std::string n) {
  return std::make_shared<NormalizedMseLoss>(std::move(n));
}
LossPtr huber_loss(double d, std::string n) {
  return std::make_shared<HuberLoss>(std::move(n), d);
}
LossPtr poisson_nll_loss(double e, std::string n) {
  // > 0, and at least 1e-150, so that the curvature 1 / eps^2 is finite
  FK_CHECK(std::isfinite(e) && e >= 1e-150, "nefi::poisson_nll_loss", "an eps in [1e-150, inf)",
           fk::to_text(e));
  return std::make_shared<PoissonNllLoss>(std::move(n), e);
}

}  // namespace nefi
