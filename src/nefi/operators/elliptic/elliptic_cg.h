#pragma once
// A batched, matrix-free preconditioned conjugate-gradient solve of A x = b
// for the finite-volume systems of elliptic_grid.h (nefi.md §5.3), with a
// Jacobi preconditioner or a geometric multigrid V-cycle
// (elliptic_multigrid.h: about 3 stencil applications an iteration instead
// of 1, for several times fewer iterations on large or low-κ grids; built
// once per conductivity field and call, it needs a non-singular system).
// Every leading index is its own system with its own step sizes and its own
// stopping test, ‖r‖ ≤ max(tol ‖b‖, atol), checked every check_every
// iterations (it saves the residual norm's pass; the device CG of
// elliptic_device.h keeps these semantics with the test taken on the
// device). tol is clamped below at 8 machine epsilons of T.
// A warm start x₀ is kept per system only when ‖b − A x₀‖ < ‖b‖ (it beats the
// zero guess). With `project` (the pure Neumann / periodic case without κ,
// where A's null space is the constants) b's mean is removed, the residual
// and the preconditioned residual are projected to zero mean every
// iteration, and the solution is returned with zero mean (the gauge).
// Dot products accumulate in double; the systems run in parallel over
// fk's threads, each one sequentially, so results do not depend on the
// thread count. Memory: four grids of T per running system; with multigrid
// also about 3.5 grids of scratch per thread and (ndim + 2) · 8/7 grids of
// hierarchy per conductivity field.
#include <cstdint>
#include <string>

#include "nefi/operators/elliptic/elliptic_grid.h"

namespace nefi::elliptic {

enum class Preconditioner { kJacobi, kMultigrid };

// "jacobi" | "multigrid"; fk::Error otherwise.
Preconditioner parse_preconditioner(const std::string& s);

struct CgOptions {
  double tol = 1e-8;
  double atol = 0;
  int64_t max_iter = 0;  // 0: 50 max(grid) + 200
  int64_t check_every = 1;
  bool project = false;
  Preconditioner precond = Preconditioner::kJacobi;  // multigrid: not with `project`
};

struct CgStats {
  int64_t max_iterations = 0;    // over the systems
  int64_t total_iterations = 0;  // summed over the systems
  int64_t warm_used = 0;         // systems whose warm start beat zero
  int64_t unconverged = 0;       // systems that hit max_iter
  double worst_residual = 0;     // max ‖r‖ / ‖b‖ at exit
};

// x (ns, numel): the warm start when `warm`, the solution on return; b (ns,
// numel). System s uses conductivity field (sys.nb == 1 ? 0 : s).
template <typename T>
CgStats pcg_solve(const EllipticGrid& g, const FaceSystem<T>& sys, const T* b, T* x, int64_t ns,
                  bool warm, const CgOptions& opt);

// 50 max(grid) + 200 when opt.max_iter is 0; checks tol, atol and check_every.
int64_t resolved_max_iter(const EllipticGrid& g, const CgOptions& opt);

}  // namespace nefi::elliptic
