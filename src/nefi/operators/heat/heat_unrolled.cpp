// Gradient mode "autograd": the unrolled reference. The system is built from
// fk ops and every sweep (the flat sweep's own node, or the roll reference's
// 12 ops) is recorded, so memory grows as O(K N_t N_g). Chebyshev weights are
// constants of the graph.
#include "fk/factory.h"
#include "fk/ops/join.h"
#include "nefi/operators/heat/heat_modes.h"

namespace nefi::heat {

fk::Tensor apply_unrolled(const fk::Tensor& alpha, const HeatPlan& p) {
  const fk::DType dt = alpha.dtype();
  const HeatSystem sys = build_system_ops(alpha, p.g);
  const Sweep sweep = make_sweep(p.flat, sys.weights, p.g);
  fk::Tensor omega;
  if (p.solver.solver == "chebyshev")
    omega = chebyshev_weights(gershgorin_bound(sys), p.solver.iters);
  fk::Tensor t = p.t0.to(dt);
  std::vector<fk::Tensor> rows;
  if (p.row_of_frame(0) >= 0) rows.push_back(t.select(2, 0));
  for (int64_t f = 1; f <= p.last_frame(); ++f) {
    for (int64_t s = 0; s < p.substeps; ++s) t = solve_step(sys, sweep, t, t, p.solver, omega);
    if (p.row_of_frame(f) >= 0) rows.push_back(t.select(2, 0));
  }
  return fk::stack(rows, 0);
}

}  // namespace nefi::heat
