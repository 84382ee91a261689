#include "nefi/solve/postprocess.h"

#include <algorithm>
#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/unary.h"

namespace nefi {
namespace {

fk::Tensor& field_of(FieldMap& f, const std::string& name, const char* where) {
  auto it = f.find(name);
  FK_CHECK(it != f.end(), where, "a field named '" + name + "'", "none");
  return it->second;
}

struct EnergyScale : Postprocess {
  std::string field;
  double p;
  EnergyScale(std::string f, double h) : field(std::move(f)), p(h) {
    FK_CHECK(h > 0, "nefi::EnergyScaleCorrection", "a positive homogeneity", fk::to_text(h));
  }
  std::map<std::string, double> apply(FieldMap& fields, fk::Tensor& pred,
                                      const Measurement& obs) const override {
    fk::Tensor& x = field_of(fields, field, "nefi::EnergyScaleCorrection");
    FK_CHECK(pred.defined() && pred.shape() == obs.data.shape(), "nefi::EnergyScaleCorrection",
             "a prediction of shape " + obs.data.shape().str(),
             pred.defined() ? pred.shape().str() : "none");
    Measurement pm;
    pm.data = pred;
    pm.mask = obs.mask;
    const double e_pred = pm.energy(), e_obs = obs.energy();
    // E is a mean square, so F(alpha x) has energy alpha^(2p) E_pred.
    const double alpha = e_pred > 0 ? std::pow(e_obs / e_pred, 0.5 / p) : 1.0;
    x = fk::mul(x, alpha);
    pred = fk::mul(pred, std::pow(alpha, p));
    return {{"scale_factor", alpha}};
  }
};

struct Clip : Postprocess {
  std::string field;
  double lo, hi;
  Clip(std::string f, double l, double h) : field(std::move(f)), lo(l), hi(h) {
    FK_CHECK(lo <= hi, "nefi::Clip", "lo <= hi", fk::to_text(lo) + " > " + fk::to_text(hi));
  }
  std::map<std::string, double> apply(FieldMap& fields, fk::Tensor&,
                                      const Measurement&) const override {
    fk::Tensor& x = field_of(fields, field, "nefi::Clip");
    x = fk::clamp(x, lo, hi);
    return {};
  }
};

struct ThresholdMask : Postprocess {
  std::string field, out;
  double threshold;
  bool relative;
  ThresholdMask(std::string f, double t, bool r, std::string o)
      : field(std::move(f)), out(std::move(o)), threshold(t), relative(r) {}
  std::map<std::string, double> apply(FieldMap& fields, fk::Tensor&,
                                      const Measurement&) const override {
    const fk::Tensor x = field_of(fields, field, "nefi::ThresholdMask");
    double t = threshold;
    if (relative) {
      double mx = 0;
      for (double v : x.to_vector<double>()) mx = std::max(mx, std::abs(v));
      t *= mx;
    }
    fields[out] = fk::gt(x, fk::scalar_like(x, t)).to(x.dtype());
    return {{"threshold", t}};
  }
};

}  // namespace

PostprocessPtr energy_scale_correction(std::string f, double h) {
  return std::make_shared<EnergyScale>(std::move(f), h);
}
PostprocessPtr clip(std::string f, double lo, double hi) {
  return std::make_shared<Clip>(std::move(f), lo, hi);
}
PostprocessPtr threshold_mask(std::string f, double t, bool r, std::string o) {
  return std::make_shared<ThresholdMask>(std::move(f), t, r, std::move(o));
}

}  // namespace nefi
