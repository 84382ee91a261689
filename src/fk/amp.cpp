#include "fk/amp.h"

#include <cmath>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/knobs.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"

namespace fk::amp {
namespace {

thread_local std::optional<DType> tl_autocast;

Knob kAllowTf32("FK_ALLOW_TF32", KnobType::Bool, "0",
                "CUDA: let f32 GEMMs use TF32 tensor cores (no effect on the CPU)",
                KnobRead::Latched);

// Whether every element of a contiguous buffer is finite. Accumulating with &
// rather than returning early keeps the loop branch-free, so it vectorises.
template <typename R>
bool all_finite_real(const R* p, int64_t n) {
  bool ok = true;
  for (int64_t i = 0; i < n; ++i) ok &= std::isfinite(p[i]);
  return ok;
}

}  // namespace

bool all_finite(const Tensor& t_in) {
  if (is_integral(t_in.dtype())) return true;
  if (t_in.device().is_cuda()) {
    // On the device: |x| * 0 is 0 for a finite x and nan otherwise, so the
    // sum is 0 exactly when every element is finite (and cannot overflow).
    // One reduction and one host read, recording nothing.
    autograd::NoGradGuard no_grad;
    return fk::sum(fk::mul(fk::abs(t_in), 0.0)).item() == 0.0;
  }
  Tensor t = is_half(t_in.dtype()) ? t_in.to(DType::F32) : t_in.contiguous();
  switch (t.dtype()) {
    case DType::F32:
      return all_finite_real(t.data<float>(), t.numel());
    case DType::F64:
      return all_finite_real(t.data<double>(), t.numel());
    case DType::C64:
      return all_finite_real(reinterpret_cast<const float*>(t.data<c64>()), 2 * t.numel());
    case DType::C128:
      return all_finite_real(reinterpret_cast<const double*>(t.data<c128>()), 2 * t.numel());
    default:
      return true;
  }
}

std::optional<DType> autocast_dtype() {
  return tl_autocast;
}

AutocastGuard::AutocastGuard(DType dtype) : prev_(tl_autocast) {
  FK_CHECK(dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F32, "AutocastGuard",
           "dtype f16 or bf16 (or f32 to disable autocast)", name(dtype));
  tl_autocast = dtype == DType::F32 ? std::nullopt : std::optional<DType>(dtype);
}

AutocastGuard::~AutocastGuard() {
  tl_autocast = prev_;
}

GradScaler::GradScaler(GradScalerOptions options) : options_(options), scale_(options.init_scale) {
  FK_CHECK(options.init_scale > 0 && std::isfinite(options.init_scale), "GradScaler",
           "a positive finite init_scale", fk::to_text(options.init_scale));
  FK_CHECK(options.growth_factor > 1, "GradScaler", "growth_factor > 1",
           fk::to_text(options.growth_factor));
  FK_CHECK(options.backoff_factor > 0 && options.backoff_factor < 1, "GradScaler",
           "backoff_factor in (0, 1)", fk::to_text(options.backoff_factor));
  FK_CHECK(options.growth_interval > 0, "GradScaler", "growth_interval > 0",
           fk::to_text(options.growth_interval));
}

Tensor GradScaler::scale(const Tensor& loss) const {
  FK_CHECK(loss.defined(), "GradScaler::scale", "a defined loss tensor", "an undefined tensor");
  FK_CHECK(is_inexact(loss.dtype()), "GradScaler::scale", "a floating loss", name(loss.dtype()));
  const Tensor& l = is_half(loss.dtype()) ? loss.to(DType::F32) : loss;
  return mul(l, scale_);
}

bool GradScaler::unscale_and_check(std::vector<Tensor>& grads) const {
  autograd::NoGradGuard no_grad;
  const double inv = 1.0 / scale_;
  bool finite = true;
  for (Tensor& g : grads) {
    if (!g.defined()) continue;
    if (is_half(g.dtype())) {
      // In f32, rounded once: a half-typed scalar 1/scale is 0 past f16's
      // 2^-24 (scale 2^25, reached after 9 growths) and inexact for any
      // scale not a power of two.
      g.copy_(mul(g.to(DType::F32), inv));
    } else {
      mul_(g, inv);
    }
    finite &= all_finite(g);
  }
  return finite;
}

void GradScaler::update(bool found_inf) {
  if (found_inf) {
    scale_ *= options_.backoff_factor;
    growth_tracker_ = 0;
    return;
  }
  if (++growth_tracker_ >= options_.growth_interval) {
    // An inf scale would make every later step overflow; stay at the largest finite one.
    double grown = scale_ * options_.growth_factor;
    if (std::isfinite(grown)) scale_ = grown;
    growth_tracker_ = 0;
  }
}

void GradScaler::restore(double scale, int64_t growth_tracker) {
  FK_CHECK(
      scale > 0 && std::isfinite(scale) && growth_tracker >= 0 &&
          growth_tracker < options_.growth_interval,
      "GradScaler::restore",
      "a positive finite scale and a tracker in [0, " + fk::to_text(options_.growth_interval) + ")",
      "scale " + fk::to_text(scale) + ", tracker " + fk::to_text(growth_tracker));
  scale_ = scale;
  growth_tracker_ = growth_tracker;
}

void set_allow_tf32(bool allow) {
  kAllowTf32.set_override(allow ? "1" : "0");
}

bool allow_tf32() {
  return kAllowTf32.as_bool();
}

}  // namespace fk::amp
