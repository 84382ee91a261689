#include "nefi/measurement.h"

#include <algorithm>

#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/resample.h"

namespace nefi {

Measurement Measurement::resampled(const fk::Dims& shape) const {
  FK_CHECK(data.defined(), "nefi::Measurement::resampled", "a measurement with data",
           "an empty one");
  if (shape == data.shape()) return *this;
  FK_CHECK(!mask.defined() || mask.shape() == data.shape(), "nefi::Measurement::resampled",
           "a mask of the data's shape " + data.shape().str(), mask.shape().str());
  const fk::DType dt = data.dtype();
  std::vector<double> d = data.to_vector<double>();
  Measurement out;
  out.noise_std = noise_std;
  if (!mask.defined()) {
    out.data = fk::from_vector(area_resample(d, data.shape(), shape), shape).to(dt);
    return out;
  }
  std::vector<double> m = mask.to_vector<double>();
  for (size_t i = 0; i < d.size(); ++i) d[i] *= m[i];
  std::vector<double> dm = area_resample(d, data.shape(), shape);
  std::vector<double> mm = area_resample(m, data.shape(), shape);
  for (size_t i = 0; i < dm.size(); ++i) {
    dm[i] = mm[i] > 0 ? dm[i] / mm[i] : 0.0;
    mm[i] = std::clamp(mm[i], 0.0, 1.0);  // an area mean of weights in [0, 1], to the ulp
  }
  out.data = fk::from_vector(dm, shape).to(dt);
  out.mask = fk::from_vector(mm, shape).to(dt);
  return out;
}

double Measurement::energy() const {
  std::vector<double> d = data.to_vector<double>();
  std::vector<double> m = mask.defined() ? mask.to_vector<double>() : std::vector<double>();
  double s = 0, w = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    const double wi = m.empty() ? 1.0 : m[i];
    s += wi * d[i] * d[i];
    w += wi;
  }
  return w > 0 ? s / w : 0.0;
}

void check_mask(const Measurement& m, const std::string& where, const std::string& whose) {
  if (!m.mask.defined()) return;
  const std::string in = whose.empty() ? "" : " in " + whose;
  FK_CHECK(!m.data.defined() || m.mask.shape() == m.data.shape(), where,
           "a mask of the data's shape " + m.data.shape().str(), m.mask.shape().str() + in);
  double sum = 0;
  for (const double w : m.mask.to_vector<double>()) {
    FK_CHECK(std::isfinite(w) && w >= 0 && w <= 1, where, "mask weights in [0, 1]",
             "a weight " + fk::to_text(w) + in);
    sum += w;
  }
  FK_CHECK(sum > 0, where, "a mask with at least one observed cell", "an all-zero mask" + in);
}

}  // namespace nefi
