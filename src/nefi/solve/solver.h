#pragma once
// Solver: runs a Curriculum on an InverseProblem. Per step:
//   field(stage grid, progress) -> operator -> LossSet -> backward -> fused Adam(W)
// with one host read of the loss scalars per step. Around it:
//   NaN guard   a non-finite total restores the last good parameters (snapshot
//               at stage start and after stage steps 0, checkpoint_every,
//               2 checkpoint_every, ... that were good), halves the stage's lr
//               multiplier, clears the optimizer state and skips the step;
//               more than max_bad_steps in a row throws fk::Error
//   EMA         optim.ema: a shadow of the parameters, copied in at stage end
//   stopping    (once progress >= 1) early stop on the data loss, Morozov
//               discrepancy (masked RMSE <= tau * noise_std), a wall-clock
//               budget for the whole run, or a callback returning false
//   seeds       the field is re-initialised from `seed` at run start
//   checkpoints with checkpoint_path set, the position, parameters, Adam
//               moments, EMA shadow, f16 loss scale and L-BFGS history are
//               written every checkpoint_interval steps, at every stage end
//               and at every stop (checkpoint.h), with the early-stopping
//               state; resume_from continues a run at the step after a saved
//               one (its history and stages report the whole run, the part
//               before the save included) and finishes bit-identical to an
//               uninterrupted run (but for an operator's warm start, which
//               the checkpoint does not hold: darcy_flow's and dot3d's first
//               solve after a resume starts cold and agrees to the solver's
//               tolerance),
//               stopping where it stops (the NaN guard's snapshot is taken
//               at the resumed step: a later bad step restores that).
//               Refused (saving or resuming) with restarts, resuming with
//               only_stage, and for another run's checkpoint (run_identity)
//   device      a CUDA device: the run moves the field (Field::has_device_path),
//               the operator's trainable parameters, each stage's
//               measurement and the Adam(W) state there; the operator and
//               losses then run on device tensors (a host-only operator, or
//               one whose trainable parameters cannot follow, is refused at
//               construction, device_solve_refusal; nothing is copied back
//               behind its back; all of it goes back to the CPU at the end,
//               an error included)
//               and a step reads nothing back until its end: the loss
//               total, components and gradient norm come back in one copy
//               (DeviceStepBlock), clipping and the NaN guard's skip happen
//               on the device (the update is gated on a finite total). The
//               step is captured as one CUDA graph after a warm-up step and
//               replayed for the rest of the stage (StepGraph; cuda_graph or
//               NEFI_CUDA_GRAPH=0 turn it off, an operator that is not
//               graph-capturable or a failed capture falls back to eager
//               steps, StageResult::device_note says which and why, and
//               names any setting the operator's device path replaced); a
//               replay gives bitwise the parameters eager steps give. The
//               field returns to the CPU before the final fields are
//               evaluated. L-BFGS runs its evaluations (forward, losses,
//               backward) on the device and its two-loop recursion and line
//               search on the host, each evaluation uploading the
//               parameters and reading the total and the gradient back
//               (not captured). SGD, EMA, fp16 loss scaling and operators
//               whose trainable parameters cannot follow stay on the CPU
//               (refused).
// The final fields are evaluated at the last stage's grid at the end of its
// annealing schedule (progress_at(steps)) when it ran to completion, else at
// the progress it stopped at (bands never trained stay off).
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fk/device.h"
#include "nefi/solve/curriculum.h"
#include "nefi/solve/curriculum_overrides.h"
#include "nefi/solve/problem.h"
#include "nefi/solve/result.h"

namespace nefi {

struct StepInfo {
  // step: the stage's 0-based step index (the history's `step`); global_step:
  // the steps done over the run, this one included (1 after the first, so a
  // progress line reads global_step / total_steps; the history's
  // `global_step` is the 0-based row index, one less).
  int stage = 0, step = 0, global_step = 0, stage_steps = 0, total_steps = 0;
  double lr = 0, progress = 0, total = 0, data_loss = 0;
  // The step's wall time (from the top of the loop to the callbacks, history
  // bookkeeping included) and the fk counters it bumped (profilers read these).
  double step_ms = 0;
  int64_t step_ops = 0, step_view_ops = 0, step_launches = 0;
  // The step was a replay of the stage's captured CUDA graph (a device
  // solve's steps are otherwise eager: warm-up, capture, a refused graph).
  bool graph_replay = false;
};

// The live objects of a stage, handed to SolverOptions::on_stage_start after
// the stage is set up and before its first step (a profiler times a bare loop
// on them; anything it does to the parameters is what the solve continues from).
struct StageView {
  int index = 0;
  const Stage* stage = nullptr;
  const Domain* domain = nullptr;
  Field* field = nullptr;
  const Operator* op = nullptr;
  const Measurement* obs = nullptr;
  const LossSet* losses = nullptr;
  const OptimConfig* optim = nullptr;
  std::vector<fk::Tensor> params;  // field parameters, then operator parameters
};

// Return false to end the current stage.
using StepCallback = std::function<bool(const StepInfo&)>;

struct SolverOptions {
  uint64_t seed = 0;
  bool nan_guard = true;
  // A final field with non-finite values (a last update that diverged) is an
  // fk::Error naming it; off for a caller that judges the result itself (a
  // refine refit, a penalty probe).
  bool refuse_non_finite = true;
  int checkpoint_every = 25;
  int max_bad_steps = 10;
  std::vector<StepCallback> callbacks;
  std::string checkpoint_path;  // empty: no checkpoints on disk
  int checkpoint_interval = 0;  // steps between checkpoints (0: stage ends only)
  std::string resume_from;      // a checkpoint file to continue from
  // Who writes and who may resume the checkpoints (a hash of the run's
  // config, seed and data, say): a resume from a checkpoint another run
  // wrote is an fk::Error. Empty: unchecked. run_identity_text: the text it
  // hashes (a config's YAML), kept in the checkpoints so that a refusal
  // names what changed.
  std::string run_identity;
  std::string run_identity_text;
  // Profiling and benchmarking switches; the defaults are the normal solve.
  bool stopping_rules = true;         // false: no early stop, discrepancy or time-budget stop
  std::optional<int> only_stage;      // run just this stage (negative: counted from the end)
  std::optional<uint64_t> init_seed;  // initialise the field from this seed instead of `seed`
                                      // (a benchmark pairs one measurement with several seeds)
  std::function<void(const StageView&)> on_stage_start;
  fk::Device device = fk::kCPU;  // where the field trains (see above)
  std::optional<bool>
      cuda_graph;  // device steps as a CUDA graph; unset: NEFI_CUDA_GRAPH (default on)
  // > 0: solve_and_record caps the curriculum (Curriculum::capped), as --smoke does.
  int max_total_steps = 0;
  // Applied by solve_and_record (and the batched runs) to the instance's
  // curriculum before the cap.
  CurriculumOverrides curriculum;
  // A measured dataset that run_method gives the method in place of the
  // instance's synthetic measurement (RunConfig::data); no ground truth then.
  std::optional<Measurement> measured;
};

class Solver {
 public:
  Solver(InverseProblem problem, Curriculum curriculum, SolverOptions options = {});
  Result run();

 private:
  struct Attempt;
  // `first`: the first restart (the only one a resume applies to).
  Attempt run_once(uint64_t seed, bool first, std::chrono::steady_clock::time_point t_run);
  InverseProblem problem_;
  Curriculum cur_;
  SolverOptions opt_;
};

}  // namespace nefi
