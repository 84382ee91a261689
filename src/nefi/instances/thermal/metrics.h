#pragma once
// Thermal-tomography metrics on (nx, ny, nz) diffusivity volumes (C order,
// last axis depth, f64 host vectors):
//   psnr_range      10 log10(range² / mse) with a given range (α_max − α_min)
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
//   project_defects App. H-style projection of a volume to a defect map: per
//                   depth slice the bulk is the slice median, the signed
//                   deficit d = bulk − α, σ̂ = 1.4826 · MAD(d) over the
//                   volume; a cell is defective where d > k σ̂ (and d > 0);
//                   a column (x, y) is a defect where any cell is, its depth
//                   the centre depth of its first (shallowest) defective cell
//   iou_2d, dice_2d of the two projected masks (both empty: 1)
//   depth errors    over the true defect columns; a column the prediction
//                   misses counts with depth H (the back face):
//                   abs_rel mean |d̂ − d| / d, rmse, delta1 the fraction with
//                   max(d̂/d, d/d̂) < 1.25
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
  std::vector<double> depth;  // (nx, ny), the first defective cell's centre depth (H if none)
};
DefectMap project_defects(const std::vector<double>& alpha, const fk::Dims& shape, double thickness,
                          double k = 2.0);

struct DepthErrors {
  double abs_rel = 0, rmse = 0, delta1 = 0;
};
DepthErrors depth_errors(const DefectMap& pred, const DefectMap& gt, double thickness);
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
// mse, psnr, ssim, iou, edge_f1, iou_2d, dice_2d, depth_abs_rel, depth_rmse,
// depth_delta1.
std::map<std::string, double> volume_metrics(const std::vector<double>& x,
                                             const std::vector<double>& gt, const fk::Dims& shape,
                                             const VolumeMetricOptions& opt);

}  // namespace nefi::thermal
