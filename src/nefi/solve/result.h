#pragma once
// Result of a solve: the fields at the final grid (detached), the prediction,
// the per-step history, per-stage summaries and timing.
#include <map>
#include <string>
#include <vector>

#include "nefi/field/field.h"

namespace nefi {

struct History {
  std::vector<std::string>
      columns;  // step, global_step, stage, lr, progress, total, data_loss, <losses>
  std::vector<std::vector<double>> rows;
  // The values of one column (empty when unknown).
  std::vector<double> column(const std::string& name) const;
  std::string csv() const;
};

struct StageResult {
  std::string name;
  fk::Dims shape;
  int steps = 0;  // steps actually run
  double seconds = 0;
  double final_total = 0;
  double final_data_loss = 0;
  std::string stop = "completed";  // completed | early_stop | discrepancy | time_budget | callback
                                   // | failed (batch_invert: a problem that diverged)
  double lr_mult = 1;
  double final_progress = 1;
  int64_t ops = 0, launches = 0;  // fk counters over the stage's steps
  // Device runs: how the steps ran (CUDA graph replays, or eager and why)
  // and, after "; ", the operator's device_note (a setting its device path
  // replaced), one line for verbose output; and the steps that were graph
  // launches.
  std::string device_note;
  int64_t graph_steps = 0;
};

struct Result {
  FieldMap fields;      // detached, at the final stage grid, after postprocess
  FieldMap raw_fields;  // the same before postprocess
  fk::Tensor prediction;
  History history;
  std::vector<StageResult> stages;
  std::map<std::string, double> post_info;  // e.g. scale_factor
  uint64_t seed = 0;
  int restart = 0;             // which restart won
  std::string device = "cpu";  // where the field trained (SolverOptions::device)
  double total_s = 0;
  int64_t n_parameters = 0;
  int batch_size = 1;  // > 1: solved by batch_invert with this many problems
  std::string error;   // batch_invert: why this problem failed (empty: it did not)
  int total_steps() const;
  double ms_per_step() const;
  double ops_per_step() const;
  // Summed over stages (for the last stage only, use stages.back()).
};

}  // namespace nefi
