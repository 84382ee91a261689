#pragma once
// Jacobi-preconditioned conjugate gradients on the flat layout, without a
// graph: three fused passes per iteration (A p with p·q; the x, r, z updates
// with r·z and r·r; the new search direction into the padded p), dot products
// accumulated in double in a fixed order, so the result does not depend on
// the thread count. Stops when ‖r‖ ≤ tol ‖b‖, checked every check_every
// iterations (the only host reads), or after max_iter iterations — the same
// rule as cg_solve, which the roll backend and the graph-recording modes use.
#include <cstdint>

#include "fk/tensor.h"
#include "nefi/operators/heat/flat_stencil.h"
#include "nefi/operators/heat/heat_system.h"

namespace nefi::heat {

class FlatCG {
 public:
  FlatCG(HeatSystem system, const StepGeometry& g);
  // x (a contiguous grid, the warm start) := the solution of A x = b (+ s at
  // z = 0, s (nx, ny) or undefined). b may be x itself: it is copied before x
  // is touched. Returns the iterations run.
  int64_t solve(fk::Tensor& x, const fk::Tensor& b, const fk::Tensor& surface, double tol,
                int64_t max_iter, int64_t check_every);
  const HeatSystem& system() const { return system_; }

 private:
  HeatSystem system_;
  StepGeometry g_;
  FlatLayout layout_;
  fk::Tensor p_;                // padded search direction
  fk::Tensor r_, z_, q_, rhs_;  // grids
};

}  // namespace nefi::heat
