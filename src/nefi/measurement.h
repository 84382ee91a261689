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

// Throws fk::Error at `where` unless the mask, when there is one, has the
// data's shape, finite weights >= 0 and at least one observed cell (`whose`,
// e.g. "problem 3", is appended to what was given). Every solver (Solver,
// batch_invert on the CPU and on a device) calls it on a stage's measurement
// before its first step: a device loss divides by the mask's weight sum
// without reading it back (loss_device.h), so an all-zero mask would give a
// NaN loss there instead of the error the CPU loss raises.
void check_mask(const Measurement& m, const std::string& where, const std::string& whose = "");

}  // namespace nefi
