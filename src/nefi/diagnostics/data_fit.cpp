#include "nefi/diagnostics/data_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "nefi/diagnostics/diagnose.h"

namespace nefi::diagnostics {

std::optional<DataFit> data_fit(const Measurement& m, const fk::Tensor& prediction) {
  if (!prediction.defined() || !m.data.defined()) return std::nullopt;
  DataFit f;
  f.rmse = residual_rms(prediction, m);
  if (!std::isfinite(f.rmse)) return std::nullopt;  // no observed cell
  const std::vector<double> d = m.data.to_vector<double>();
  const std::vector<double> w =
      m.mask.defined() ? m.mask.to_vector<double>() : std::vector<double>(d.size(), 1.0);
  double peak = 0;
  for (size_t i = 0; i < d.size(); ++i)
    if (w[i] > 0) peak = std::max(peak, std::abs(d[i]));
  f.psnr_db = f.rmse > 0 ? 20 * std::log10(peak / f.rmse) : std::numeric_limits<double>::infinity();
  if (m.noise_std > 0) f.rmse_over_sigma = f.rmse / m.noise_std;
  return f;
}

std::string misfit_verdict(double chi, bool estimated) {
  const double top = estimated ? 1.2 : 1.1;
  if (chi < 0.9) return "below the noise: the field fits noise (or sigma is overestimated)";
  if (chi <= top) return "at the noise floor";
  if (chi <= 2.0) return "slightly above the noise floor: more steps or a weaker prior may help";
  return "underfit: the field does not explain the data (budget, prior or model)";
}

}  // namespace nefi::diagnostics
