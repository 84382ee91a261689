#include "nefi/instances/nv_larmor_profile.h"

#include <algorithm>
#include <cmath>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"

namespace nefi {
namespace {

class LarmorProfile : public Postprocess {
 public:
  LarmorProfile(std::shared_ptr<const NVOperator> op, LarmorProfileOptions o)
      : op_(std::move(op)), o_(o) {
    FK_CHECK(op_ != nullptr, "nefi::larmor_profile", "an NV operator", "none");
    FK_CHECK(o_.band_lo < o_.band_hi, "nefi::larmor_profile", "a band lo < hi",
             fk::to_text(o_.band_lo) + ", " + fk::to_text(o_.band_hi));
    FK_CHECK(o_.tau >= 0 && o_.tau < 1, "nefi::larmor_profile", "tau in [0, 1)",
             fk::to_text(o_.tau));
    FK_CHECK(o_.eps > 0, "nefi::larmor_profile", "eps > 0", fk::to_text(o_.eps));
    FK_CHECK(o_.scan >= 2, "nefi::larmor_profile", "at least 2 scan samples", fk::to_text(o_.scan));
  }

  std::map<std::string, double> apply(FieldMap& fields, fk::Tensor& pred,
                                      const Measurement& obs) const override {
    fk::autograd::NoGradGuard ng;
    auto rho_it = fields.find("rho"), wl_it = fields.find("omega_L");
    FK_CHECK(rho_it != fields.end() && wl_it != fields.end(), "nefi::larmor_profile",
             "fields 'rho' and 'omega_L'", "a field missing");
    const fk::Tensor rho = rho_it->second.to(fk::DType::F64);
    const fk::Dims& shape = rho.shape();
    const int64_t nf = static_cast<int64_t>(op_->physics().freqs.size());
    FK_CHECK(shape.size() == 2 && obs.data.shape() == fk::Dims({nf, shape[0], shape[1]}),
             "nefi::larmor_profile", "rho (H, W) and data (n_freq, H, W)",
             shape.str() + " and " + obs.data.shape().str());
    fk::Tensor spatial = op_->convolve(rho);
    if (op_->mode() == NVMode::kF1) spatial = fk::mul(spatial, spatial);
    const auto c = spatial.to_vector<double>(), r = rho.to_vector<double>();
    const auto y = obs.data.to_vector<double>();
    std::vector<double> w = wl_it->second.to_vector<double>();
    double s = 0, rmax = 0;
    for (double v : y) s = std::max(s, std::abs(v));
    for (double v : r) rmax = std::max(rmax, v);
    if (!(s > 0) || !(rmax > 0)) return {{"larmor_profile_pixels", 0.0}};
    const int64_t hw = shape.numel();
    int64_t count = 0;
    double before = 0, after = 0;
    for (int64_t k = 0; k < hw; ++k) {
      if (!(r[k] > o_.tau * rmax)) continue;
      auto misfit = [&](double wl) { return pixel_misfit(c[k], y, k, hw, s, wl); };
      const double w0 = misfit(w[k]);
      const double best = best_larmor(misfit);
      ++count;
      before += w0;
      if (misfit(best) < w0) w[k] = best;
      after += misfit(w[k]);
    }
    fk::Tensor& wl = wl_it->second;
    wl = fk::from_vector(w, shape).to(wl.dtype());
    pred = op_->spectra(rho, fk::from_vector(w, shape))
               .to(pred.defined() ? pred.dtype() : fk::DType::F32);
    const double n = std::max<int64_t>(count, 1);
    return {{"larmor_profile_pixels", static_cast<double>(count)},
            {"larmor_profile_misfit_before", before / n},
            {"larmor_profile_misfit_after", after / n}};
  }

 private:
  // sum_f (log(c L(f; wl)/s + eps) - log(y(f)/s + eps))^2 at pixel k.
  double pixel_misfit(double c, const std::vector<double>& y, int64_t k, int64_t hw, double s,
                      double wl) const {
    const NVPhysics& ph = op_->physics();
    double m = 0;
    for (size_t f = 0; f < ph.freqs.size(); ++f) {
      const double d = (ph.freqs[f] - wl) / ph.gamma;
      const double p = std::max(c, 0.0) / (1 + d * d);
      const double e =
          std::log(p / s + o_.eps) - std::log(std::max(y[f * hw + k], 0.0) / s + o_.eps);
      m += e * e;
    }
    return m;
  }

  // The band sample of least misfit, then a golden-section search over the
  // bracket of its two neighbours.
  template <class F>
  double best_larmor(const F& misfit) const {
    const double h = (o_.band_hi - o_.band_lo) / (o_.scan - 1);
    int best = 0;
    double fbest = misfit(o_.band_lo);
    for (int i = 1; i < o_.scan; ++i) {
      const double v = misfit(o_.band_lo + i * h);
      if (v < fbest) fbest = v, best = i;
    }
    double a = o_.band_lo + std::max(best - 1, 0) * h;
    double b = o_.band_lo + std::min(best + 1, o_.scan - 1) * h;
    const double g = (std::sqrt(5.0) - 1) / 2;
    double x1 = b - g * (b - a), x2 = a + g * (b - a), f1 = misfit(x1), f2 = misfit(x2);
    for (int it = 0; it < 40; ++it) {
      if (f1 < f2) {
        b = x2, x2 = x1, f2 = f1, x1 = b - g * (b - a), f1 = misfit(x1);
      } else {
        a = x1, x1 = x2, f1 = f2, x2 = a + g * (b - a), f2 = misfit(x2);
      }
    }
    const double xm = 0.5 * (a + b);
    return misfit(xm) < fbest ? xm : o_.band_lo + best * h;
  }

  std::shared_ptr<const NVOperator> op_;
  LarmorProfileOptions o_;
};

}  // namespace

PostprocessPtr larmor_profile(std::shared_ptr<const NVOperator> op, LarmorProfileOptions options) {
  return std::make_shared<LarmorProfile>(std::move(op), options);
}

}  // namespace nefi
