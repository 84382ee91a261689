#pragma once
// AdvectionDiffusionOperator: a tracer (a pollutant, a dye, heat in a moving
// fluid) carried by a known flow v and spreading with diffusivity D on the
// cell-centred grid of a Domain (1-3 axes),
//   c_t + div(v c) = D lap(c) + s,
// observed at times t_1 < ... < t_K over the whole grid, (K, *shape), or at
// the cells where a sensor mask is > 0, (K, m) in C order. The unknown field
// is the release: the initial concentration c(0) (s = 0), or a source rate s
// emitting from t = 0 on (c(0) = 0). Either way y is linear in the field
// (homogeneity 1), which is what source identification inverts. Or the
// unknown is the diffusivity map D(x) >= 0 (one value per cell, the release
// given): D lap(c) becomes div(D grad c), each face's D the harmonic mean of
// its two cells' (a flux through two cells in series, so a cell of D = 0
// blocks it), and y is nonlinear in D; each apply steps a stencil built
// for the field's D, its substeps set by D's largest value, and the gradient
// runs the same steps' transposes backward (transport_steps.h). Or the
// unknown is the flow v itself (kVelocity: one component per axis per cell,
// the field (axes, *grid); the release and a scalar D given): y is nonlinear
// in v, each apply steps a stencil built for the field's v (its substeps set
// by v's largest speed), and the gradient takes each face's flux derivative
// in its v_f (upwind's is one-sided by v_f's sign, at v_f = 0 the mean of
// the two sides) and the open box faces' outflow's, through v_f = the mean
// of its two cells'.
//
// Finite volumes: each face between two cells carries an advective flux (v_f
// the mean of the two cells' velocities, positive toward the higher index)
// and the diffusive flux -D (c_hi - c_lo) / h; the state steps by explicit
// Euler, dc/dt = A c + s with A that stencil. The advective flux (scheme):
//   lax_wendroff  v_f (c_lo + c_hi) / 2 - (v_f^2 tau / 2) (c_hi - c_lo) / h
//                 (the default): a Gaussian's variance grows by 2 D t
//                 exactly, and pure advection converges at second order;
//                 Euler's diffusion and (below) the split are first order in
//                 tau where D > 0 or the axes' steps do not commute. The
//                 stencil is A + tau T, T set per interval. In 2-D and 3-D
//                 the axes are split, one 1-D factor per axis each substep,
//                 in order on even substeps and in reverse on odd ones (with
//                 D = 0 an unsplit step without cross-derivative terms grows
//                 a diagonal flow's waves at any step). Each factor keeps to
//                 the 1-D von Neumann bound nu_a^2 + 2 d_a <= 1 (nu_a = tau
//                 max|v_f| / h_a over the cell's faces, d_a = tau D / h_a^2),
//                 times courant. That bound is a frozen-coefficient one: with
//                 D near 0 and a per-cell flow that converges or reverses at a
//                 cell Peclet number |v| h / D well above 2, grid-scale waves
//                 can grow slowly (a smaller courant does not help); use
//                 upwind there. Not monotone: small wiggles, and values below
//                 0, where a front is a cell or two wide
//   upwind        v_f c_upwind: first order, monotone. Every substep tau <=
//                 courant / max_i(-A_ii) mixes the old values with
//                 non-negative weights, so c stays >= 0 for a non-negative
//                 release, stable whatever the flow; but it spreads the
//                 tracer as a diffusion of about |v| h / 2 would (at a cell
//                 Peclet number of 10, five times D's own)
// Open boundary faces carry the upwind outflow under either scheme. The
// source enters with the last factor of a substep (c' = P c + tau s).
// Boundaries, per axis:
//   closed    no flux through the box's faces (without a source the total
//             sum c dV is conserved to rounding)
//   open      outflow carries the tracer out (v_f of the boundary cell),
//             inflow brings none, no diffusive flux
//   periodic  the axis wraps
// Between two observation times the step is the interval split into the
// fewest equal substeps within the scheme's bound.
//
// A release unknown: each factor is assembled once as a sparse matrix
// (SparseRows) with its transpose; forward is a sparse product per factor
// and substep, and the gradient steps the exact transposes backward (they do
// not depend on the field, so no state is saved: memory O(cells)). Inputs
// (..., *shape) real f32/f64 (leading dims a batch: each row its own
// release), computed in f64, returned in the input's dtype. Batch rows step
// 8 at a time, interleaved, so that a substep reads the stencil once for all
// of them; each row gets the bits of its own apply. A coefficient unknown
// (the diffusivity or the velocity): one field, no batch; the factors are
// assembled per apply, and the gradient keeps the state at each observation
// time and within an interval of S substeps one every ceil(sqrt(S)) (about
// 3 sqrt(S) states). Every unknown also steps on a CUDA device
// (advection_diffusion_device.h: the same f64 arithmetic, equal to the bit
// on the emulated device); there a coefficient's stencils are built for
// each field on the device, but its substeps follow the field, so each
// apply reads the stencils' largest rates (and D's largest value) back to
// the host and its steps are not captured as a graph
// (not_capturable_reason). A grid
// other than the operator's is refused when the flow, the sensors or the
// release are given per cell; with a constant flow and the whole grid
// observed, at_resolution rebuilds the stencil for the new grid.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "nefi/domain.h"
#include "nefi/operators/operator.h"
#include "nefi/operators/sparse_rows.h"

namespace nefi {

namespace transport {
struct Plan;
}  // namespace transport

enum class TransportUnknown { kInitial, kSource, kDiffusivity, kVelocity };

// The operator's constant tables on a CUDA device: a release unknown's
// factors, each stencil and its transpose as sparse rows (f64 weights;
// per_tau the Lax-Wendroff part that scales with the substep, undefined for
// upwind), the observed cells (undefined: every cell), and for a
// coefficient unknown (whose stencils are built on the device for each
// field, in rows of `width` entries) its known release, and the velocity
// unknown's diffusivity option (one value) or the diffusivity unknown's
// flow per axis (f64, one value or one per cell).
struct TransportTablesOnDevice {
  struct Rows {
    fk::Tensor row_start, col, weight, per_tau;
    int64_t width = 0;  // > 0: row i is entries [i width, (i + 1) width), col -1 padding
  };
  std::vector<Rows> forward, transposed;
  fk::Tensor sensors, release, diffusivity;
  std::vector<fk::Tensor> velocity;
};
enum class TransportBoundary { kClosed, kOpen, kPeriodic };
enum class TransportScheme { kUpwind, kLaxWendroff };

struct AdvectionDiffusionOptions {
  // One per axis: the grid's shape (a velocity per cell centre) or a single
  // value (a uniform flow); empty: no flow. Domain units per unit time.
  std::vector<fk::Tensor> velocity;
  double diffusivity = 0;  // D >= 0 (domain units^2 per unit time); 0 with kDiffusivity
  // kDiffusivity, kVelocity: the known release (the grid's shape), an initial
  // concentration or (release_is_source) a source rate from t = 0 on.
  fk::Tensor release;
  bool release_is_source = false;
  std::vector<double> times{0.25, 0.5, 0.75, 1.0};
  TransportUnknown unknown = TransportUnknown::kInitial;
  // One for every axis, or one per axis.
  std::vector<TransportBoundary> boundary{TransportBoundary::kClosed};
  fk::Tensor sensors;    // the grid's shape, observed where > 0; undefined: every cell
  double courant = 0.9;  // the substep's share of the stability bound, in (0, 1]
  // Lax-Wendroff by default: on a plume a few cells wide upwind's own
  // spreading is the larger error (docs/performance.md, "Advection-diffusion").
  TransportScheme scheme = TransportScheme::kLaxWendroff;
};

// The most substeps one apply may take (over all observation intervals):
// explicit steps on a fine grid with a large D need ~ D t / h^2 of them,
// which past this is a sign of the wrong units, not a solve to wait for.
inline constexpr int64_t kMaxTransportSubsteps = 1000000;
// The most kernel launches of a device apply and its gradient that a training
// step captured as one CUDA graph takes (see graph_capturable).
inline constexpr int64_t kMaxCapturedTransportLaunches = 20000;

TransportBoundary parse_transport_boundary(const std::string& name);
TransportUnknown parse_transport_unknown(const std::string& name);
TransportScheme parse_transport_scheme(const std::string& name);

class AdvectionDiffusionOperator : public Operator {
 public:
  // Throws fk::Error naming what it expected on: a domain outside 1-3 axes or
  // over 2^31 - 1 cells; a velocity list that is not empty or one per axis, a
  // velocity of another shape than the grid's or a single value, complex or
  // non-finite; D < 0 or not finite; no times, times not increasing and > 0;
  // a boundary list not of size 1 or one per axis; a sensor mask of another
  // shape, complex, non-finite or with no cell > 0; courant outside (0, 1];
  // more than kMaxTransportSubsteps substeps; for kDiffusivity and
  // kVelocity, a release missing, of another shape, complex or non-finite,
  // and a diffusivity option other than 0 (kDiffusivity) or a velocity option
  // (kVelocity) (and for the others a release given). apply throws on a
  // field whose trailing dims are not the grid (kDiffusivity: not exactly
  // the grid; kVelocity: not exactly (axes, *grid)), not f32/f64, or with a
  // negative or non-finite D or a non-finite v; output_shape and
  // at_resolution on another grid where the flow, the sensors or the
  // release are per cell, or one of another axis count (the velocity's
  // field shape stands for its grid).
  AdvectionDiffusionOperator(Domain domain, AdvectionDiffusionOptions options);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override;  // 1; none for D or v unknown
  bool batchable() const override;                     // not for D or v unknown
  // The unknown is a coefficient of the stencil (the diffusivity map or the
  // velocity), not the release; and the field's shape: the grid, or for the
  // velocity (axes, *grid).
  bool coefficient_unknown() const;
  fk::Dims field_shape() const;
  std::vector<int> component_axes() const override;  // {0} for the velocity
  // A device step is a kernel launch per factor and substep each way: a
  // training step over kMaxCapturedTransportLaunches of them runs eagerly
  // rather than as a captured graph of that many nodes. A coefficient
  // unknown's is never captured (each apply reads its bounds on the host).
  bool graph_capturable() const override;
  std::string not_capturable_reason() const override;
  // Kernel launches of one device apply and its gradient (a release
  // unknown; a coefficient unknown's depend on the field and refuse).
  int64_t device_launches() const;
  std::string fidelity_tag() const override;  // per scheme
  std::string kind() const override { return "advection_diffusion"; }
  double input_lower_bound() const override;  // 0 for the diffusivity unknown
  std::string input_name() const override;

  const Domain& domain() const { return domain_; }
  const AdvectionDiffusionOptions& options() const { return options_; }
  // The factors of a substep, c <- c + tau A c each: upwind one for every
  // axis; Lax-Wendroff (2-D, 3-D) one per axis. stencil(f) is factor f's A
  // (Lax-Wendroff: the part that does not scale with tau), (cells, cells),
  // row i the rate of change of c_i.
  int factor_count() const;
  const SparseRows& stencil(int factor) const;
  // The substeps of each observation interval, and their length.
  const std::vector<int64_t>& substeps() const;
  const std::vector<double>& substep_length() const;
  // The largest substep the scheme's bound allows, courant included
  // (infinite without flow or diffusion).
  double stable_substep() const;
  // Observed values per time: the sensors' count, or the grid's cells.
  int64_t observed() const;

  // Forward and its exact transpose on f64 rows of releases: x (rows,
  // cells) -> y (rows, K observed), and g (rows, K observed) -> (rows,
  // cells). Throw on a size that is not that, or for a coefficient unknown.
  std::vector<double> forward_rows(const std::vector<double>& x, int64_t rows) const;
  std::vector<double> adjoint_rows(const std::vector<double>& g, int64_t rows) const;
  // The steps' factors and schedule (transport_steps.h).
  const transport::Plan& plan() const { return *plan_; }
  // The constant tables on `device`, uploaded once per device and shared by
  // copies (prepare_tables makes them at a stage start, before a captured
  // step could); the reference stays valid with the operator.
  const TransportTablesOnDevice& tables_on(fk::Device device) const;
  void prepare_tables(fk::Device device, fk::DType dtype) const override;

 private:
  // The factors, their transposes, the schedule and the sensors (a
  // coefficient unknown: the release, and the steps for the diffusivity
  // option without the field: D = 0, or no flow; substeps() and
  // stable_substep() describe that schedule, not a field's).
  // Refuses `shape` unless it is the grid, or has its axis count with a
  // uniform flow and no sensors (then the stencil is rebuilt there).
  void check_grid(const fk::Dims& shape, const char* who) const;
  Domain domain_;
  AdvectionDiffusionOptions options_;
  std::shared_ptr<const transport::Plan> plan_;  // shared by copies and autograd nodes
  struct DeviceCache {
    std::mutex mu;
    std::map<std::string, TransportTablesOnDevice> by_device;
  };
  std::shared_ptr<DeviceCache> device_cache_ = std::make_shared<DeviceCache>();
};

}  // namespace nefi
