#pragma once
// Checkpoint: where a solve stands — curriculum position, the trainable
// parameters (the field's flat buffer, then the operator's), the optimizer's
// moments, the NaN guard's lr multiplier, and what else the run keeps across
// steps (an EMA shadow, the f16 loss scaler, L-BFGS's history) — so a run
// stopped at any step can resume and finish bit-identical to one that never
// stopped (unless a non-finite step follows: the NaN guard's last good
// parameters are the resumed step's, not saved) -- and the run so far (its
// history rows, the summaries of the stages done, the time spent), so the
// resumed run reports the whole run, as the uninterrupted one does.
//
// File: "NEFICKPT" + u32 version (3; 1 and 2 still read) + u64 header length + a JSON header
// (position, field kind, per-tensor dtype and shape) + the raw little-endian tensors + u64 payload
// length. Written to a temporary file and renamed, so a crash mid-write never leaves a torn
// checkpoint. A missing, foreign, truncated or mismatched file is an fk::Error naming what was
// expected and what was found.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "nefi/solve/lbfgs.h"
#include "nefi/solve/result.h"

namespace nefi {

struct Checkpoint {
  int stage = 0;        // curriculum stage index
  int step = 0;         // last completed step within the stage
  int global_step = 0;  // completed steps over the whole run
  std::string field_kind;
  // What run wrote it (SolverOptions::run_identity; empty: not said): a
  // resume of another run (seed, config, data) is refused.
  std::string run_identity;
  // The config that identity hashes (SolverOptions::run_identity_text; empty:
  // not kept): a refused resume names the keys that changed.
  std::string run_identity_text;
  // The stop rule of the run's own that ended the stage at `step`
  // (early_stop, discrepancy; empty: the stage goes on, or a callback or the
  // time budget interrupted it, which a resume continues past), and the
  // stopping state the step left: so a resumed run stops where the
  // uninterrupted one did.
  std::string stop;
  double best_data_loss = std::numeric_limits<double>::infinity();
  int since_best = 0;
  double final_total = 0, final_data_loss = 0;  // the step's losses (the stage's result)
  double lr_mult = 1.0;
  int64_t adam_steps = 0;
  std::vector<fk::Tensor> params, adam_m, adam_v;  // f32/f64, host
  // Kept only by the runs that have them (empty, 0 or none otherwise; a file
  // written before they were kept reads as none):
  std::vector<fk::Tensor> ema;      // optim.ema's shadow of params, host
  double loss_scale = 0;            // an f16 run's scaler (0: none)
  int64_t loss_scale_tracker = 0;   // its clean steps since it last moved
  std::optional<LbfgsState> lbfgs;  // optimizer lbfgs
  std::vector<double> lbfgs_x;      // its f64 iterate (the parameters hold it rounded)
  // The run so far (a file written before they were kept reads as none: a
  // resume then reports only its own steps): the history through `step`,
  // the stages before `stage`, this stage's steps, seconds, ops, launches
  // and CUDA graph steps through `step`, and the seconds the run has spent.
  std::optional<History> history;
  std::vector<StageResult> stages_done;
  int stage_steps = 0;
  double stage_seconds = 0, run_seconds = 0;
  int64_t stage_ops = 0, stage_launches = 0, stage_graph_steps = 0;
};

void save_checkpoint(const std::string& path, const Checkpoint& ck);
Checkpoint load_checkpoint(const std::string& path);

}  // namespace nefi
