#include <limits>

#include "run_request.h"

#include <algorithm>

#include "common.h"
#include "fk/error.h"

namespace fs = std::filesystem;

namespace nefi::cli {

fs::path smoke_config_path(const std::string& instance, const std::vector<fs::path>& dirs) {
  const fs::path p = find_config(dirs, instance + "_smoke.yaml");
  if (p.empty()) {
    std::string searched;
    for (const auto& d : dirs) searched += (searched.empty() ? "" : ", ") + d.string();
    throw fk::Error("--smoke", instance + "_smoke.yaml in " + searched, "no such file");
  }
  return p;
}

void apply_smoke_config(nefi::RunConfig& cfg, const RunRequest& r, bool is_file,
                        const std::vector<fs::path>& dirs) {
  const fs::path p = smoke_config_path(cfg.instance, dirs);
  if (!(is_file && fs::equivalent(p, r.target))) nefi::apply_config_file(cfg, p.string());
  cfg.smoke = true;
  cfg.max_total_steps = r.smoke_steps.value_or(40);
}

nefi::RunConfig resolve_config(const RunRequest& r, const std::vector<fs::path>& dirs) {
  const bool is_file = is_config_file_target(r.target);
  nefi::RunConfig cfg =
      is_file ? nefi::load_run_config_file(r.target) : nefi::default_run_config(r.target);
  // The file's own methods are checked before --smoke's preset replaces
  // them: a bad one is still an error, not hidden by the preset.
  if (r.smoke && is_file) {
    const InstancePtr inst = find_instance(cfg.instance);
    for (const auto& m : cfg.methods) (void)canonical_method(*inst, m, r.target);
  }
  if (r.smoke) apply_smoke_config(cfg, r, is_file, dirs);
  if (!r.scene.empty()) {
    FK_CHECK(cfg.config.has("scene"), "--scene", "an instance with scene classes",
             cfg.instance + " has none");
    nefi::apply_set(cfg, "scene=" + r.scene);
  }
  if (r.smoke_steps) {
    FK_CHECK(*r.smoke_steps >= 0 && *r.smoke_steps <= std::numeric_limits<int>::max(),
             "--smoke-steps", "a step count in [0, 2147483647] (0: no cap)",
             fk::to_text(*r.smoke_steps));
    if (!r.smoke) cfg.max_total_steps = *r.smoke_steps;
  }
  for (const auto& s : r.sets) nefi::apply_set(cfg, s);
  if (!r.device.empty()) {
    try {
      nefi::apply_set(cfg, "run.device=" + r.device);
    } catch (const fk::Error& e) {
      throw fk::Error("--device", e.expected(), e.given());
    }
  }
  if (r.seed) cfg.seed = *r.seed;
  if (!r.methods.empty()) cfg.methods = r.methods;
  // The reference's names for the instance's own solver (neural, nefty, ...)
  // become the instance's; anything else not a method is an error here.
  const InstancePtr inst = find_instance(cfg.instance);
  // Named where they came from: -m, or the config file's run.methods.
  const std::string from = !r.methods.empty() ? "--method"
                           : is_file          ? r.target + ": run.methods"
                                              : "run.methods";
  for (auto& m : cfg.methods) m = canonical_method(*inst, m, from);
  for (size_t i = 0; i < cfg.methods.size(); ++i)  // a second run would overwrite the first
    for (size_t j = 0; j < i; ++j)
      FK_CHECK(cfg.methods[i] != cfg.methods[j], "--method", "each method once",
               "'" + cfg.methods[i] + "' twice");
  return cfg;
}

}  // namespace nefi::cli
