#pragma once
// A PNG panel of ground truth | measurement | reconstruction: 2-D fields as
// grayscale images (truth and reconstruction on the truth's range, the
// measurement on its own), 1-D fields as line plots (the reconstruction over
// the truth in grey). A 3-D truth (a volume whose last axis is depth, with a
// measurement of surface frames (n_obs, nx, ny)) gets the volume panel below.
#include <string>

#include "fk/tensor.h"

namespace nefi {

void write_panel_png(const std::string& path, const fk::Tensor& gt, const fk::Tensor& measurement,
                     const fk::Tensor& reconstruction);
// The same with the method's prediction of the measurement (used by 3-D
// panels for the surface fit; ignored for 1-D and 2-D fields).
void write_panel_png(const std::string& path, const fk::Tensor& gt, const fk::Tensor& measurement,
                     const fk::Tensor& reconstruction, const fk::Tensor& prediction);

// A volume panel: row 1 the truth's depth slices (up to 8, evenly spaced from
// the front), row 2 the reconstruction's at the same depths (both on the
// truth's range); row 3 a few observed surface frames (early to late) and
// row 4 the predicted frames at the same times (each column on its observed
// frame's range). gt and rec (nx, ny, nz); observed and predicted
// (n_obs, nx, ny); predicted may be undefined (row 4 left blank).
void write_volume_panel_png(const std::string& path, const fk::Tensor& gt, const fk::Tensor& rec,
                            const fk::Tensor& observed, const fk::Tensor& predicted);

}  // namespace nefi
