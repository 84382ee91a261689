#pragma once
// The panel of a 3-D instance (see png_panel.h): orthogonal slices through
// the truth's strongest feature and a strict maximum (or minimum) intensity
// projection over depth, per row the truth and each method's
// reconstruction, then the measured frames over their labelled axes.
#include <string>
#include <vector>

#include "nefi/io/png_panel.h"

namespace nefi {

// in.gt and reconstructions (nx, ny, nz), z the depth; a 3-D measurement
// (n_obs, rows, cols) or a 2-D one (sensor traces, shown as one frame) adds
// a row of frames over the measurement's last two labelled axes; one of
// another rank is left out. Throws fk::Error on other shapes.
void write_volume_panel_png(const std::string& path, const PanelInput& in);

// The measured frames the row shows, of nt: a series' first, early and last
// (early frames change fastest; one fewer when a prediction takes a tile), or
// for a z-stack (focus >= 0, the slices' depth) the frame at focus between two
// defocused ones: a stack's first and last frames lie outside the sample.
std::vector<int> shown_frames(int nt, int focus, bool has_prediction);

}  // namespace nefi
