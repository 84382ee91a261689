#pragma once
// StageRun: one curriculum stage of a Solver run (solver.h) -- the stage's
// grid, operator, data and losses, the optimizer state, the NaN guard's
// snapshots, and the loop over its steps with its stopping rules.
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fk/amp.h"
#include "fk/profile.h"
#include "fk/tensor.h"
#include "nefi/solve/checkpoint.h"
#include "nefi/solve/curriculum.h"
#include "nefi/solve/device_step_block.h"
#include "nefi/solve/fused_optimizer.h"
#include "nefi/solve/lbfgs.h"
#include "nefi/solve/problem.h"
#include "nefi/solve/result.h"
#include "nefi/solve/solver.h"
#include "nefi/solve/step_graph.h"

namespace nefi::detail {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0);

// The trainable parameters of a stage: the field's flat buffer, then the operator's.
std::vector<fk::Tensor> solve_parameters(Field& field, const Operator& op);

// The grid a stage runs on: its own shape, or the domain's when it has none.
fk::Dims stage_shape(const Stage& stage, const Domain& domain);

// A run's history columns: step, global_step, stage, lr, progress, total,
// data_loss, then each loss's name (the Solver's and the batches').
std::vector<std::string> history_columns(const LossSet& losses);

// SolverOptions::only_stage (BatchOptions' too) as an index into n_stages
// (negative: from the end); nullopt when unset; an fk::Error outside.
std::optional<size_t> only_stage_index(const std::optional<int>& only, int n_stages);

// The curriculum's optimizer settings as adam_update takes them.
OptimizerOptions adam_options(const OptimConfig& o);

// What a persistent non-finite loss at `stage` is and what commonly causes
// it, as the solver and the batch (batch_stages.h) report it.
std::string persistent_non_finite(const std::string& stage, int64_t max_bad_steps);

// One curriculum stage: its grid, operator, data and losses, the optimizer
// state and the NaN guard's snapshots, and the loop over its steps.
class StageRun {
 public:
  // Moves the field to the stage's grid, sets up the optimizer and calls
  // SolverOptions::on_stage_start.
  StageRun(const InverseProblem& problem, const Curriculum& cur, const SolverOptions& opt,
           size_t index);
  // Continues from a saved position inside this stage.
  void resume(const Checkpoint& ck, const std::string& path);
  // What a run knew of itself before this process: the seconds it spent,
  // and whether its history and stage summaries are whole (not after a
  // resume from a checkpoint that kept none, nor for a stage run alone):
  // only a whole run's are saved in its checkpoints.
  struct Before {
    double seconds = 0;
    bool whole = true;
  };
  // Runs the remaining steps, appending to `so_far`'s history (its stages:
  // the ones done, which a checkpoint keeps); `global` counts the run's
  // steps; `run_over` is set when the run's time budget is spent.
  StageResult run(Result& so_far, int& global, int total_steps, Clock::time_point t_run,
                  const Before& before, bool& run_over);

  const Domain& domain() const { return domain_; }
  const OperatorPtr& op() const { return op_; }
  double progress() const { return progress_; }

 private:
  struct StepValue {
    fk::Tensor pred;
    LossSet::Value val;
    double total = 0;
    // A device step's values, read back in its one copy (components: 0 for
    // a zero-weight term; discrepancy_mse: when the stopping rule needs it).
    std::optional<std::vector<double>> components;
    std::optional<double> discrepancy_mse;
  };
  void lbfgs_step(int t, double lr, StepValue& v);
  // False when the loss is not finite: the parameters are restored and the step skipped.
  bool adam_step(int t, double lr, StepValue& v);
  bool non_finite_step(int t, double total);
  // The device path: the same step enqueued without host reads (captured as
  // a CUDA graph when allowed), its scalars read back once at its end.
  bool device_step(int t, double lr, StepValue& v);
  void enqueue_device_step(int t);
  int64_t step_shape();
  double record(History& history, int t, int global, double lr, const StepValue& v);
  // `stop`: the rule that ended the stage at step t ("" while it goes on);
  // `so_far`: the run so far (kept when whole), `run_seconds` its seconds.
  void save(int t, int global, const std::string& stop, const Result* so_far,
            double run_seconds) const;
  std::vector<fk::Tensor> resumed_shadow(const std::vector<fk::Tensor>& ema,
                                         const std::string& path) const;
  // Calls the callbacks and applies the stopping rules; nullptr: go on.
  // `own_stop`: what the run's own rules (early stopping, the discrepancy
  // principle) said at this step, whatever the callbacks or budget did.
  const char* stop_reason(const StepInfo& info, const StepValue& v, Clock::time_point t_run,
                          bool& run_over, const char*& own_stop);
  // Early stopping and the discrepancy principle (their state moves).
  const char* own_stop_reason(const StepInfo& info, const StepValue& v);

  const Curriculum& cur_;
  const SolverOptions& opt_;
  const int index_;
  const Stage& stage_;
  const Domain domain_;
  const OperatorPtr op_;
  const Measurement obs_;
  const LossSet losses_;
  Field& field_;
  std::vector<fk::Tensor> params_;
  FusedOptimizer adam_;
  std::optional<fk::amp::GradScaler> scaler_;  // f16 trunks: dynamic loss scaling
  const bool use_lbfgs_;
  Lbfgs lbfgs_;
  std::vector<double> xh_;          // L-BFGS's host copy of the parameters
  std::vector<fk::Tensor> good_;    // the NaN guard's last good parameters
  std::vector<fk::Tensor> shadow_;  // the EMA shadow
  StageResult sr_;
  double lr_mult_ = 1.0;  // halved by every non-finite step
  double progress_ = 0;   // of the last step taken (the field's annealing)
  int bad_ = 0;           // non-finite steps in a row
  int t0_ = 0;            // the first step (after a resume, the one after the saved step)
  // The stage's count of steps, seconds, ops, launches and graph steps
  // before a resume, and where this process's part of it started.
  StageResult before_;
  Clock::time_point t_stage_;
  fk::profile::Counters c_stage_;
  double best_ = std::numeric_limits<double>::infinity();  // early stopping's best data loss
  int since_best_ = 0;
  // Device runs: the step's scalars block, then the graph (destroyed first:
  // it restores the device's stream after a sync).
  const bool discrepancy_on_device_;
  std::unique_ptr<DeviceStepBlock> block_;
  std::unique_ptr<StepGraph> graph_;
  int64_t shape_ = 0;           // bumped when the step's host-side structure changes
  double shape_progress_ = -1;  // the progress step_shape last saw
};

}  // namespace nefi::detail
