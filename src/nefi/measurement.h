#pragma once
// Measurement: observed data on a grid, an optional mask of per-cell weights in
// [0, 1] (fractional after coarsening: a coarse cell half covered by observed
// fine cells has weight 0.5), and the noise level when it is known.
#include <string>

#include "fk/tensor.h"

namespace nefi {

struct Measurement {
  fk::Tensor data;        // (*shape), real
  fk::Tensor mask;        // undefined (all observed) or (*shape), same dtype as data
  double noise_std = -1;  // < 0: unknown

  bool has_noise() const { return noise_std >= 0; }
  // The measurement at another grid of the same box: data and mask are area
  // averaged; data as mask-weighted means, so unobserved cells never leak in.
  Measurement resampled(const fk::Dims& shape) const;
  // Mean of data^2 over observed cells (the energy EnergyScaleCorrection compares).
  double energy() const;
};

}  // namespace nefi
