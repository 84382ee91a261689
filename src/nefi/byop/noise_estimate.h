#pragma once
// The noise level of a measurement from the data alone, for a problem whose
// sigma nobody gave: a robust (median absolute deviation) estimate of white
// noise on top of a signal that is smooth on the scale of a few cells.
//   1-D   fourth differences y[i-2] - 4y[i-1] + 6y[i] - 4y[i+1] + y[i+2]
//         (a cubic passes untouched; white noise gains sqrt(70))
//   >=2-D Immerkaer's mask [1 -2 1; -2 4 -2; 1 -2 1] over the last two axes
//         of every slice (a bilinear-plus-quadratic surface passes; white
//         noise gains 6), or the fourth differences along one of those axes
//         where they read below 0.8 of it (data rough along one axis, a
//         sinogram of few views, smooth along the other)
// sigma = 1.4826 * median |filtered| / gain, over the stencils whose cells
// are all observed (mask > 0). Structure the stencils do not cancel (edges,
// texture at the cell scale) biases it up: it is the noise floor an
// inversion should not fit below, not a measurement of the noise.
#include <optional>

#include "fk/tensor.h"

namespace nefi {

struct NoiseEstimate {
  double sigma = 0;
  int64_t stencils = 0;  // how many filtered values the median took
};

// data: real, any shape with at least 5 cells along the last axis (1-D) or
// 3 x 3 in the last two; mask: undefined or data's shape. Throws fk::Error
// when no stencil fits in the observed cells.
NoiseEstimate estimate_noise(const fk::Tensor& data, const fk::Tensor& mask = {});

}  // namespace nefi
