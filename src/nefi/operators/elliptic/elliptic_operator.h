#pragma once
// EllipticOperator: a field → the observed solutions of −∇·(σ∇u) + κu = b_p
// for a set of right-hand sides p (current patterns, well configurations),
// with σ = transform(field) (identity, or exp for a log-conductivity), on
// the domain's cell-centred grid (elliptic_solve.h; nefi.md §5.3).
//
// The right-hand sides and the observation are functions of the grid, so
// at_resolution re-evaluates them: rhs(domain) (P, *shape) f64, and
// observe(domain) a dense (M, numel) f64 matrix mapping one solution to its
// M observables (boundary traces, gauge samples, referenced to their mean),
// or (P, M, numel), one matrix per right-hand side.
// Without an observation the output is u itself, (P, *shape). The
// observables' count does not depend on the grid, so every curriculum stage
// predicts the native measurement (no resampling of the data).
//
// The solve runs in the field's dtype and on its device with the IFT adjoint
// (or unrolled / none); warm starts (if on) are kept per resolution between
// calls. On a CUDA device (elliptic_device.h) it needs linear_solver cg
// and grad_mode ift or none (host_only_reason names the setting otherwise;
// both preconditioners, jacobi and multigrid, run there); then
// the CG's stopping test runs on the device and the step is
// graph-capturable. The tables (right-hand sides, observation, κ) are
// converted and moved once per (device, dtype). Not batchable.
#include <functional>
#include <memory>
#include <string>

#include "nefi/domain.h"
#include "nefi/operators/elliptic/elliptic_solve.h"
#include "nefi/operators/operator.h"
#include "nefi/operators/table_cache.h"

namespace nefi {

using GridFunction = std::function<fk::Tensor(const Domain&)>;

struct EllipticOperatorOptions {
  std::string boundary = "dirichlet";        // parse_boundary's syntax
  std::string sigma_transform = "identity";  // identity | exp
  elliptic::FaceMean face_mean = elliptic::FaceMean::kHarmonic;
  elliptic::SolveOptions solve;
  bool warm_start = false;
  std::string fidelity_tag = "elliptic-fv";
};

class EllipticOperator : public Operator {
 public:
  // observe may be empty (the output is u). Throws fk::Error on a bad
  // boundary string, transform, or a right-hand side / observation whose
  // shape does not fit the domain.
  EllipticOperator(Domain domain, GridFunction rhs, GridFunction observe,
                   EllipticOperatorOptions options, GridFunction kappa = {});
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  bool graph_capturable() const override { return host_only_reason().empty(); }
  // A step through a host-only setting is not captured for the same reason.
  std::string not_capturable_reason() const override { return host_only_reason(); }
  std::string host_only_reason() const override { return elliptic::device_refusal(options_.solve); }
  std::string fidelity_tag() const override { return options_.fidelity_tag; }
  std::string kind() const override { return "elliptic"; }
  // The right-hand sides, observation and κ on a CUDA device in f32/f64.
  void prepare_tables(fk::Device device, fk::DType dtype) const override;

  const Domain& domain() const { return domain_; }
  const elliptic::EllipticGrid& grid() const { return grid_; }
  // The statistics of the last forward and adjoint solves (a device solve's
  // stay on the device: device_cg_stats(solve_state().device_forward_stats)).
  const elliptic::WarmStart& solve_state() const { return *warm_; }
  // u for the field x (P, *shape), without the observation.
  fk::Tensor solve(const fk::Tensor& x) const;

 private:
  struct Tables {
    fk::Tensor rhs, observe, kappa;
  };
  void prepare();
  Tables tables(fk::Device device, fk::DType dtype) const;
  Domain domain_;
  GridFunction rhs_fn_, observe_fn_, kappa_fn_;
  EllipticOperatorOptions options_;
  elliptic::EllipticGrid grid_;
  fk::Tensor rhs_, observe_, kappa_;  // f64 at this resolution
  std::shared_ptr<elliptic::WarmStart> warm_;
  std::shared_ptr<TableCache<Tables>> tables_;
};

}  // namespace nefi
