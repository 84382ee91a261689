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
// Devices: a field on a CUDA device is solved there (gray_scott_device.h):
// with checkpoints, one fused kernel per substep each way (or, on small
// grids, the whole forward and the whole adjoint one launch each), the checkpoints
// and recomputed blocks in device memory, equal to the CPU's to the bit;
// unrolled, the same fk ops on the device. An eager device apply reads the
// field's range back once (the Du check, m); inside a CUDA graph capture it
// cannot, so m comes from field_max alone and a field outside (0 or -inf,
// schedule_limit()] (or NaN) makes the snapshots NaN instead of an error. So the
// checkpointed step is graph-capturable (a bounded head keeps the field
// within field_max: the eager and captured schedules agree); the unrolled
// one is not (it reads the field's maximum back and uploads the initial
// state at every apply). Not linear, not batchable.
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "nefi/domain.h"
#include "nefi/operators/operator.h"
#include "nefi/operators/reaction_diffusion/gray_scott.h"

namespace nefi {

enum class RDGradMode { kCheckpoint, kAutograd };

// One solve's time stepping: m substeps of tau per dt, `total` in all, the
// substep counts after which the state is observed, and the substeps per
// checkpoint (checkpoint_every, or ceil(sqrt(total)) for 0).
struct RDSchedule {
  int64_t m = 1, total = 0, every = 1;
  double tau = 1;
  std::vector<int64_t> obs;
};
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
  // Device, checkpointed: grids of at most this many cells run the whole
  // forward and the whole adjoint as one single-block launch each (with at
  // most 64 observation times), larger ones one launch per substep; 0: always
  // per substep. The same bits either way. 1024 (32 x 32) from the H200
  // (BM_DeviceReactionDiffusionFusedCells, docs/performance.md): fused won
  // at 32 x 32 (1.25 against 1.43 ms a step) and lost 2.1x at 64 x 64.
  // At most kMaxDeviceFusedCells.
  int64_t device_fused_cells = 1024;
};

// The largest device_fused_cells. The fused kernels keep the state in global
// memory (no shared-memory limit), but their one block of 512 threads runs on
// one SM: at 65536 cells (256 x 256) each thread takes 128 cells a substep,
// far past where a launch per substep over the whole device costs less (a
// bound from that count, not a measurement). Larger values are refused,
// not silently capped.
inline constexpr int64_t kMaxDeviceFusedCells = 65536;

class ReactionDiffusionOperator : public Operator {
 public:
  // Throws fk::Error on a non-2-D domain or one under 3 cells per axis,
  // negative rates or F, dt <= 0, observation times that are not increasing
  // positive multiples of dt, nothing observed, field_max < 0 (<= 0 for Du),
  // substep_factor or checkpoint_every out of range. apply throws on a
  // field of the wrong shape or dtype, and on a Du field that is not > 0.
  // Also throws on device_fused_cells outside [0, kMaxDeviceFusedCells].
  ReactionDiffusionOperator(Domain domain, ReactionDiffusionOptions options);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  bool graph_capturable() const override { return options_.grad_mode == RDGradMode::kCheckpoint; }
  // grad_mode autograd: what its apply reads back and uploads ("" under
  // checkpoint).
  std::string not_capturable_reason() const override;
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
  // The stepping for an unknown field whose maximum is `peak`.
  RDSchedule schedule(double peak) const;
  // The largest field maximum whose schedule is the field_max one (>=
  // field_max): a captured device solve, which cannot read the maximum,
  // steps with that schedule and flags fields above this.
  double schedule_limit() const;
  // Throws unless a Du field's smallest value is > 0 (other unknowns: no-op).
  void check_field(double lowest) const;
  // The initial state (u0, v0) as (2, n0, n1) f64 on `device`: built and
  // uploaded on the first call per device and kept (shared by copies of the
  // operator; at_resolution starts afresh), so a captured step uploads nothing.
  fk::Tensor initial_state_on(fk::Device device) const;
  // initial_state_on(device) for a CUDA device under grad_mode checkpoint
  // (the unrolled path uploads its own at every apply), else nothing.
  void prepare_tables(fk::Device device, fk::DType dtype) const override;

 private:
  struct InitialStates;
  fk::Tensor apply_unrolled(const fk::Tensor& x) const;
  Domain domain_;
  ReactionDiffusionOptions options_;
  std::vector<int64_t> obs_steps_;  // observation times in steps of dt
  std::shared_ptr<InitialStates> initial_states_;
};

}  // namespace nefi
