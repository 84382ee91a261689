#include "nefi/io/run_config.h"

#include <filesystem>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "fk/error.h"
#include "nefi/io/fnv.h"

namespace nefi {
namespace {

std::string flow(const YAML::Node& n) {
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

void check_keys(const YAML::Node& n, const std::string& section,
                const std::vector<std::string>& valid) {
  FK_CHECK(n.IsMap(), "config section '" + section + "'", "a mapping", flow(n));
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    bool ok = false;
    std::string list;
    for (const auto& v : valid) {
      ok = ok || v == k;
      list += (list.empty() ? "" : ", ") + v;
    }
    FK_CHECK(ok, "config section '" + section + "'", "one of the keys " + list,
             "unknown key '" + k + "'");
  }
}

}  // namespace

RunConfig default_run_config(const std::string& instance) {
  InstancePtr inst = find_instance(instance);
  RunConfig c;
  c.instance = inst->name();
  c.config = inst->default_config();
  c.methods = {inst->methods().front()};
  return c;
}

// A function-try-block: values of the wrong type (a list for a seed, a
// mapping for a key) throw YAML exceptions, config errors like any other.
void apply_config_file(RunConfig& cfg, const std::string& path) try {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw fk::Error("config file", "a readable config file", "'" + path + "'");
  } catch (const YAML::Exception& e) {
    throw fk::Error(path, "valid YAML", e.what());
  }
  check_keys(root, "top level (" + path + ")", {"instance", "config", "solver", "run"});
  if (root["instance"]) {
    const std::string name = root["instance"].as<std::string>();
    FK_CHECK(cfg.instance.empty() || cfg.instance == name, path, "instance '" + cfg.instance + "'",
             "'" + name + "'");
  }
  if (const YAML::Node c = root["config"]) {
    FK_CHECK(c.IsMap(), "config section 'config'", "a mapping", flow(c));
    for (const auto& kv : c) {
      const std::string k = kv.first.as<std::string>();
      cfg.config.set(k, kv.second.IsScalar() ? kv.second.as<std::string>() : flow(kv.second));
    }
  }
  if (const YAML::Node s = root["solver"]) {
    check_keys(s, "solver", {"nan_guard", "checkpoint_every", "max_bad_steps"});
    if (s["nan_guard"]) cfg.nan_guard = s["nan_guard"].as<bool>();
    if (s["checkpoint_every"]) cfg.checkpoint_every = s["checkpoint_every"].as<int64_t>();
    if (s["max_bad_steps"]) cfg.max_bad_steps = s["max_bad_steps"].as<int64_t>();
  }
  if (const YAML::Node r = root["run"]) {
    check_keys(r, "run", {"seed", "methods"});
    if (r["seed"]) cfg.seed = r["seed"].as<uint64_t>();
    if (r["methods"]) {
      cfg.methods.clear();
      for (const auto& m : r["methods"]) cfg.methods.push_back(m.as<std::string>());
    }
  }
} catch (const YAML::Exception& e) {
  throw fk::Error(path, "config values of the documented types", e.what());
}

RunConfig load_run_config_file(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw fk::Error("config file", "a readable config file", "'" + path + "'");
  } catch (const YAML::Exception& e) {
    throw fk::Error(path, "valid YAML", e.what());
  }
  FK_CHECK(root.IsMap() && root["instance"] && root["instance"].IsScalar(), path,
           "a top-level 'instance:' key naming an instance", "none");
  RunConfig cfg = default_run_config(root["instance"].as<std::string>());
  apply_config_file(cfg, path);
  return cfg;
}

void apply_set(RunConfig& cfg, const std::string& a) {
  const auto eq = a.find('=');
  FK_CHECK(eq != std::string::npos && eq > 0, "--set", "KEY=VALUE", "'" + a + "'");
  std::string key = a.substr(0, eq);
  const std::string value = a.substr(eq + 1);
  if (key.rfind("config.", 0) == 0) key = key.substr(7);
  try {
    if (key == "run.seed" || key == "seed") {
      cfg.seed = YAML::Load(value).as<uint64_t>();
    } else if (key == "solver.nan_guard") {
      cfg.nan_guard = YAML::Load(value).as<bool>();
    } else if (key == "solver.checkpoint_every") {
      cfg.checkpoint_every = YAML::Load(value).as<int64_t>();
    } else if (key == "solver.max_bad_steps") {
      cfg.max_bad_steps = YAML::Load(value).as<int64_t>();
    } else {
      cfg.config.set(key, value);
    }
  } catch (const YAML::Exception&) {
    throw fk::Error("--set " + key, "a value of the right type", "'" + value + "'");
  }
}

std::string to_yaml(const RunConfig& cfg) {
  std::ostringstream os;
  os << "instance: " << cfg.instance << "\nconfig:\n";
  for (const auto& e : cfg.config.entries())
    os << "  " << e.key << ": " << Params::render(e.value) << "\n";
  os << "solver:\n  nan_guard: " << (cfg.nan_guard ? "true" : "false")
     << "\n  checkpoint_every: " << cfg.checkpoint_every
     << "\n  max_bad_steps: " << cfg.max_bad_steps << "\nrun:\n  seed: " << cfg.seed
     << "\n  methods: [";
  for (size_t i = 0; i < cfg.methods.size(); ++i) os << (i ? ", " : "") << cfg.methods[i];
  os << "]\n";
  return os.str();
}

std::string config_hash(const RunConfig& cfg, const std::string& extra) {
  return fnv1a_hex8(to_yaml(cfg) + extra);
}

}  // namespace nefi
