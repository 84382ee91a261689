#pragma once
// What the solving commands (run, diagnose, autotune, gallery) are asked for
// on the command line, and the config it resolves to: the target's config (an
// instance's defaults or a file), then --smoke, --scene, --set, --seed and
// --method in that order.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"

namespace nefi::cli {

struct RunRequest {
  std::string target, out, scene;
  bool smoke = false, plot = true;
  std::optional<int64_t> smoke_steps;  // --smoke-steps (default 40 under --smoke)
  std::vector<std::string> sets, methods, metrics;
  std::optional<uint64_t> seed;
  int threads = 0, save_every = 0;
  std::string resume;
  std::string baseline;  // --baseline/-b: this one method instead of the config's
  std::string device;    // --device: where fields with a device path train (empty: run.device)
  bool verbose = false;  // --verbose: per-stage notes (how device steps ran) on stderr
  bool quiet = false;    // --quiet: no progress line and no summary line (errors only)
};

// configs/<instance>_smoke.yaml from the config search path; fk::Error
// listing the directories searched when there is none.
std::filesystem::path smoke_config_path(const std::string& instance,
                                        const std::vector<std::filesystem::path>& dirs);
// --smoke: configs/<instance>_smoke.yaml on top (never the full config as a
// fallback), then the reference's step cap: --smoke-steps total (default 40,
// each stage scaled alike, at least 2 steps a stage; 0 keeps the preset's
// own budget).
void apply_smoke_config(RunConfig& cfg, const RunRequest& r, bool is_file,
                        const std::vector<std::filesystem::path>& dirs);
// The config of a request; its methods are canonical (canonical_method).
RunConfig resolve_config(const RunRequest& r, const std::vector<std::filesystem::path>& dirs);

}  // namespace nefi::cli
