#pragma once
// The inner solvers of one implicit step A x = b, on compact (nx, ny, nz)
// grids and built from fk ops plus a backend's sweep, so they are
// differentiable (the unrolled autograd and checkpoint modes) and serve the
// roll backend and CG everywhere. The flat backend's graph-free Jacobi and
// Chebyshev run in FlatSweeper instead (same arithmetic, no allocation).
//   jacobi:    K warm-started sweeps x ← D⁻¹ b + Σ_j W_j S_j x.
//   chebyshev: the semi-iteration over the same sweeps, x_{k+1} = x_{k−1} +
//              ω_k (S x_k − x_{k−1}); error ≤ 1/T_K(1/ρ) against ρ^K.
//   cg:        Jacobi-preconditioned conjugate gradients, relative residual
//              ‖r‖ ≤ cg_tol ‖b‖ checked every check_every iterations (the only
//              host reads), at most cg_max_iter iterations. A cg_tol under
//              8 eps of the dtype is taken as 8 eps (cg_tolerance_floor).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

#include "fk/tensor.h"
#include "nefi/operators/heat/heat_system.h"

namespace nefi::heat {

// y = c + Σ_j W_j S_j x (c undefined: without it).
using Sweep = std::function<fk::Tensor(const fk::Tensor& x, const fk::Tensor& c)>;

// The plain reference: 6 fk::roll + 6 addcmul (12 ops) per sweep.
fk::Tensor roll_sweep(const fk::Tensor& x, const fk::Tensor& c, const fk::Tensor& weights);
// flat_sweep (one fused op) or roll_sweep over `weights`.
Sweep make_sweep(bool flat, const fk::Tensor& weights, const StepGeometry& g);

// Chebyshev weights (K,) of the iterate sweeps from the bound ρ (0-dim):
// ω₀ = 1 (sweep 0 is Jacobi), ω₁ = 2 / (2 − ρ²), ω_{k+1} = 1 / (1 − ρ² ω_k / 4).
// One op that reads ρ where it lives (no host sync on a device); no gradient.
fk::Tensor chebyshev_weights(const fk::Tensor& rho, int64_t iters);

struct SolverOptions {
  std::string solver = "jacobi";  // jacobi | chebyshev | cg
  int64_t iters = 50;             // K
  double cg_tol = 1e-6;
  int64_t cg_max_iter = 200;
  int64_t check_every = 1;
};

fk::Tensor jacobi_solve(const Sweep& sweep, const fk::Tensor& c, const fk::Tensor& x0,
                        int64_t iters);
fk::Tensor chebyshev_solve(const Sweep& sweep, const fk::Tensor& c, const fk::Tensor& x0,
                           const fk::Tensor& omega);
// The relative residual CG aims for: at least 8 eps of the dtype. Below it
// the recurrences run on past convergence until r.z and p.q underflow to 0,
// and their 0 / 0 made the field NaN (cg_tol = 0 on grids with fewer cells
// than cg_max_iter).
inline double cg_tolerance_floor(double tol, fk::DType dtype) {
  return std::max(tol, 8 * (dtype == fk::DType::F64 ? 2.220446049250313e-16 : 1.1920929e-07));
}

// `iterations` (optional) receives the iterations run.
fk::Tensor cg_solve(const Sweep& sweep, const HeatSystem& system, const fk::Tensor& b,
                    const fk::Tensor& x0, double tol, int64_t max_iter, int64_t check_every,
                    int64_t* iterations = nullptr);

// A x = b with the configured solver, warm-started from x0; omega is
// chebyshev_weights(...) for chebyshev (ignored otherwise).
fk::Tensor solve_step(const HeatSystem& system, const Sweep& sweep, const fk::Tensor& b,
                      const fk::Tensor& x0, const SolverOptions& o, const fk::Tensor& omega);

// A x = D ⊙ (x − Σ_j W_j S_j x).
fk::Tensor apply_system(const HeatSystem& system, const Sweep& sweep, const fk::Tensor& x);

}  // namespace nefi::heat
