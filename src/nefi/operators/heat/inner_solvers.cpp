#include "nefi/operators/heat/inner_solvers.h"

#include <cmath>
#include <limits>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/profile.h"
#include "nefi/operators/heat/flat_stencil.h"

namespace nefi::heat {

fk::Tensor roll_sweep(const fk::Tensor& x, const fk::Tensor& c, const fk::Tensor& weights) {
  // Neighbour j of cell i is x[i ∓ 1] along its axis: roll by +1 reads i − 1.
  static constexpr int64_t kShift[kNeighbours] = {1, -1, 1, -1, 1, -1};
  static constexpr int64_t kAxis[kNeighbours] = {0, 0, 1, 1, 2, 2};
  fk::Tensor y;
  for (int j = 0; j < kNeighbours; ++j) {
    const fk::Tensor nb = fk::roll(x, {kShift[j]}, {kAxis[j]});
    const fk::Tensor w = weights.select(0, j);
    y = (j == 0 && !c.defined()) ? fk::mul(w, nb) : fk::addcmul(j == 0 ? c : y, w, nb);
  }
  return y;
}

Sweep make_sweep(bool flat, const fk::Tensor& weights, const StepGeometry& g) {
  if (flat)
    return [weights, g](const fk::Tensor& x, const fk::Tensor& c) {
      return flat_sweep(x, c, weights, g);
    };
  return [weights](const fk::Tensor& x, const fk::Tensor& c) { return roll_sweep(x, c, weights); };
}

fk::Tensor chebyshev_weights(const fk::Tensor& rho_in, int64_t iters) {
  fk::profile::OpScope scope("heat_chebyshev_weights");
  FK_CHECK(rho_in.numel() == 1 && iters >= 1, "nefi::heat::chebyshev_weights",
           "a one-element bound and K >= 1", rho_in.shape().str() + ", K = " + fk::to_text(iters));
  const fk::Tensor rho = rho_in.detach().contiguous();
  fk::Tensor omega = fk::empty({iters}, {rho.dtype()});
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const double r2 = static_cast<double>(*rho.data<T>()) * static_cast<double>(*rho.data<T>());
    T* o = omega.data<T>();
    double w = 1.0;
    for (int64_t k = 0; k < iters; ++k) {
      o[k] = static_cast<T>(w);
      w = k == 0 ? 2.0 / (2.0 - r2) : 1.0 / (1.0 - r2 * w / 4.0);
    }
  };
  if (rho.dtype() == fk::DType::F64)
    run(double{});
  else
    run(float{});
  return omega;
}

fk::Tensor jacobi_solve(const Sweep& sweep, const fk::Tensor& c, const fk::Tensor& x0,
                        int64_t iters) {
  fk::Tensor x = x0;
  for (int64_t k = 0; k < iters; ++k) x = sweep(x, c);
  return x;
}

fk::Tensor chebyshev_solve(const Sweep& sweep, const fk::Tensor& c, const fk::Tensor& x0,
                           const fk::Tensor& omega) {
  fk::Tensor prev = x0, x = sweep(x0, c);
  for (int64_t k = 1; k < omega.size(0); ++k) {
    fk::Tensor next = fk::lerp(prev, sweep(x, c), omega.select(0, k));
    prev = x;
    x = next;
  }
  return x;
}

fk::Tensor apply_system(const HeatSystem& system, const Sweep& sweep, const fk::Tensor& x) {
  return fk::mul(system.diag, fk::sub(x, sweep(x, fk::Tensor())));
}

fk::Tensor cg_solve(const Sweep& sweep, const HeatSystem& system, const fk::Tensor& b,
                    const fk::Tensor& x0, double tol, int64_t max_iter, int64_t check_every,
                    int64_t* iterations) {
  const double b_norm = std::sqrt(fk::sum(fk::mul(b, b)).item());
  tol = cg_tolerance_floor(tol, b.dtype());
  int64_t it = 0;
  if (b_norm == 0) {  // A is SPD: the solution of A x = 0 is 0
    if (iterations) *iterations = 0;
    return fk::mul(b, 0.0);
  }
  fk::Tensor x = x0;
  fk::Tensor r = fk::sub(b, apply_system(system, sweep, x));
  fk::Tensor z = fk::mul(r, system.inv_diag);
  fk::Tensor p = z;
  fk::Tensor rz = fk::sum(fk::mul(r, z));
  // Between checks (check_every > 1) CG runs on past convergence until r.z
  // and p.q underflow to 0, and 0 / 0 made the field NaN: a denominator
  // raised to the dtype's smallest normal makes that step 0 instead (x stays
  // converged, a NaN still spreads, the gradient stays finite).
  const fk::Tensor tiny = fk::scalar_like(
      rz, b.dtype() == fk::DType::F64 ? std::numeric_limits<double>::min()
                                      : static_cast<double>(std::numeric_limits<float>::min()));
  const auto ratio = [&](const fk::Tensor& num, const fk::Tensor& den) {
    return fk::div(num, fk::maximum(den, tiny));
  };
  while (it < max_iter) {
    ++it;
    const fk::Tensor q = apply_system(system, sweep, p);
    const fk::Tensor a = ratio(rz, fk::sum(fk::mul(p, q)));
    x = fk::add(x, fk::mul(a, p));
    r = fk::sub(r, fk::mul(a, q));
    if (it % check_every == 0 || it == max_iter) {
      const double r_norm = std::sqrt(fk::sum(fk::mul(r, r)).item());
      if (r_norm <= tol * b_norm) break;
    }
    z = fk::mul(r, system.inv_diag);
    const fk::Tensor rz_next = fk::sum(fk::mul(r, z));
    p = fk::add(z, fk::mul(ratio(rz_next, rz), p));
    rz = rz_next;
  }
  if (iterations) *iterations = it;
  return x;
}

fk::Tensor solve_step(const HeatSystem& system, const Sweep& sweep, const fk::Tensor& b,
                      const fk::Tensor& x0, const SolverOptions& o, const fk::Tensor& omega) {
  if (o.solver == "cg")
    return cg_solve(sweep, system, b, x0, o.cg_tol, o.cg_max_iter, o.check_every);
  const fk::Tensor c = fk::mul(b, system.inv_diag);
  if (o.solver == "chebyshev") return chebyshev_solve(sweep, c, x0, omega);
  return jacobi_solve(sweep, c, x0, o.iters);
}

}  // namespace nefi::heat
