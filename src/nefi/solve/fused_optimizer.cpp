#include "nefi/solve/fused_optimizer.h"

#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/solve/adam_device.h"
#include "nefi/solve/device_step_slots.h"

namespace nefi {
namespace {

void check_lr(double lr, const char* where) {
  FK_CHECK(std::isfinite(lr) && lr >= 0, where, "a finite learning rate >= 0", fk::to_text(lr));
}

// Sum of squares of g's elements [lo, lo + n).
template <typename T>
double sum_sq(const fk::Tensor& g, int64_t lo, int64_t n) {
  const T* p = g.data<T>() + lo;
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(p[i]) * p[i];
  return s;
}

// The heavy-ball SGD step on n elements (OptimizerOptions::sgd); b is the
// momentum buffer, t the step count (the first step's buffer is the gradient).
template <typename T>
void sgd_update(T* x, const T* gg, T* b, int64_t n, double lr, double clip,
                const OptimizerOptions& o, int64_t t) {
  const T c = static_cast<T>(clip), wd = static_cast<T>(o.weight_decay);
  const T mu = static_cast<T>(t == 1 ? 0.0 : o.momentum), l = static_cast<T>(lr);
  const bool decays = o.weight_decay != 0.0;  // 0 * inf would make an infinite parameter NaN
  for (int64_t i = 0; i < n; ++i) {
    const T gi = decays ? gg[i] * c + wd * x[i] : gg[i] * c;
    b[i] = mu * b[i] + gi;
    x[i] -= l * b[i];
  }
}

template <typename T>
void update(fk::Tensor& p, const fk::Tensor& g, fk::Tensor& m, fk::Tensor& v, int64_t lo, int64_t n,
            double lr, double clip, const OptimizerOptions& o, int64_t t) {
  if (o.sgd)
    sgd_update(p.data<T>() + lo, g.data<T>() + lo, m.data<T>() + lo, n, lr, clip, o, t);
  else
    adam_update(p.data<T>() + lo, g.data<T>() + lo, m.data<T>() + lo, v.data<T>() + lo, n, lr, clip,
                o, t);
}

}  // namespace

AdamScalars adam_scalars(double lr, double clip, const OptimizerOptions& o, int64_t t) {
  const double bc1 = 1.0 - std::pow(o.beta1, static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(o.beta2, static_cast<double>(t));
  return {clip,
          o.decoupled ? 0.0 : o.weight_decay,
          o.decoupled ? 1.0 - lr * o.weight_decay : 1.0,
          o.beta1,
          o.beta2,
          lr / bc1,
          1.0 / std::sqrt(bc2),
          o.eps};
}

template <typename T>
void adam_update(T* x, const T* gg, T* mm, T* vv, int64_t n, double lr, double clip,
                 const OptimizerOptions& o, int64_t t) {
  const AdamScalars s = adam_scalars(lr, clip, o, t);
  // All arithmetic in T so the loop vectorises (sqrt/div packed; the target
  // is built with -fno-math-errno).
  const T b1 = static_cast<T>(s.b1), b2 = static_cast<T>(s.b2);
  const T c = static_cast<T>(s.clip), l2t = static_cast<T>(s.l2), dec = static_cast<T>(s.decay);
  const T st = static_cast<T>(s.step), ib = static_cast<T>(s.inv_sqrt_bc2);
  const T eps = static_cast<T>(s.eps);
  // 1 - b in f64, then rounded: in f32 1 - 0.99999 is 7e-4 off, every step
  // that much too long against the f64 bias correction.
  const T omb1 = static_cast<T>(1.0 - s.b1), omb2 = static_cast<T>(1.0 - s.b2);
  const bool decays = l2t != T(0);  // 0 * inf would make an infinite parameter NaN
  for (int64_t i = 0; i < n; ++i) {
    const T gi = decays ? gg[i] * c + l2t * x[i] : gg[i] * c;
    mm[i] = b1 * mm[i] + omb1 * gi;
    vv[i] = b2 * vv[i] + omb2 * gi * gi;
    x[i] = x[i] * dec - st * mm[i] / (std::sqrt(vv[i]) * ib + eps);
  }
}
template void adam_update<float>(float*, const float*, float*, float*, int64_t, double, double,
                                 const OptimizerOptions&, int64_t);
template void adam_update<double>(double*, const double*, double*, double*, int64_t, double, double,
                                  const OptimizerOptions&, int64_t);

FusedOptimizer::FusedOptimizer(std::vector<fk::Tensor> params, OptimizerOptions opt)
    : params_(std::move(params)), opt_(opt) {
  const OptimizerOptions& o = opt_;
  FK_CHECK(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1 && o.eps > 0 &&
               std::isfinite(o.eps) && o.weight_decay >= 0 && std::isfinite(o.weight_decay) &&
               o.momentum >= 0 && o.momentum <= 1 && !std::isnan(o.grad_clip),
           "nefi::FusedOptimizer",
           "betas in [0, 1), a finite eps > 0, weight_decay >= 0, momentum in [0, 1], a clip",
           "betas " + fk::to_text(o.beta1) + ", " + fk::to_text(o.beta2) + ", eps " +
               fk::to_text(o.eps) + ", weight_decay " + fk::to_text(o.weight_decay) +
               ", momentum " + fk::to_text(o.momentum) + ", grad_clip " + fk::to_text(o.grad_clip));
  for (const fk::Tensor& p : params_) {
    FK_CHECK(p.is_contiguous() && (p.dtype() == fk::DType::F32 || p.dtype() == fk::DType::F64),
             "nefi::FusedOptimizer", "contiguous f32/f64 parameters",
             std::string(fk::name(p.dtype())) + " " + p.shape().str());
    // One device for all: the global norm is one reduction there.
    FK_CHECK(p.device() == params_.front().device(), "nefi::FusedOptimizer",
             "all parameters on " + params_.front().device().str(), p.device().str());
  }
  reset_state();
}

void FusedOptimizer::load_state(const std::vector<fk::Tensor>& m, const std::vector<fk::Tensor>& v,
                                int64_t t) {
  FK_CHECK(m.size() == params_.size() && v.size() == params_.size() && t >= 0,
           "FusedOptimizer::load_state", fk::to_text(params_.size()) + " moment pairs",
           fk::to_text(m.size()) + " and " + fk::to_text(v.size()));
  for (size_t i = 0; i < params_.size(); ++i) {
    FK_CHECK(m[i].shape() == params_[i].shape() && v[i].shape() == params_[i].shape() &&
                 m[i].dtype() == params_[i].dtype() && v[i].dtype() == params_[i].dtype(),
             "FusedOptimizer::load_state",
             "moments shaped like parameter " + fk::to_text(i) + " " + params_[i].shape().str(),
             m[i].shape().str());
    m_[i].copy_(m[i]);
    v_[i].copy_(v[i]);
  }
  t_ = t;
}

void FusedOptimizer::reset_state() {
  m_.clear();
  v_.clear();
  for (const fk::Tensor& p : params_) {
    m_.push_back(fk::zeros(p.shape(), {p.dtype(), p.device()}));
    v_.push_back(fk::zeros(p.shape(), {p.dtype(), p.device()}));
  }
  t_ = 0;
}

void FusedOptimizer::set_lr_segments(size_t i, std::vector<LrSegment> segments) {
  FK_CHECK(i < params_.size(), "FusedOptimizer::set_lr_segments",
           "a parameter index below " + fk::to_text(params_.size()), fk::to_text(i));
  FK_CHECK(on_cpu() || segments.empty(), "FusedOptimizer::set_lr_segments",
           "parameters on the CPU (a device step has one learning rate)",
           params_[i].device().str());
  int64_t at = 0;
  for (const LrSegment& s : segments) {
    FK_CHECK(
        s.offset == at && s.length > 0 && s.mult >= 0, "FusedOptimizer::set_lr_segments",
        "consecutive segments from 0 with multipliers >= 0",
        "[" + fk::to_text(s.offset) + ", +" + fk::to_text(s.length) + ") x " + fk::to_text(s.mult));
    at += s.length;
  }
  FK_CHECK(segments.empty() || at == params_[i].numel(), "FusedOptimizer::set_lr_segments",
           "segments covering all " + fk::to_text(params_[i].numel()) + " elements",
           fk::to_text(at));
  if (segments_.size() < params_.size()) segments_.resize(params_.size());
  segments_[i] = std::move(segments);
}

void FusedOptimizer::zero_grad() {
  for (const fk::Tensor& p : params_) p.set_grad(fk::Tensor());
}

// The gradients step() updates with: p's dtype, contiguous.
std::vector<fk::Tensor> FusedOptimizer::update_grads() const {
  std::vector<fk::Tensor> grads;
  for (const fk::Tensor& p : params_) {
    fk::Tensor g = p.grad();
    if (g.defined() && (g.dtype() != p.dtype() || !g.is_contiguous()))
      g = g.to(p.dtype()).contiguous();
    grads.push_back(g);
  }
  return grads;
}

AdamScalars FusedOptimizer::begin_device_step(double lr) {
  FK_CHECK(!on_cpu(), "FusedOptimizer::begin_device_step", "parameters on a CUDA device",
           "the CPU");
  FK_CHECK(!opt_.sgd, "FusedOptimizer::begin_device_step", "Adam(W) (SGD has no device step)",
           "sgd");
  check_lr(lr, "FusedOptimizer::begin_device_step");
  ++t_;
  return adam_scalars(lr, 1.0, opt_, t_);
}

void FusedOptimizer::enqueue_device_step(double* block) {
  fk::profile::OpScope scope("adam_step_gated");
  const std::vector<fk::Tensor> grads = update_grads();
  bool any = false;
  for (const fk::Tensor& g : grads) any = any || g.defined();
  if (!any) return;
  enqueue_grad_sq_sum(grads, block + kSlotSqSum);
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!grads[i].defined()) continue;  // left alone, as in step()
    adam_update_device_gated(params_[i], grads[i], m_[i], v_[i], block);
    params_[i].bump_version();
  }
}

double FusedOptimizer::step(double lr) {
  check_lr(lr, "FusedOptimizer::step");
  FK_CHECK(on_cpu() || !opt_.sgd, "FusedOptimizer::step", "Adam(W) on a device (SGD is CPU only)",
           "sgd on " + params_.front().device().str());
  // The runs each parameter updates: its segments, or all of it at 1.
  std::vector<LrSegment> whole(1);
  auto runs = [&](size_t i) -> const std::vector<LrSegment>& {
    if (i < segments_.size() && !segments_[i].empty()) return segments_[i];
    whole[0] = {0, params_[i].numel(), 1.0};
    return whole;
  };
  std::vector<fk::Tensor> grads;
  double sq = 0;
  {
    fk::profile::OpScope scope("adam_grad_norm");
    grads = update_grads();
    for (size_t i = 0; i < grads.size() && on_cpu(); ++i)
      if (grads[i].defined())
        for (const LrSegment& r : runs(i))  // frozen runs are outside the norm
          if (r.mult > 0)
            sq += params_[i].dtype() == fk::DType::F64
                      ? sum_sq<double>(grads[i], r.offset, r.length)
                      : sum_sq<float>(grads[i], r.offset, r.length);
    if (!on_cpu()) sq = device_grad_sq_sum(grads);
  }
  const double norm = std::sqrt(sq);
  const double clip =
      (opt_.grad_clip > 0 && norm > opt_.grad_clip) ? opt_.grad_clip / (norm + 1e-6) : 1.0;
  ++t_;
  for (size_t i = 0; i < params_.size(); ++i) {
    // A parameter without a gradient is left alone (no decay, no moment
    // update), as PyTorch's Adam(W) does; but the step count is shared
    // (torch's is per parameter): one that missed steps takes its next ones
    // with bias correction for all, shorter than torch's. A solve's loss
    // reaches every parameter at every step, so there the two agree.
    if (!grads[i].defined()) continue;
    fk::profile::OpScope scope("adam_step");
    if (!on_cpu()) {
      adam_update_device(params_[i], grads[i], m_[i], v_[i], lr, clip, opt_, t_);
    } else {
      for (const LrSegment& r : runs(i)) {
        if (r.mult == 0) continue;
        if (params_[i].dtype() == fk::DType::F64)
          update<double>(params_[i], grads[i], m_[i], v_[i], r.offset, r.length, lr * r.mult, clip,
                         opt_, t_);
        else
          update<float>(params_[i], grads[i], m_[i], v_[i], r.offset, r.length, lr * r.mult, clip,
                        opt_, t_);
      }
    }
    params_[i].bump_version();
  }
  return norm;
}

}  // namespace nefi
