#pragma once
// The Radon inversion geometry's config keys, shared by the 2-D and 3-D
// parallel-beam CT instances (sparse_view_ct, ct3d).
#include <cstdint>

#include "nefi/data_labels.h"
#include "nefi/operators/radon.h"
#include "nefi/params.h"

namespace nefi {

// n_views (default `n_views`), angle_range (degrees, default 180),
// det_per_pixel and samples_per_pixel (default 1).
void declare_radon_keys(Params& p, int64_t n_views);
// The geometry those keys give; checked (an error names the key).
RadonGeometry radon_geometry_from(const Params& p);
// A sinogram's axes over an image n cells wide: the view angle θ_v = v ·
// angle_range / n_views in degrees (a stack of frames when `views_as_frames`)
// and the detector position s ∈ [−n/2, n/2] in px.
std::vector<DataAxis> radon_sinogram_axes(const Params& p, int64_t n, bool views_as_frames);

}  // namespace nefi
