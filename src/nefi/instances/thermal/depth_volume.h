#pragma once
// A classical depth map (defect pixels and their depths, from TSR or PPT)
// as an α volume for the volume metrics: the bulk α everywhere, and
// alpha_defect in each defect column from its depth over `defect_thickness`
// (flash thermography sees a defect's top, not its thickness; the thickness
// is a prior). Cells count from the one containing the depth.
#include <vector>

#include "fk/shape.h"

namespace nefi::thermal {

std::vector<double> depth_map_alpha_volume(const std::vector<bool>& defect,
                                           const std::vector<double>& depth, const fk::Dims& shape,
                                           double thickness, double alpha_bulk, double alpha_defect,
                                           double defect_thickness);

}  // namespace nefi::thermal
