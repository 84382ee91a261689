#pragma once
// panel.png of a run: one titled tile per quantity, axes and colour bars
// named with their units (the instance's DataLabels).
//   1-D: the truth, the measurement (dots) and each method's reconstruction
//        as lines with a legend; beside it each method's signed error.
//   2-D: row 1 truth | measurement | each method's reconstruction (truth and
//        reconstructions share one viridis scale, the measurement has its
//        own); row 2 each method's signed error (rec - truth). A stack of measured frames
//        shows its first.
//   3-D: a volume (nx, ny, nz) with per row (truth, then each method and
//        its signed error) the x-y slice at the depth of the truth's
//        strongest feature, the x-z and y-z slices through it and a strict
//        intensity projection over depth: the maximum where the truth's
//        strongest feature lies above its median, the minimum where it lies
//        below (low-diffusivity defects), for an error the value of largest
//        magnitude; a last row of measured frames (early to late, or the one
//        frame of a 2-D measurement) and the first method's predicted last
//        frame.
// Truth and reconstructions share one scale (panel_tiles.h's field_range:
// the truth's, widened to each reconstruction's 1st-99th percentile), the
// errors one diverging scale symmetric about 0.
// Each method's tile title carries its headline metrics.
#include <map>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "nefi/data_labels.h"

namespace nefi {

struct PanelMethod {
  std::string name;
  fk::Tensor reconstruction;  // the truth's shape
  fk::Tensor prediction;      // of the measurement; may be undefined
  std::map<std::string, double> metrics;
};

struct PanelInput {
  std::string title;                 // e.g. "deconvolution  seed 0"
  fk::Tensor gt, measurement;        // measurement: the truth's shape, or frames for 3-D
  DataLabels labels;                 // one field axis per gt axis, one measured axis per data axis
  std::vector<PanelMethod> methods;  // at least one
};

// The unit-bearing texts of a panel: its colour bars and the axis labels of
// the field tiles (for a volume, its x-y slice) and of the measurement tile
// (for a stack, a frame), and what the shown measurement frame is.
struct PanelLabels {
  std::string field_bar = {}, error_bar = {}, measured_bar = {};
  std::string field_vertical = {}, field_horizontal = {};
  std::string measured_vertical = {}, measured_horizontal = {};
  std::string measured_frame = {};  // "shot 1", "t = 0.1 s"; empty for one 2-D measurement
};
// Throws fk::Error when the labels do not have an axis per array axis.
PanelLabels panel_labels(const PanelInput& in);

// Throws fk::Error on mismatched shapes or labels, or an unwritable path.
void write_panel_png(const std::string& path, const PanelInput& in);
// "PSNR 31.2 dB, SSIM 0.912" from the metrics a reader looks at first.
std::string headline_metrics(const std::map<std::string, double>& metrics);

}  // namespace nefi
