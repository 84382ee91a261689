#pragma once
// The NV-relaxometry terms (NeTMY) on spectra of shape (n_freq, H, W):
//   NoiseMap         the frequency-integrated maps M = sum_f S(f, r) of the
//                    prediction and the data compared as a NormalizedMSE,
//                    mean (M_p / mean M_p - M_y / mean M_y)^2 (R_nm; the
//                    scale of rho is left to EnergyScaleCorrection)
//   DirectDensity    R_ds: mean (rho / max rho - M_y / max M_y)^2, the
//                    density pulled toward the data's own noise map (a
//                    direct estimate, sharp only when z0 is about a pixel)
//   NormalizedL1     mean rho / max rho, a scale-free sparsity prior
//   ScaledRelativeMSE  sum ((p - y)/s)^2 / sum (y/s)^2, s = max |y|: the
//                    relative MSE with the data scaled before squaring, so
//                    SI spectra (~1e30) do not overflow f32
// The NV data are full frames: these terms take no mask.
// On any device the terms are fk ops on the prediction or field and 0-dim
// tensors (no value is read on the host), so a device step using them can be
// captured as one CUDA graph; what depends on the data alone (M_y's
// normalised map, s, y / s and its energy) is made once per observation
// (observation_constants.h). The CPU results are bitwise the per-step
// host-scalar form they replace (the same ops in the same order, the host's
// 1 / x rounded to the dtype once). On a device, data that fail the CPU's
// checks (a zero-mean or non-positive noise map, all-zero data) would give a
// non-finite value from forward; the solvers refuse them with the CPU's
// fk::Error at each stage's setup (Loss::check_observations).
// The reference names these terms but does not define the last two in the
// inventory; these are this project's reading of them.
#include "nefi/losses/loss.h"

namespace nefi {

LossPtr noise_map_loss(std::string name = "noise_map");
LossPtr direct_density_loss(std::string field = "rho", std::string name = "direct_density");
LossPtr normalized_l1_loss(std::string field = "rho", std::string name = "sparsity");
LossPtr scaled_relative_mse_loss(std::string name = "relative_mse");

}  // namespace nefi
