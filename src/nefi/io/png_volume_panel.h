#pragma once
// The panel of a 3-D instance (see png_panel.h): orthogonal slices through
// the truth's strongest feature and a projection over depth, per row the
// truth and each method's reconstruction, then the observed surface frames.
#include <string>

#include "nefi/io/png_panel.h"

namespace nefi {

// in.gt and reconstructions (nx, ny, nz), z the depth; in.measurement
// (n_obs, fx, fy) frames over the top face, on the volume's lateral grid or
// their own (dot3d's detector lattice). Throws fk::Error on other shapes.
void write_volume_panel_png(const std::string& path, const PanelInput& in);

}  // namespace nefi
