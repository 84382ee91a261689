#pragma once
// Direct real-space magnetostatics in f64, the independent side of the
// current_density instance (its data generator and the FFT operator's test
// reference): no transform anywhere.
//
// biot_savart_sheet: B(r) = (mu0 / 4 pi) sum_cells K(r') x (r - r') / |r - r'|^3
// dA, a midpoint sum over the source cells of a sheet current in z = 0, at
// the cell centres of a sensor grid over the same box, at height z0 (or
// averaged over `layer_samples` midpoints of [z0, z0 + t]). Cost
// O(sources x sensors x samples), parallel over sensor rows.
//
// curl_of_stream: K = curl(g z^) = (dg/dx1, -dg/dx0) by central differences
// on a cell-centred grid with g = 0 outside it (the zero exterior is part of
// the source, as in the zero-padded FFT model).
#include <array>
#include <vector>

#include "nefi/domain.h"

namespace nefi {

struct SheetCurrent {
  std::vector<double> k0, k1;  // C order on the source grid
};

struct MagneticField {
  std::vector<double> b0, b1, bz;  // C order on the sensor grid
  // n . B for an axis (axis 0, axis 1, z), normalised here.
  std::vector<double> along(const std::array<double, 3>& axis) const;
};

SheetCurrent curl_of_stream(const std::vector<double>& g, const Domain& grid);

// Throws fk::Error when the grids are not 2-D over one box, the current
// does not match the source grid, z0 <= 0, t < 0 or samples < 1.
MagneticField biot_savart_sheet(const SheetCurrent& k, const Domain& sources, const Domain& sensors,
                                double z0, double mu0, double layer_thickness = 0,
                                int layer_samples = 1);

}  // namespace nefi
