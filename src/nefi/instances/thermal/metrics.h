#pragma once
// Thermal-tomography metrics on (nx, ny, nz) diffusivity volumes (C order,
// last axis depth, f64 host vectors):
//   psnr_range      10 log10(range² / mse) with a given range (α_max − α_min),
//                   at most kPsnrCap (nefi/solve/metrics.h) as psnr
//   ssim_depth      nefi::ssim (solve/metrics.h) of the volume at the given
//                   range: the mean over depth slices of the 2-D SSIM of each
//                   (nx, ny) slice, the reference's 7-tap Gaussian window at
//                   the 'valid' positions
//   iou_below       IoU of {α < τ} in prediction and truth (both empty: 1)
//   edge_f1         edges = cells whose gradient magnitude (central
//                   differences in cell units, one-sided at the edges)
//                   exceeds threshold · max |∇ truth|, in both volumes;
//                   precision = predicted edges within `dilate` cells
//                   (Chebyshev) of a true edge, recall the converse; F1 their
//                   harmonic mean (no true and no predicted edges: 1)
//   projections     the reference's App. H.3 projections (nefi 0.1.2):
//     bulk(z)       the lower median (torch's median) of the depth slice z
//     2-D mask      signed deficit s(x, y) = 1 − mean_z α / mean_z bulk;
//                   σ̂ = 1.4826 · lower-median |s − lower-median s| over the
//                   columns; a column is a defect where s > max(k σ̂, 1e-3)
//     depth         per 3-D cell s = 1 − α / bulk(z); σ̂ as above but over the
//                   cells of the columns outside the 2-D mask (all cells when
//                   every column is masked); the depth of a masked column is
//                   the median of the centre depths of its cells with
//                   s > max(k σ̂, 1e-3) (NaN when it has none)
//     truth         the 2-D mask is "any cell of the column below τ", the
//                   depth the median centre depth of those cells
//   iou_2d, dice_2d of the two 2-D masks (both empty: 1)
//   depth errors    over the columns both masks hold with finite depths:
//                   abs_rel mean |d̂ − d| / d, rmse, delta1 the fraction with
//                   max(d̂/d, d/d̂) < 1.25; absent when there is no such column
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fk/shape.h"

namespace nefi::thermal {

double psnr_range(const std::vector<double>& x, const std::vector<double>& gt, double range);
double ssim_depth(const std::vector<double>& x, const std::vector<double>& gt,
                  const fk::Dims& shape, double range);
double iou_below(const std::vector<double>& x, const std::vector<double>& gt, double tau);
double edge_f1(const std::vector<double>& x, const std::vector<double>& gt, const fk::Dims& shape,
               double threshold = 0.5, int dilate = 1);

struct DefectMap {
  std::vector<bool> mask;     // (nx, ny)
  std::vector<double> depth;  // (nx, ny), the median defect-cell depth; NaN if none
};
// The projection of a reconstructed volume (label-free bulk).
DefectMap project_defects(const std::vector<double>& alpha, const fk::Dims& shape, double thickness,
                          double k = 2.0);
// The projection of a true defect mask (C order, (nx, ny, nz)).
DefectMap project_truth(const std::vector<bool>& defects, const fk::Dims& shape, double thickness);

struct DepthErrors {
  int64_t columns = 0;  // columns both maps hold with finite depths
  double abs_rel = 0, rmse = 0, delta1 = 0;
};
DepthErrors depth_errors(const DefectMap& pred, const DefectMap& gt);
double iou_2d(const std::vector<bool>& a, const std::vector<bool>& b);
double dice_2d(const std::vector<bool>& a, const std::vector<bool>& b);

struct VolumeMetricOptions {
  double alpha_min = 0.003, alpha_max = 0.25;
  double iou_tau = 0.03;
  double edge_threshold = 0.5;
  int edge_dilate = 1;
  double projection_k = 2.0;
  double thickness = 1.0;  // H, the slab depth
};
// mse, psnr, ssim, iou, edge_f1, iou_2d, dice_2d and, where a detected column
// meets a true one, depth_abs_rel, depth_rmse, depth_delta1. The true defects
// are the cells with α < iou_tau (the scene's defect mask whenever the defect
// range lies below τ and the bulk above it, as the defaults have it).
std::map<std::string, double> volume_metrics(const std::vector<double>& x,
                                             const std::vector<double>& gt, const fk::Dims& shape,
                                             const VolumeMetricOptions& opt);

}  // namespace nefi::thermal
