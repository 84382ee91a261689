#include "nefi/operators/heat/step_solver.h"

#include "fk/autograd.h"
#include "fk/ops/binary.h"
#include "fk/ops/copy.h"
#include "nefi/operators/heat/flat_cg.h"
#include "nefi/operators/heat/flat_stencil.h"
#include "nefi/operators/heat/heat_device.h"
#include "nefi/operators/heat/sweeper_step_solver.h"

namespace nefi::heat {
namespace {

class FlatCgStepSolver : public StepSolver {
 public:
  FlatCgStepSolver(HeatSystem s, const StepGeometry& g, const SolverOptions& o)
      : cg_(std::move(s), g), o_(o) {}
  void start(const fk::Tensor& x0) override {
    x_ = x0.detach().to(cg_.system().diag.dtype()).contiguous().clone();
  }
  void solve(const fk::Tensor& b, const fk::Tensor& surface) override {
    cg_.solve(x_, b, surface, o_.cg_tol, o_.cg_max_iter, o_.check_every);
  }
  void advance(const fk::Tensor& surface) override {
    cg_.solve(x_, x_, surface, o_.cg_tol, o_.cg_max_iter, o_.check_every);  // b may be x
  }
  void result(fk::Tensor& out) override { fk::copy_(out, x_); }

 private:
  FlatCG cg_;
  SolverOptions o_;
  fk::Tensor x_;
};

class GenericStepSolver : public StepSolver {
 public:
  GenericStepSolver(HeatSystem s, const StepGeometry& g, const SolverOptions& o)
      : system_(std::move(s)), sweep_(make_sweep(false, system_.weights, g)), o_(o) {
    if (o_.solver == "chebyshev") omega_ = chebyshev_weights(gershgorin_bound(system_), o_.iters);
  }
  void start(const fk::Tensor& x0) override { x_ = x0.detach().to(system_.diag.dtype()).clone(); }
  void solve(const fk::Tensor& b_in, const fk::Tensor& surface) override {
    fk::autograd::NoGradGuard ng;
    fk::Tensor b = b_in.to(system_.diag.dtype());
    if (surface.defined()) {
      b = b.clone();
      fk::Tensor front = b.select(2, 0);
      fk::add_(front, surface.to(b.dtype()));
    }
    x_ = solve_step(system_, sweep_, b, x_, o_, omega_);
  }
  void advance(const fk::Tensor& surface) override { solve(x_, surface); }
  void result(fk::Tensor& out) override { fk::copy_(out, x_); }

 private:
  HeatSystem system_;
  Sweep sweep_;
  SolverOptions o_;
  fk::Tensor omega_, x_;
};

}  // namespace

std::unique_ptr<StepSolver> make_step_solver(const fk::Tensor& alpha, const StepGeometry& g,
                                             bool flat, const SolverOptions& o) {
  if (alpha.device().is_cuda()) return make_device_step_solver(alpha, g, flat, o);
  fk::autograd::NoGradGuard ng;
  const fk::Tensor a = alpha.detach();
  if (flat && o.solver == "cg") return std::make_unique<FlatCgStepSolver>(build_system(a, g), g, o);
  if (flat) {
    HeatSystem s = build_system(a, g);
    fk::Tensor omega;
    if (o.solver == "chebyshev") omega = chebyshev_weights(gershgorin_bound(s), o.iters);
    return std::make_unique<SweeperStepSolver<FlatSweeper>>(FlatSweeper(std::move(s), g), o,
                                                            std::move(omega));
  }
  return std::make_unique<GenericStepSolver>(build_system_ops(a, g), g, o);
}

}  // namespace nefi::heat
