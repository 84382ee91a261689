#pragma once
// Reconstruction metrics against a ground truth on the same grid (f64, host):
//   mse, psnr = 10 log10(range^2 / mse) with range = max(gt) - min(gt),
//   relative_error = ||x - gt|| / ||gt||,
//   ssim with a Gaussian window (sigma 1.5, radius 5 cells, truncated at the
//   edges), K1 = 0.01, K2 = 0.03, for 1-D and 2-D grids (3-D: mean over slices).
#include "fk/tensor.h"

namespace nefi {

double mse(const fk::Tensor& x, const fk::Tensor& gt);
double psnr(const fk::Tensor& x, const fk::Tensor& gt);
double relative_error(const fk::Tensor& x, const fk::Tensor& gt);
double ssim(const fk::Tensor& x, const fk::Tensor& gt);

}  // namespace nefi
