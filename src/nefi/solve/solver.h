#pragma once
// Solver: runs a Curriculum on an InverseProblem. Per step:
//   field(stage grid, progress) -> operator -> LossSet -> backward -> fused Adam(W)
// with one host read of the loss components per step. Around it:
//   NaN guard   a non-finite total restores the last good parameters (snapshot
//               every checkpoint_every good steps), halves the stage's lr
//               multiplier, clears the optimizer state and skips the step;
//               more than max_bad_steps in a row throws fk::Error
//   EMA         optim.ema: a shadow of the parameters, copied in at stage end
//   stopping    (once progress >= 1) early stop on the data loss, Morozov
//               discrepancy (masked RMSE <= tau * noise_std), a wall-clock
//               budget for the whole run, or a callback returning false
//   seeds       the field is re-initialised from `seed` at run start
//   checkpoints with checkpoint_path set, the position, parameters and Adam
//               moments are written every checkpoint_interval steps and at
//               every stage end (checkpoint.h); resume_from continues a run
//               at the step after a saved one and finishes bit-identical to
//               an uninterrupted run (its history starts at the checkpoint;
//               an EMA shadow is not saved and restarts from the parameters)
// The final fields are evaluated at the last stage's grid at the progress
// actually reached.
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "nefi/solve/curriculum.h"
#include "nefi/solve/problem.h"
#include "nefi/solve/result.h"

namespace nefi {

struct StepInfo {
  int stage = 0, step = 0, global_step = 0, stage_steps = 0, total_steps = 0;
  double lr = 0, progress = 0, total = 0, data_loss = 0;
};

// Return false to end the current stage.
using StepCallback = std::function<bool(const StepInfo&)>;

struct SolverOptions {
  uint64_t seed = 0;
  bool nan_guard = true;
  int checkpoint_every = 25;
  int max_bad_steps = 10;
  std::vector<StepCallback> callbacks;
  std::string checkpoint_path;  // empty: no checkpoints on disk
  int checkpoint_interval = 0;  // steps between checkpoints (0: stage ends only)
  std::string resume_from;      // a checkpoint file to continue from
};

class Solver {
 public:
  Solver(InverseProblem problem, Curriculum curriculum, SolverOptions options = {});
  Result run();

 private:
  struct Attempt;
  Attempt run_once(uint64_t seed, std::chrono::steady_clock::time_point t_run);
  InverseProblem problem_;
  Curriculum cur_;
  SolverOptions opt_;
};

}  // namespace nefi
