#pragma once
// panel.png of a run: one titled tile per quantity with axes in physical
// units and colour bars.
//   1-D: the truth, the measurement (dots) and each method's reconstruction
//        as lines with a legend; beside it each method's signed error.
//   2-D: row 1 truth | measurement | each method's reconstruction (truth and
//        reconstructions share one viridis scale, the measurement has its
//        own); row 2 each method's signed error (rec - truth) on one
//        diverging scale symmetric about 0.
//   3-D: a volume (nx, ny, nz) with surface frames (n_obs, nx, ny): per row
//        (truth, then each method) the x-y slice at the depth of the truth's
//        strongest feature, the x-z and y-z slices through it and a
//        maximum-deviation projection (per column the value farthest from
//        the truth's median); a last row of observed frames (early to late)
//        and the first method's predicted last frame.
// Each method's tile title carries its headline metrics.
#include <map>
#include <string>
#include <vector>

#include "fk/tensor.h"

namespace nefi {

struct PanelMethod {
  std::string name;
  fk::Tensor reconstruction;  // the truth's shape
  fk::Tensor prediction;      // of the measurement; may be undefined
  std::map<std::string, double> metrics;
};

struct PanelInput {
  std::string title;           // e.g. "deconvolution  seed 0"
  fk::Tensor gt, measurement;  // measurement: the truth's shape, or frames for 3-D
  std::vector<double> extent;  // physical size per axis of gt (empty: 1 per axis)
  std::string value_label = "value";
  std::vector<PanelMethod> methods;  // at least one
};

// Throws fk::Error on mismatched shapes or an unwritable path.
void write_panel_png(const std::string& path, const PanelInput& in);
// "PSNR 31.2 dB, SSIM 0.912" from the metrics a reader looks at first.
std::string headline_metrics(const std::map<std::string, double>& metrics);

}  // namespace nefi
