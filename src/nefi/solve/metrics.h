#pragma once
// Reconstruction metrics against a ground truth on the same grid (f64, host),
// the reference's definitions:
//   mse, psnr = 10 log10(range^2 / mse) with range = max(gt) - min(gt) (1 for
//   a constant gt), at most kPsnrCap (an exact match, and anything within
//   about 1e-5 of the range of it: a ranking never puts an exact match
//   below a near one),
//   relative_error = ||x - gt|| / ||gt|| (||x|| where gt is all zero: no
//                    scale to divide by, and metrics.json holds no inf),
//   ssim: Gaussian window of `win` taps (sigma 1.5, unit sum; win = min(7,
//   the first two axis lengths) made odd), evaluated at the 'valid' positions
//   only (where the whole window fits), K1 = 0.01, K2 = 0.03, constants
//   (K data_range)^2 with data_range = max(gt) - min(gt) (1 if that is 0)
//   unless given. 1-D: a 1-D window; 2-D: the separable 2-D window; 3-D: the
//   mean of the 2-D SSIM of the slices along the last axis. 4-D and up throw.
//   masked_ssim: the same SSIM map (one value per valid window position, of
//   each slice in 3-D) averaged with weights mask[window centre] (finite,
//   >= 0); an all-ones mask gives ssim. Mask cells within win/2 of an edge
//   centre no window and so carry no weight; a mask without weight at any
//   window centre throws.
//   iou: |A and B| / |A or B| of the masks x > tau, gt > tau with tau =
//   fraction * max(gt) (1 when both masks are empty); iou_above: the same at
//   a given tau.
#include <optional>
#include <vector>

#include "fk/tensor.h"

namespace nefi {

inline constexpr double kPsnrCap = 99.0;  // dB

double mse(const fk::Tensor& x, const fk::Tensor& gt);
double psnr(const fk::Tensor& x, const fk::Tensor& gt);
double relative_error(const fk::Tensor& x, const fk::Tensor& gt);
double iou(const fk::Tensor& x, const fk::Tensor& gt, double fraction);
double iou_above(const fk::Tensor& x, const fk::Tensor& gt, double tau);
double ssim(const fk::Tensor& x, const fk::Tensor& gt, std::optional<double> data_range = {});
// The same on C-ordered host values of `shape`.
double ssim(const std::vector<double>& x, const std::vector<double>& gt, const fk::Dims& shape,
            std::optional<double> data_range = {});
double masked_ssim(const fk::Tensor& x, const fk::Tensor& gt, const fk::Tensor& mask,
                   std::optional<double> data_range = {});
double masked_ssim(const std::vector<double>& x, const std::vector<double>& gt,
                   const std::vector<double>& mask, const fk::Dims& shape,
                   std::optional<double> data_range = {});
// The window length ssim uses on `shape` (7, or the shorter of the first two
// axes made odd); win/2 is its reach either side of its centre.
int ssim_window(const fk::Dims& shape);

}  // namespace nefi
