#pragma once
// Area-weighted resampling of a C-ordered grid to another shape over the same
// box: each output cell is the overlap-weighted mean of the input cells it
// covers (exact block means for integer coarsening, piecewise-constant copies
// when refining). Separable, one axis at a time, in f64 on the host. Used for
// measurements, stage restarts of grid fields and the data generators'
// supersampled grids; it never touches autograd.
#include <vector>

#include "fk/shape.h"

namespace nefi {

std::vector<double> area_resample(const std::vector<double>& values, const fk::Dims& shape,
                                  const fk::Dims& new_shape);

}  // namespace nefi
