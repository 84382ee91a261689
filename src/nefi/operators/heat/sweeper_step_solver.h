#pragma once
// SweeperStepSolver: step_solver.h's contract over a sweeper that keeps its
// iterate in its own buffers — FlatSweeper on the CPU (flat_stencil.h),
// DeviceFlatSweeper on a CUDA device (nefi/cuda/device_sweeper.h) — so both
// run the same Jacobi / Chebyshev iteration whatever does the sweeps.
#include <utility>

#include "fk/tensor.h"
#include "nefi/operators/heat/inner_solvers.h"
#include "nefi/operators/heat/step_solver.h"

namespace nefi::heat {

template <class Sweeper>
class SweeperStepSolver : public StepSolver {
 public:
  // omega: the Chebyshev weights (K,) where the sweeper's chebyshev() takes
  // them (solver chebyshev), else undefined (jacobi, o.iters sweeps).
  SweeperStepSolver(Sweeper sweeper, const SolverOptions& o, fk::Tensor omega)
      : sweeper_(std::move(sweeper)), o_(o), omega_(std::move(omega)) {}
  void start(const fk::Tensor& x0) override {
    sweeper_.load(x0);
    sweeper_.set_rhs(x0);
  }
  void solve(const fk::Tensor& b, const fk::Tensor& surface) override {
    sweeper_.set_rhs(b, surface);
    iterate();
  }
  void advance(const fk::Tensor& surface) override {
    if (surface.defined()) sweeper_.add_surface(surface);
    iterate();
  }
  // Also makes this solution the next advance's right-hand side (one pass).
  void result(fk::Tensor& out) override { sweeper_.store_and_set_rhs(out); }

 private:
  void iterate() {
    if (omega_.defined())
      sweeper_.chebyshev(omega_);
    else
      sweeper_.jacobi(o_.iters);
  }
  Sweeper sweeper_;
  SolverOptions o_;
  fk::Tensor omega_;
};

}  // namespace nefi::heat
