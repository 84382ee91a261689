#pragma once
// ReactionDiffusionOperator: one coefficient field (n0, n1) -> snapshots of
// the Gray-Scott state (gray_scott.h) at the observation times, stacked as
// (n_times * channels, n0, n1) with channels u, v (or one of them) per time,
// starting from the analytic initial condition at each resolution. Computed
// in f64, returned in the field's dtype (f32/f64). The field is the
// `unknown` (nefi.md §4.13: F, k or Du): the feed rate F (k, Du scalars),
// the kill rate k (F, Du scalars) or the diffusivity of u, Du (> 0, harmonic
// face means; F, k scalars); Dv is always a scalar.
//
// Gradients (grad_mode):
//   checkpoint: the hand-written discrete adjoint of the Euler steps, with
//     the state kept every `checkpoint_every` substeps (0: ceil(sqrt(S)) of
//     S substeps) and each block recomputed in the backward: memory
//     O((S / c + c) n) instead of O(S n), one extra forward of work;
//   autograd: the unrolled step as fk ops on the tape (the independent
//     reference the tests compare the adjoint with; O(S) saved tensors).
// The substep count m per dt follows gray_scott::stable_substeps with the
// unknown at max(field_max, its maximum), times substep_factor (the data
// generator runs 4x).
// Not linear, not batchable, not graph-capturable (the step count depends on
// the grid and on F's maximum).
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "nefi/domain.h"
#include "nefi/operators/operator.h"
#include "nefi/operators/reaction_diffusion/gray_scott.h"

namespace nefi {

enum class RDGradMode { kCheckpoint, kAutograd };
enum class RDUnknown { kF, kK, kDu };

struct ReactionDiffusionOptions {
  gray_scott::Rates rates;
  gray_scott::Boundary boundary = gray_scott::Boundary::kNeumann;
  double dt = 1.0;
  std::vector<double> obs_times{25, 50, 75, 100};
  bool observe_u = true, observe_v = true;
  std::array<int64_t, 2> ic_modes{2, 3};
  RDUnknown unknown = RDUnknown::kF;
  double F = 0.045;         // the feed rate when F is not the unknown
  double field_max = 0.07;  // the largest value the unknown may take (stability)
  int64_t substep_factor = 1;
  RDGradMode grad_mode = RDGradMode::kCheckpoint;
  int64_t checkpoint_every = 0;
};

class ReactionDiffusionOperator : public Operator {
 public:
  // Throws fk::Error on a non-2-D domain or one under 3 cells per axis,
  // negative rates or F, dt <= 0, observation times that are not increasing
  // positive multiples of dt, nothing observed, field_max < 0 (<= 0 for Du),
  // substep_factor or checkpoint_every out of range. apply throws on a
  // field of the wrong shape or dtype, and on a Du field that is not > 0.
  ReactionDiffusionOperator(Domain domain, ReactionDiffusionOptions options);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  bool graph_capturable() const override { return false; }
  std::string host_only_reason() const override {
    return "the explicit steps and their discrete adjoint run on host vectors";
  }
  std::string fidelity_tag() const override {
    return options_.substep_factor == 1
               ? "gray-scott-euler"
               : "gray-scott-substep" + std::to_string(options_.substep_factor) + "-float64";
  }
  std::string kind() const override { return "gray_scott"; }
  const Domain& domain() const { return domain_; }
  const ReactionDiffusionOptions& options() const { return options_; }
  gray_scott::Grid grid() const;
  // Substeps per dt for an unknown field whose maximum is `peak`.
  int64_t substeps(double peak) const;
  int64_t channels() const { return options_.observe_u + options_.observe_v; }

 private:
  fk::Tensor apply_unrolled(const fk::Tensor& x) const;
  void check_field(double lowest) const;  // a Du field must stay > 0
  Domain domain_;
  ReactionDiffusionOptions options_;
  std::vector<int64_t> obs_steps_;  // observation times in steps of dt
};

}  // namespace nefi
