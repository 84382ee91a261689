#pragma once
// The unit box as an elliptic test grid: `shape` cells, spacing 1/n per axis,
// boundary conditions parsed from `bc` (elliptic_grid.h's grammar).
#include <string>

#include "fk/shape.h"
#include "nefi/operators/elliptic/elliptic_grid.h"

namespace nefi::elliptic::test {

inline EllipticGrid box(fk::Dims shape, const std::string& bc) {
  EllipticGrid g;
  g.shape = shape;
  for (int64_t n : shape) g.spacing.push_back(1.0 / static_cast<double>(n));
  g.boundary = parse_boundary(bc, static_cast<int>(shape.size()));
  return g;
}

}  // namespace nefi::elliptic::test
