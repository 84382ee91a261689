#pragma once
// StepSolver: the graph-free implicit step the adjoint's forward and backward
// sweeps and simulate() run, A x = b + s·e_surface, warm-started from its own
// previous solution (the previous frame forward, μⁿ⁺¹ backward). Built once
// per α: the flat backend with jacobi/chebyshev keeps its padded buffers for
// the whole rollout (no allocation per sweep); the roll backend and cg run the
// fk-op solvers of inner_solvers.h. With α on a CUDA device (flat, jacobi or
// chebyshev only) every tensor the solver takes or fills lives on that device
// (heat_device.h).
#include <memory>

#include "fk/tensor.h"
#include "nefi/operators/heat/heat_system.h"
#include "nefi/operators/heat/inner_solvers.h"

namespace nefi::heat {

class StepSolver {
 public:
  virtual ~StepSolver() = default;
  // The warm start of the first solve.
  virtual void start(const fk::Tensor& x0) = 0;
  // Solves A x = b (+ surface (nx, ny) added at z = 0 when defined).
  virtual void solve(const fk::Tensor& b, const fk::Tensor& surface = fk::Tensor()) = 0;
  // The rollout step: solves A x = x_prev (+ surface), x_prev being the last
  // result() (or the start value), warm-started from it.
  virtual void advance(const fk::Tensor& surface = fk::Tensor()) = 0;
  // Copies the solution into `out` (a contiguous grid of α's dtype).
  virtual void result(fk::Tensor& out) = 0;
};

// alpha: (nx, ny, nz) f32/f64 (its values only; no graph is recorded).
std::unique_ptr<StepSolver> make_step_solver(const fk::Tensor& alpha, const StepGeometry& g,
                                             bool flat, const SolverOptions& o);

}  // namespace nefi::heat
