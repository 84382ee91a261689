#pragma once
// nefi profile: where one curriculum stage's step time goes. Runs the real
// Solver loop (through Instance::run) on one stage with the stopping rules
// off: `warmup` untimed steps, `steps` timed steps (wall time and fk counters
// per step, no tracing), then `steps` more with chrome tracing on, from which
// the per-op table is built (self time: an op's time minus the ops nested in
// it). --minimal times a bare loop instead — field -> operator -> losses ->
// backward -> fused Adam step on the stage's live objects — without the
// solver's history, NaN guard, checkpoints or callbacks.
#include <string>
#include <vector>

#include "fk/device.h"
#include "fk/shape.h"
#include "nefi/instances/instance.h"
#include "nefi/solve/curriculum_overrides.h"

namespace nefi::bench {

struct ProfileOptions {
  std::string method;  // empty: the instance's first method
  uint64_t seed = 0;
  int steps = 20, warmup = 5;
  int stage = -1;  // negative: counted from the end
  bool minimal = false;
  std::string trace_path;          // where the chrome trace goes (empty: not kept)
  fk::Device device = fk::kCPU;    // where the field trains (SolverOptions::device)
  CurriculumOverrides curriculum;  // the config's (the stopping rules stay off)
};

struct OpStat {
  std::string name;
  double calls_per_step = 0;
  double self_ms_per_step = 0;
};

struct ProfileReport {
  std::string instance, method;
  int stage = 0, n_stages = 0;
  fk::Dims shape;
  int steps = 0, warmup = 0;
  bool minimal = false;
  std::string device = "cpu";
  double median_ms = 0, mean_ms = 0, first_ms = 0;
  double ops_per_step = 0, view_ops_per_step = 0, launches_per_step = 0;
  int64_t peak_bytes = 0;
  int64_t n_params = 0;
  int threads = 1;
  std::vector<OpStat> ops;  // by self time, largest first
  // The chrome trace written (ProfileOptions::trace_path), or empty: none
  // asked for, or no step left to trace after --warmup + --steps.
  std::string trace_written;
};

ProfileReport profile_instance(const Instance& instance, const Params& config,
                               const ProfileOptions& options);

// The console report: the summary lines, the top `top` ops, or every op when
// `table`.
std::string format_profile(const ProfileReport& r, bool table, int top = 8);
// One JSON object (a line of --json output); `extra` fields are merged in.
std::string profile_json_line(const ProfileReport& r, const std::string& config_path,
                              const std::vector<std::string>& overrides);

}  // namespace nefi::bench
