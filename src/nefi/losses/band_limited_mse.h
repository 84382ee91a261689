#pragma once
// Band-limited relative MSE (the reference's BandLimitedMSE): the relative
// trace misfit Σ w (Mp − My)² / Σ w (My)² after a zero-phase low-pass M
// along the last (time) axis, so a waveform inversion can fit the low
// frequencies first (frequency continuation). The mask must be constant
// along time per trace (a muted pair), so filtering commutes with it:
// check_observations refuses another.
// M, the filtered data and their energy are made once per observation, on
// the prediction's device (observation_constants.h); a step is two matmuls
// and reductions to a 0-dim value divided by a 0-dim energy, with no host
// read (capturable on a device; there, data without energy below f_cut give
// a non-finite value instead of the CPU's fk::Error). The CPU value is
// bitwise the per-step form it replaces.
#include <cstdint>
#include <string>
#include <vector>

#include "nefi/losses/loss.h"

namespace nefi {

// M (n × n, row-major) of the zero-phase low-pass with gain
// 1 / (1 + (f / f_cut)^8) applied on a zero-padded length-2n DFT: symmetric
// Toeplitz, M[j][i] = (1/2n) Σ_k H(f_k) cos(2π k (j − i) / 2n).
std::vector<double> lowpass_matrix(int64_t n, double dt, double f_cut);

// dt: the sampling interval of the last axis; f_cut > 0 (else fk::Error).
LossPtr band_limited_mse_loss(double dt, double f_cut, std::string name = "fit_lo");

}  // namespace nefi
