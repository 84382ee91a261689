#pragma once
// How well a solve's prediction explains its measurement (the reference's
// data-fit summary of `nefi run`): the mask-weighted RMSE of prediction −
// data (residual_rms), the data PSNR against the observed data's peak
// magnitude, and RMSE / σ when the noise level is known: about 1 at the noise
// floor, well above 1 underfit, below 1 fitting the noise.
#include <optional>
#include <string>

#include "fk/tensor.h"
#include "nefi/measurement.h"

namespace nefi::diagnostics {

struct DataFit {
  double rmse = 0;
  double psnr_db = 0;                     // 20 log10(peak |observed data| / rmse)
  std::optional<double> rmse_over_sigma;  // when the measurement's σ is known and > 0
};

// `prediction`: the solve's (Result::prediction, the trained field through
// the operator before postprocessing); the measurement is resampled to its
// grid when they differ. nullopt without a prediction (a direct method).
std::optional<DataFit> data_fit(const Measurement& m, const fk::Tensor& prediction);

// What chi = RMSE / sigma says (one verdict for every report of a fit):
//   chi < 0.9           below the noise: fitting the noise (or sigma too big)
//   0.9 <= chi <= 1.2   at the noise floor (the band holds an estimated
//                       sigma's error; a given sigma's is 0.9 .. 1.1)
//   up to 2             slightly above the noise floor
//   above 2             underfit: the field does not explain the data
// estimated: sigma came from the data.
std::string misfit_verdict(double chi, bool estimated);

}  // namespace nefi::diagnostics
