#pragma once
// DiffuseOpticalOperator: an absorption field μ_a → the observed solutions of
// −∇·(D∇Φ) + (μ_a + κ_b)Φ = q_p for a set of sources p (nefi.md §4.16): the
// elliptic solve of elliptic_solve.h with the unknown in κ rather than σ.
// D is a constant, κ_b a fixed sink (the Robin boundaries of dot3d_model.h)
// and observe(domain) a dense (M, numel) f64 matrix of detector responses,
// so the output is (P, M) (or (P, *detector_shape)) at every grid: the
// native detectors.
//
// Calibration (difference DOT): with reference_absorption > 0 every output is
// divided by the same operator's output for the homogeneous medium μ_a =
// reference_absorption at this resolution (an f64 solve to 1e-10 done once),
// so the discretisation error common to both largely cancels and the data are
// ratios near 1.
//
// The gradient is the solver's IFT adjoint in κ (∂L/∂κ = −λ⊙Φ); warm starts
// (if on) are kept per resolution. It runs on the field's device: on a CUDA
// device with linear_solver cg and grad_mode ift or none (elliptic_device.h;
// host_only_reason names the setting otherwise; jacobi and multigrid both
// run there), and is then graph-capturable. The tables are converted and
// moved once per (device, dtype). Not batchable.
#include <memory>

#include "nefi/operators/elliptic/elliptic_operator.h"
#include "nefi/operators/table_cache.h"

namespace nefi {

struct DiffuseOpticalOptions {
  double diffusion = 1.0 / 3.0;
  double reference_absorption = 0;  // > 0: calibrated outputs
  // The detectors' arrangement: the output is (P, *detector_shape), which
  // holds M values; empty: (P, M).
  fk::Dims detector_shape;
  // boundary, face mean, solve, warm_start and fidelity tag; the transform
  // is unused (the field is μ_a itself).
  EllipticOperatorOptions elliptic;
};

class DiffuseOpticalOperator : public Operator {
 public:
  // Throws fk::Error on D ≤ 0, a missing function, or a right-hand side,
  // sink or observation whose shape does not fit the domain.
  DiffuseOpticalOperator(Domain domain, GridFunction rhs, GridFunction sink, GridFunction observe,
                         DiffuseOpticalOptions options);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  bool graph_capturable() const override { return host_only_reason().empty(); }
  // A step through a host-only setting is not captured for the same reason.
  std::string not_capturable_reason() const override { return host_only_reason(); }
  std::string host_only_reason() const override {
    return elliptic::device_refusal(options_.elliptic.solve);
  }
  std::string fidelity_tag() const override { return options_.elliptic.fidelity_tag; }
  std::string kind() const override { return "diffuse_optical"; }
  // The sources, sink, observation, reference and D on a CUDA device in f32/f64.
  void prepare_tables(fk::Device device, fk::DType dtype) const override;

  const Domain& domain() const { return domain_; }
  const elliptic::WarmStart& solve_state() const { return *warm_; }
  // Φ for the absorption x, (P, *shape).
  fk::Tensor fluence(const fk::Tensor& x) const;

 private:
  void prepare();
  fk::Tensor solve_fluence(const fk::Tensor& x, const elliptic::SolveOptions& solve,
                           const std::shared_ptr<elliptic::WarmStart>& warm) const;
  fk::Tensor observe(const fk::Tensor& phi) const;
  Domain domain_;
  GridFunction rhs_fn_, sink_fn_, observe_fn_;
  DiffuseOpticalOptions options_;
  elliptic::EllipticGrid grid_;
  fk::Tensor rhs_, sink_, observe_, inv_reference_;  // f64 at this resolution
  // Those and the constant D field per (device, dtype) (the f32 inversion
  // would otherwise convert the (M, numel) observation matrix on every call).
  struct Tables {
    fk::Tensor rhs, sink, observe, inv_reference, diffusion;
  };
  Tables tables(fk::Device device, fk::DType dtype) const;
  std::shared_ptr<elliptic::WarmStart> warm_;
  std::shared_ptr<TableCache<Tables>> tables_;
};

}  // namespace nefi
