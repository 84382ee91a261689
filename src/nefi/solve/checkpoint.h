#pragma once
// Checkpoint: where a solve stands — curriculum position, the trainable
// parameters (the field's flat buffer, then the operator's), the optimizer's
// moments and the NaN guard's lr multiplier — so a run stopped at any step can
// resume and finish bit-identical to one that never stopped (Adam runs; L-BFGS
// keeps no state across a resume and restarts its history).
//
// File: "NEFICKPT" + u32 version + u64 header length + a JSON header (position,
// field kind, per-tensor dtype and shape) + the raw little-endian tensors +
// u64 payload length. Written to a temporary file and renamed, so a crash
// mid-write never leaves a torn checkpoint. A missing, foreign, truncated or
// mismatched file is an fk::Error naming what was expected and what was found.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "fk/tensor.h"

namespace nefi {

struct Checkpoint {
  int stage = 0;        // curriculum stage index
  int step = 0;         // last completed step within the stage
  int global_step = 0;  // completed steps over the whole run
  std::string field_kind;
  // What run wrote it (SolverOptions::run_identity; empty: not said): a
  // resume of another run (seed, config, data) is refused.
  std::string run_identity;
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
};

void save_checkpoint(const std::string& path, const Checkpoint& ck);
Checkpoint load_checkpoint(const std::string& path);

}  // namespace nefi
