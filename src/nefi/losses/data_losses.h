#pragma once
// Data-fidelity terms: compare ctx.pred with ctx.obs (mask-weighted means).
//   MSE                 mean w (p - y)^2, one fused op forward and backward;
//                       noise_aware divides by sigma^2 (chi^2 per cell)
//   RelativeMSE         sum w (p - y)^2 / sum w y^2
//   LogMSE              mean w (log(p/s + eps) - log(y/s + eps))^2, s = max|y|
//                       ("max"), mean|y| ("mean") or 1 ("none")  (NeTMY Eq. 19);
//                       with a mask over the observed cells (max where w > 0,
//                       mean weighted by w)
//   NormalizedMSE       mean w (p/mean p - y/mean y)^2             (NeTMY R_nm)
//   Huber(delta)        mean w huber_delta(p - y)
//   PoissonNLL          mean w (p - y log(p + eps)), p the expected counts
//                       (below 0 a quadratic: bounded, pushing p back up)
// What a term derives from the observations alone (RelativeMSE's energy,
// LogMSE's s and log-data, NormalizedMSE's y / mean y) is made once per
// observation (observation_constants.h), bitwise what the step computed.
#include "nefi/losses/loss.h"

namespace nefi {

LossPtr mse_loss(bool noise_aware = false, std::string name = "mse");
LossPtr relative_mse_loss(std::string name = "relative_mse");
LossPtr log_mse_loss(std::string normalize = "max", double eps = 1e-10,
                     std::string name = "log_mse");
LossPtr normalized_mse_loss(std::string name = "normalized_mse");
LossPtr huber_loss(double delta = 1.0, std::string name = "huber");
LossPtr poisson_nll_loss(double eps = 1e-8, std::string name = "poisson_nll");

// The fused masked MSE itself: mean over cells of w (p - y)^2 / scale, where
// w = mask (or 1) and the mean divides by sum w. Differentiable in p. Runs
// on p's device; y and mask on another are copied there.
fk::Tensor masked_mse(const fk::Tensor& p, const fk::Tensor& y, const fk::Tensor& mask,
                      double scale = 1.0);
// The same for N problems at once: p, y, mask (N, ...), one scale per row;
// returns (N) with row b bitwise masked_mse(p[b], y[b], mask[b], scale[b]).
fk::Tensor masked_mse_rows(const fk::Tensor& p, const fk::Tensor& y, const fk::Tensor& mask,
                           const std::vector<double>& scale);

}  // namespace nefi
