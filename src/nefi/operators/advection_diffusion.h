#pragma once
// AdvectionDiffusionOperator: a tracer (a pollutant, a dye, heat in a moving
// fluid) carried by a known flow v and spreading with diffusivity D on the
// cell-centred grid of a Domain (1-3 axes),
//   c_t + div(v c) = D lap(c) + s,
// observed at times t_1 < ... < t_K over the whole grid, (K, *shape), or at
// the cells where a sensor mask is > 0, (K, m) in C order. The unknown field
// is the release: the initial concentration c(0) (s = 0), or a source rate s
// emitting from t = 0 on (c(0) = 0). Either way y is linear in the field
// (homogeneity 1), which is what source identification inverts.
//
// Finite volumes: each face between two cells carries the first-order upwind
// advective flux v_f c_upwind (v_f the mean of the two cells' velocities,
// positive toward the higher index) and the diffusive flux -D (c_hi - c_lo)
// / h; the state steps by explicit Euler, dc/dt = L c + s with L that
// stencil. Boundaries, per axis:
//   closed    no flux through the box's faces (without a source the total
//             sum c dV is conserved to rounding)
//   open      outflow carries the tracer out (v_f of the boundary cell),
//             inflow brings none, no diffusive flux
//   periodic  the axis wraps
// Upwinding adds a numerical diffusion of about |v| h / 2: refine the grid
// (or use the data's own D with that in mind) where it matters. Between two
// observation times the step is the interval split into the fewest equal
// substeps tau <= courant / max_i(-L_ii): every Euler update is then a
// combination of the old values with non-negative weights, so c stays >= 0
// for a non-negative release and the scheme is stable whatever the flow.
//
// L is assembled once as a sparse matrix (SparseRows) with its transpose;
// forward is S sparse products, and the gradient steps the exact transpose
// backward (L does not depend on the field, so no state is saved: memory
// O(cells)). Inputs (..., *shape) real f32/f64 (leading dims a batch: each
// row its own release), computed in f64, returned in the input's dtype.
// Batch rows step 8 at a time, interleaved, so that a substep reads the
// stencil once for all of them; each row gets the bits of its own apply.
// CPU only (host_only_reason). A grid other than the operator's is refused
// when the flow or sensors are given per cell; with a constant flow and the
// whole grid observed, at_resolution rebuilds the stencil for the new grid.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nefi/domain.h"
#include "nefi/operators/operator.h"
#include "nefi/operators/sparse_rows.h"

namespace nefi {

enum class TransportUnknown { kInitial, kSource };
enum class TransportBoundary { kClosed, kOpen, kPeriodic };

struct AdvectionDiffusionOptions {
  // One per axis: the grid's shape (a velocity per cell centre) or a single
  // value (a uniform flow); empty: no flow. Domain units per unit time.
  std::vector<fk::Tensor> velocity;
  double diffusivity = 0;  // D >= 0 (domain units^2 per unit time)
  std::vector<double> times{0.25, 0.5, 0.75, 1.0};
  TransportUnknown unknown = TransportUnknown::kInitial;
  // One for every axis, or one per axis.
  std::vector<TransportBoundary> boundary{TransportBoundary::kClosed};
  fk::Tensor sensors;    // the grid's shape, observed where > 0; undefined: every cell
  double courant = 0.9;  // the substep's share of the positivity bound, in (0, 1]
};

// The most substeps one apply may take (over all observation intervals):
// explicit steps on a fine grid with a large D need ~ D t / h^2 of them,
// which past this is a sign of the wrong units, not a solve to wait for.
inline constexpr int64_t kMaxTransportSubsteps = 1000000;

TransportBoundary parse_transport_boundary(const std::string& name);
TransportUnknown parse_transport_unknown(const std::string& name);

class AdvectionDiffusionOperator : public Operator {
 public:
  // Throws fk::Error naming what it expected on: a domain outside 1-3 axes or
  // over 2^31 - 1 cells; a velocity list that is not empty or one per axis, a
  // velocity of another shape than the grid's or a single value, complex or
  // non-finite; D < 0 or not finite; no times, times not increasing and > 0;
  // a boundary list not of size 1 or one per axis; a sensor mask of another
  // shape, complex, non-finite or with no cell > 0; courant outside (0, 1];
  // more than kMaxTransportSubsteps substeps. apply throws on a field whose
  // trailing dims are not the grid, not f32/f64, or not on the CPU;
  // output_shape and at_resolution on another grid where the flow or the
  // sensors are per cell, or one of another axis count.
  AdvectionDiffusionOperator(Domain domain, AdvectionDiffusionOptions options);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override { return 1.0; }
  bool batchable() const override { return true; }
  std::string host_only_reason() const override;
  std::string fidelity_tag() const override { return "upwind-euler"; }
  std::string kind() const override { return "advection_diffusion"; }

  const Domain& domain() const { return domain_; }
  const AdvectionDiffusionOptions& options() const { return options_; }
  // L: (cells, cells), row i the rate of change of c_i.
  const SparseRows& stencil() const;
  // The substeps of each observation interval, and their length.
  const std::vector<int64_t>& substeps() const;
  const std::vector<double>& substep_length() const;
  // The largest substep the positivity bound allows, courant / max_i(-L_ii)
  // (infinite without flow or diffusion).
  double stable_substep() const;
  // Observed values per time: the sensors' count, or the grid's cells.
  int64_t observed() const;

  // Forward and its exact transpose on f64 rows: x (rows, cells) ->
  // y (rows, K observed), and g (rows, K observed) -> (rows, cells). Throw
  // on a size that is not that.
  std::vector<double> forward_rows(const std::vector<double>& x, int64_t rows) const;
  std::vector<double> adjoint_rows(const std::vector<double>& g, int64_t rows) const;

 private:
  struct Plan;  // the stencil, its transpose, the schedule and the sensors
  // Refuses `shape` unless it is the grid, or has its axis count with a
  // uniform flow and no sensors (then the stencil is rebuilt there).
  void check_grid(const fk::Dims& shape, const char* who) const;
  Domain domain_;
  AdvectionDiffusionOptions options_;
  std::shared_ptr<const Plan> plan_;  // shared by copies and autograd nodes
};

}  // namespace nefi
