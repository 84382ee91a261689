#pragma once
// RunConfig: what `nefi run` executes — an instance, its typed config, the
// methods, the seed and solver switches. Config files (YAML):
//   instance: <name>               (or the reference's layout B:
//                                   instance: {type: <name>, <instance keys>})
//   config:  {<instance keys>}     unknown or mistyped keys are errors
//   curriculum: {early_stop_patience, early_stop_min_delta, discrepancy_tau,
//            time_budget_s, restarts, optim: {ema, betas: [b1, b2]}}
//            (CurriculumOverrides: on top of the instance's own curriculum)
//   solver:  {nan_guard, checkpoint_every, max_bad_steps, cuda_graph}
//            (cuda_graph: a device solve's step as one CUDA graph; unset:
//            the NEFI_CUDA_GRAPH knob, default on)
//   run:     {seed, init_seed, methods: [...], max_total_steps, device, data, mask,
//            noise_std}
// --set KEY=VALUE accepts an instance key (optionally `config.KEY`),
// `run.seed`, `run.init_seed`, `run.max_total_steps`, `run.device`, `run.data`, `run.mask`,
// `run.noise_std`, `solver.KEY`,
// `curriculum.ATTR`, `optim.ATTR` (the optimizer's keys: optimizer,
// weight_decay, grad_clip, lbfgs_*, and ema and betas) and `stage.ATTR` (a
// per-stage key the instance declares; `stage.steps=N` gives every stage N
// steps). An unknown attribute is an error listing the valid ones.
#include <optional>
#include <string>
#include <vector>

#include "nefi/instances/instance.h"
#include "nefi/params.h"
#include "nefi/solve/curriculum_overrides.h"

namespace nefi {

struct RunConfig {
  std::string instance;
  Params config;
  uint64_t seed = 0;
  std::vector<std::string> methods;
  bool nan_guard = true;
  int64_t checkpoint_every = 25;
  int64_t max_bad_steps = 10;
  std::optional<bool> cuda_graph;  // written to YAML only when set
  bool smoke = false;
  // Caps a method's total steps, each stage scaled alike (the reference's
  // scale_budget with at least 2 steps a stage; 0: the curriculum's budget).
  int64_t max_total_steps = 0;
  CurriculumOverrides curriculum;
  // Where the neural field (or a method's grid values) trains: "cpu" or
  // "cuda:N" (fk::Device::str()).
  std::string device = "cpu";
  // A measured dataset in place of the instance's synthetic one (run.data, a
  // .npy of the shape and units of the measurement.npy a synthetic run of the
  // same config writes), its optional mask (run.mask: per-cell weights in
  // [0, 1]) and its noise level (run.noise_std; unset: unknown). Empty: the
  // instance's data generator. There is no ground truth then: the run
  // reports the data fit and the fields, no field metrics.
  std::string data, mask;
  std::optional<double> noise_std;
  // run.init_seed: the field's initialisation (and restarts') seed when it
  // is not the data seed `seed` (SolverOptions::init_seed): an ensemble of
  // inits on one measurement.
  std::optional<uint64_t> init_seed;
};

// Defaults of a registered instance.
RunConfig default_run_config(const std::string& instance);
// Whether a command's TARGET names a config file rather than an instance: a
// regular file, or a name ending in .yaml or .yml (then a missing file is an
// error, not an unknown instance). A directory named like an instance is not
// a config.
bool is_config_file_target(const std::string& target);
// Applies a YAML file (layout above) on top of `cfg`; an `instance:` key that
// names another instance is an error. Returns the file's instance.
void apply_config_file(RunConfig& cfg, const std::string& path);
RunConfig load_run_config_file(const std::string& path);
void apply_set(RunConfig& cfg, const std::string& assignment);
std::string to_yaml(const RunConfig& cfg);
// The solver switches cfg carries: the NaN guard, its checkpoint cadence and
// bad-step limit, the step cap (max_total_steps), cuda_graph, the device,
// the curriculum overrides and the measured dataset (read from run.data and
// run.mask here: an unreadable file is an fk::Error naming it).
SolverOptions solver_options(const RunConfig& cfg);
// 12 hex digits over the effective config (and anything else in `extra`),
// run.data's and run.mask's bytes in place of their paths: another dataset
// under the same name gets another run folder, one file named two ways the
// same one.
std::string config_hash(const RunConfig& cfg, const std::string& extra = "");

}  // namespace nefi
