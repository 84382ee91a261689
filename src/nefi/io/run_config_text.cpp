#include "nefi/io/run_config.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

#include "fk/error.h"
#include "nefi/io/fnv.h"

// A run config as text: the config.yaml a run writes (to_yaml) and the hash
// that names its folder (config_hash).
namespace nefi {
namespace {

// An instance key's value as YAML that reads back as itself: a string
// quoted where plain text would not ("a # b", "[a]", "a: b").
std::string yaml_value(const ParamValue& v) {
  if (!std::holds_alternative<std::string>(v)) return Params::render(v);
  YAML::Emitter e;
  e << std::get<std::string>(v);
  return e.c_str();
}

// What yaml_text writes: config.yaml (re-run as it stands) or the text a run's
// hash is taken over.
enum class YamlFor { kFile, kHash };

// The config as YAML. config.yaml names every device (re-run under another
// NEFI_DEVICE, it stays on its own) and the measured files by absolute
// path (re-runnable from any folder); the hashed text names only a device
// run's device, so a CPU run's hash (its runs/ folder) is what it was
// before the key existed, and no path (config_hash hashes the files' bytes:
// one file named two ways is one run).
std::string yaml_text(const RunConfig& cfg, YamlFor for_) {
  const bool file = for_ == YamlFor::kFile;
  std::ostringstream os;
  os << "instance: " << cfg.instance << "\nconfig:\n";
  for (const auto& e : cfg.config.entries())
    os << "  " << e.key << ": " << yaml_value(e.value) << "\n";
  const CurriculumOverrides& c = cfg.curriculum;
  if (!c.empty()) {
    os << "curriculum:\n";
    if (c.early_stop_patience) os << "  early_stop_patience: " << *c.early_stop_patience << "\n";
    // yaml_float: .inf reads back (fmt's inf did not).
    if (c.early_stop_min_delta)
      os << "  early_stop_min_delta: " << yaml_float(*c.early_stop_min_delta) << "\n";
    if (c.discrepancy_tau) os << "  discrepancy_tau: " << yaml_float(*c.discrepancy_tau) << "\n";
    if (c.time_budget_s) os << "  time_budget_s: " << yaml_float(*c.time_budget_s) << "\n";
    if (c.restarts) os << "  restarts: " << *c.restarts << "\n";
    if (c.freeze) {
      os << "  freeze: [";
      for (size_t i = 0; i < c.freeze->size(); ++i) {
        os << (i ? ", [" : "[");
        for (size_t j = 0; j < (*c.freeze)[i].size(); ++j)
          os << (j ? ", " : "") << fmt::format("\"{}\"", (*c.freeze)[i][j]);
        os << "]";
      }
      os << "]\n";
    }
    if (c.ema || c.betas || c.lr_mult) os << "  optim:\n";
    if (c.ema) os << "    ema: " << yaml_float(*c.ema) << "\n";
    if (c.betas)
      os << "    betas: [" << yaml_float(c.betas->first) << ", " << yaml_float(c.betas->second)
         << "]\n";
    if (c.lr_mult) {
      os << "    lr_mult: {";
      size_t k = 0;
      for (const auto& [prefix, m] : *c.lr_mult)
        os << (k++ ? ", " : "") << fmt::format("\"{}\": {}", prefix, yaml_float(m));
      os << "}\n";
    }
  }
  os << "solver:\n  nan_guard: " << (cfg.nan_guard ? "true" : "false")
     << "\n  checkpoint_every: " << cfg.checkpoint_every
     << "\n  max_bad_steps: " << cfg.max_bad_steps;
  if (cfg.cuda_graph) os << "\n  cuda_graph: " << (*cfg.cuda_graph ? "true" : "false");
  os << "\nrun:\n  seed: " << cfg.seed;
  if (cfg.init_seed) os << "\n  init_seed: " << *cfg.init_seed;
  os << "\n  methods: [";
  for (size_t i = 0; i < cfg.methods.size(); ++i) os << (i ? ", " : "") << cfg.methods[i];
  os << "]\n";
  if (cfg.max_total_steps > 0) os << "  max_total_steps: " << cfg.max_total_steps << "\n";
  if (file || cfg.device != "cpu") os << "  device: " << cfg.device << "\n";
  for (const auto& [key, path] : {std::pair{"data", cfg.data}, {"mask", cfg.mask}})
    if (file && !path.empty())
      os << "  " << key << ": " << YAML::Node(std::filesystem::absolute(path).string()) << "\n";
  if (cfg.noise_std) os << "  noise_std: " << yaml_float(*cfg.noise_std) << "\n";
  return os.str();
}

}  // namespace

std::string to_yaml(const RunConfig& cfg) {
  return yaml_text(cfg, YamlFor::kFile);
}

std::string config_hash(const RunConfig& cfg, const std::string& extra) {
  std::string text = yaml_text(cfg, YamlFor::kHash) + extra;
  for (const std::string& path : {cfg.data, cfg.mask}) {
    if (path.empty()) continue;
    std::ifstream f(path, std::ios::binary);
    FK_CHECK(f.good(), path == cfg.data ? "run.data" : "run.mask", "a readable .npy file",
             "'" + path + "'");
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    text += fmt::format("|{:016x}", fnv1a(bytes.data(), bytes.size()));
  }
  // 12 hex digits (48 bits): with 8 a campaign's configs met in one folder
  // by chance (half the time by ~77k of them), the second run clearing the first's.
  return fnv1a_hex(text, 12);
}

}  // namespace nefi
