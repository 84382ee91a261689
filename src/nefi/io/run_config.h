#pragma once
// RunConfig: what `nefi run` executes — an instance, its typed config, the
// methods, the seed and solver switches. Config files (YAML):
//   instance: <name>
//   config:  {<instance keys>}     unknown or mistyped keys are errors
//   solver:  {nan_guard, checkpoint_every, max_bad_steps}
//   run:     {seed, methods: [...]}
// --set KEY=VALUE accepts an instance key (optionally `config.KEY`),
// `run.seed`, or `solver.KEY`.
#include <string>
#include <vector>

#include "nefi/instances/instance.h"
#include "nefi/params.h"

namespace nefi {

struct RunConfig {
  std::string instance;
  Params config;
  uint64_t seed = 0;
  std::vector<std::string> methods;
  bool nan_guard = true;
  int64_t checkpoint_every = 25;
  int64_t max_bad_steps = 10;
  bool smoke = false;
};

// Defaults of a registered instance.
RunConfig default_run_config(const std::string& instance);
// Applies a YAML file (layout above) on top of `cfg`; an `instance:` key that
// names another instance is an error. Returns the file's instance.
void apply_config_file(RunConfig& cfg, const std::string& path);
RunConfig load_run_config_file(const std::string& path);
void apply_set(RunConfig& cfg, const std::string& assignment);
std::string to_yaml(const RunConfig& cfg);
// 8 hex digits over the effective config (and anything else in `extra`).
std::string config_hash(const RunConfig& cfg, const std::string& extra = "");

}  // namespace nefi
