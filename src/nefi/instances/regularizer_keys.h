#pragma once
// Reading the regulariser keys the imaging instances share (tv, tv_eps, l1,
// grid_tv, ...) and their measurement noise (noise_std): each value is
// checked, and an error names the key, so a negative weight or noise level or
// a zero smoothing never reaches a solve.
#include <string>

#include "nefi/losses/regularizers.h"
#include "nefi/params.h"

namespace nefi {

// The finite value >= 0 under `key` (a loss weight).
double weight_key(const Params& p, const std::string& key);
// The finite noise_std >= 0 (the measurement's noise; 0: noise-free).
double noise_std_key(const Params& p);
// The smoothing under tv_eps (finite, > 0: at 0 TV's gradient is 0/0 on
// every flat patch).
double tv_eps_key(const Params& p);
// Isotropic TV per unit length with that smoothing.
TVOptions tv_options_from(const Params& p);

}  // namespace nefi
