#pragma once
// The explicit steps behind AdvectionDiffusionOperator (advection_diffusion.h),
// shared by its two kinds of unknown (a release, or the diffusivity map): each
// split factor's stencil assembled for a diffusivity per cell (a face takes
// the harmonic mean of its two cells'), the substep schedule, and the Euler
// step over blocks of interleaved states.
#include <cstdint>
#include <vector>

#include "fk/device.h"
#include "nefi/cuda/transport_kernels.h"
#include "nefi/domain.h"
#include "nefi/operators/advection_diffusion.h"
#include "nefi/operators/sparse_rows.h"

namespace nefi::transport {

// Velocity component a at cell i: one value per cell, or one for all.
struct Flow {
  std::vector<std::vector<double>> v;  // per axis; empty: no flow
  double at(int a, int64_t i) const {
    if (v.empty()) return 0;
    return v[a].size() == 1 ? v[a][0] : v[a][static_cast<size_t>(i)];
  }
};

// One factor of a substep, c <- c + tau (A + tau T) c: the stencil A, its
// transpose, (Lax-Wendroff) T's weights on their patterns, and the axis whose
// faces it holds (-1: every axis).
struct Factor {
  SparseRows L, Lt;
  std::vector<double> per_tau, per_tau_t;
  int axis = -1;
};

// The factors of a substep (upwind one for all axes, Lax-Wendroff one per
// axis, stepped in order on even substeps and in reverse on odd ones) and
// the schedule of substeps per observation interval.
struct Plan {
  Flow flow;
  std::vector<Factor> factors;
  double stable_tau = 0;  // the substep bound, courant included
  std::vector<int64_t> substeps;
  std::vector<double> tau;
  std::vector<int64_t> sensors;  // flat cells observed; empty: all
  bool source = false;           // the release is a source rate (else c(0))
  std::vector<double> release;   // a coefficient unknown's known release (cells)
  int64_t cells = 0;
  int64_t observed() const { return sensors.empty() ? cells : std::ssize(sensors); }
};

// The faces of `domain`'s grid under the boundaries (one, or one per axis)
// for the coefficient unknowns' gradients (cuda/transport_kernels.h).
cuda::TransportGrid transport_grid(const Domain& domain,
                                   const std::vector<TransportBoundary>& boundary);
// The geometry of factor `axis`'s stencil (-1: every axis): grid, spacing,
// open faces and scheme; the caller points it at the flow and D.
cuda::TransportStencil transport_stencil(const Domain& domain,
                                         const std::vector<TransportBoundary>& boundary,
                                         TransportScheme scheme, int axis);
// The largest stable substep of stencil s (before the courant factor), from
// the largest rate over its rows (upwind: -A_ii; Lax-Wendroff: (v_f / h)^2,
// transport_stencil_row) and the largest D; infinite without flow or
// diffusion.
double stable_substep(const cuda::TransportStencil& s, double top_rate, double top_D);

// Fills plan's factors and schedule for diffusivity D (one value, or one per
// cell, >= 0) from the flow, boundaries, scheme, courant and times of o;
// throws fk::Error past kMaxTransportSubsteps.
void build_steps(Plan& plan, const Domain& domain, const std::vector<double>& D,
                 const AdvectionDiffusionOptions& o);
// The factors' axes, in the order a substep's first half applies them: every
// axis at once (-1: upwind, or a 1-D grid), or one split factor per axis.
std::vector<int> factor_axes(const Domain& domain, const AdvectionDiffusionOptions& o);
// plan's stable substep (courant times `stable`, the factors' smallest
// bound) and its schedule over o's times; throws fk::Error past
// kMaxTransportSubsteps.
void schedule_steps(Plan& plan, double stable, const AdvectionDiffusionOptions& o);

// The coefficient unknowns (transport_coefficients.cpp): the diffusivity
// map D or the velocity v, each plan built for the field's values.
// diffusivity_plan is base's flow, sensors and release with the steps built
// for D (cells, each finite and >= 0, else fk::Error naming the cell);
// velocity_plan base's sensors and release and the option's diffusivity with
// the flow v (axes x cells, axis-major, each finite). Their substeps follow
// D's or v's largest values. coefficient_forward gives the observations, K
// times observed() values, of the release stepped through such a plan (kept
// with the interval starts in `keep` for the gradient); *_gradient
// the gradient in D (cells) or v (axes x cells) of <g, those observations>,
// through the steps' exact transposes and each face's harmonic mean or
// mean velocity (the substep count held fixed; memory: a state per
// interval, and within an interval of S substeps one every ceil(sqrt(S))
// and one run's factor inputs, about 3 sqrt(S) states). A device runs the
// same schedule (cuda/transport_device.cpp).
// What a forward keeps for its gradient: the plan built for the field and
// the state at the start of every observation interval.
struct CoefficientRun {
  Plan plan;
  std::vector<std::vector<double>> start;
};
Plan diffusivity_plan(const Plan& base, const Domain& domain, const AdvectionDiffusionOptions& o,
                      const std::vector<double>& D);
Plan velocity_plan(const Plan& base, const Domain& domain, const AdvectionDiffusionOptions& o,
                   const std::vector<double>& v);
std::vector<double> coefficient_forward(Plan plan, CoefficientRun* keep = nullptr);
std::vector<double> diffusivity_gradient(const CoefficientRun& run, const Domain& domain,
                                         const AdvectionDiffusionOptions& o,
                                         const std::vector<double>& D,
                                         const std::vector<double>& g);
std::vector<double> velocity_gradient(const CoefficientRun& run, const Domain& domain,
                                      const AdvectionDiffusionOptions& o,
                                      const std::vector<double>& g);
// The substeps of a checkpointed run within an interval of S substeps:
// ceil(sqrt(S)) (at least 1).
int64_t checkpoint_run(int64_t S);

// Each factor's stencil (transposed: its transpose) uploaded to `device`,
// f64 weights and (Lax-Wendroff) the per-substep part.
std::vector<TransportTablesOnDevice::Rows> factor_rows_on(const Plan& plan, bool transposed,
                                                          fk::Device device);

// Batch rows stepped together (interleaved: cell i of row b at i B + b).
constexpr int64_t kBlock = 8;

// out = c + tau (M c + s) for B <= kBlock interleaved states (s may be null),
// with M's pattern and the weights w.
void euler_step(const SparseRows& M, const double* w, double tau, int64_t B, const double* c,
                const double* s, double* out);

// B rows of x (each n long) into `to`, interleaved.
void interleave(const double* x, int64_t n, int64_t B, double* to);

// Each factor's weights for substeps of tau: A's plus tau T's where T is
// given (a copy set per interval), else A's own. transposed: Lt's.
class StepWeights {
 public:
  StepWeights(const std::vector<Factor>& factors, bool transposed)
      : factors_(factors), transposed_(transposed), scaled_(factors.size()) {}
  StepWeights(const StepWeights&) = delete;
  StepWeights& operator=(const StepWeights&) = delete;
  void set(double tau);
  const SparseRows& matrix(size_t f) const { return transposed_ ? factors_[f].Lt : factors_[f].L; }
  const double* at(size_t f) const {
    return scaled_[f].empty() ? matrix(f).weight.data() : scaled_[f].data();
  }

 private:
  const std::vector<Factor>& factors_;
  bool transposed_;
  std::vector<std::vector<double>> scaled_;
};

// The factor applied j-th in substep `step`: in order on even substeps, in
// reverse on odd ones (so that two substeps are a symmetric, second-order
// split).
inline size_t factor_at(int64_t step, size_t j, size_t count) {
  return step % 2 == 0 ? j : count - 1 - j;
}

}  // namespace nefi::transport
