#pragma once
// Point sources on the cell-centred grid, spread cloud-in-cell: a source of
// strength q at x goes to the 2^d cell centres around it with multilinear
// weights, divided by the cell volume, so Σ rhs·volume = q and (away from the
// boundary) the spread source's centroid is x. Positions are physical, with
// cell centres at (i + ½) h_a; a position beyond the first or last centre
// lands on the edge cell of that axis (the mass stays in the box). Used for
// wells (darcy_flow) and any δ-source right-hand side.
#include <vector>

#include "nefi/operators/elliptic/elliptic_grid.h"

namespace nefi::elliptic {

struct PointSource {
  std::vector<double> position;  // one coordinate per axis
  double strength = 0;
};

// The right-hand side (numel, C order) of `sources` on g's grid; a position
// with the wrong axis count or outside the box [0, n_a h_a] is an fk::Error.
std::vector<double> point_source_rhs(const EllipticGrid& g,
                                     const std::vector<PointSource>& sources);

}  // namespace nefi::elliptic
