#include "nefi/io/run_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <type_traits>
#include <vector>

#include <yaml-cpp/yaml.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fk/device.h"
#include "fk/error.h"
#include "fk/io/npy.h"
#include "fk/knobs.h"
#include "nefi/yaml_whole.h"

namespace nefi {
namespace {

fk::Knob kDevice("NEFI_DEVICE", fk::KnobChoices{{"cpu", "cuda", "cuda:N"}}, "cpu",
                 "nefi: where a run's neural field (or grid baseline) trains, and where nefi "
                 "diagnose runs the operator's products, when neither --device nor the "
                 "config's run.device says (cpu or cuda[:N]), as the reference's NEFI_DEVICE",
                 fk::KnobRead::PerCall);

std::string flow(const YAML::Node& n) {
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

// A scalar of type T under `key` of a config file; anything else is an error
// naming the file and the key.
template <typename T>
T scalar_as(const YAML::Node& n, const std::string& path, const std::string& key,
            const char* expected) {
  try {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (n.IsScalar()) return yaml_whole<T>(n);
    } else {
      if (n.IsScalar()) return n.as<T>();
    }
  } catch (const YAML::Exception&) {
  }
  throw fk::Error(path + ": key '" + key + "'", expected, flow(n));
}

std::string key_of(const YAML::Node& k, const std::string& path, const std::string& section) {
  return scalar_as<std::string>(k, path, section + " key", "a plain key");
}

void check_keys(const YAML::Node& n, const std::string& path, const std::string& section,
                const std::vector<std::string>& valid) {
  FK_CHECK(n.IsMap(), "config section '" + section + "' (" + path + ")", "a mapping", flow(n));
  for (const auto& kv : n) {
    const std::string k = key_of(kv.first, path, section);
    bool ok = false;
    std::string list;
    for (const auto& v : valid) {
      ok = ok || v == k;
      list += (list.empty() ? "" : ", ") + v;
    }
    FK_CHECK(ok, "config section '" + section + "' (" + path + ")", "one of the keys " + list,
             "unknown key '" + k + "'");
  }
}

// yaml-cpp keeps both copies of a key written twice, and which one a reader
// sees depends on how it reads the map (indexing: the first; iterating: the
// last): refused, naming the key and where it sits. An alias is a reference
// to its anchor's node: one inside itself (`&a [*a]`) recursed until the
// stack overflowed, and nested aliases (a "billion laughs") made a tree of
// 2^40 nodes; each node is checked once, and a cycle is refused.
struct YamlWalk {
  std::vector<YAML::Node> open, checked;
  static bool holds(const std::vector<YAML::Node>& nodes, const YAML::Node& n) {
    return std::any_of(nodes.begin(), nodes.end(), [&](const YAML::Node& m) { return m.is(n); });
  }
};

void refuse_duplicate_keys(const YAML::Node& node, const std::string& path, const std::string& at,
                           YamlWalk& walk) {
  if (!node.IsMap() && !node.IsSequence()) return;
  FK_CHECK(!YamlWalk::holds(walk.open, node), "config file " + path,
           "no alias inside the node it names",
           "one" + (at.empty() ? std::string(" at the top level") : " in " + at));
  if (YamlWalk::holds(walk.checked, node)) return;
  walk.open.push_back(node);
  if (node.IsMap()) {
    std::set<std::string> seen;
    for (const auto& kv : node) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "(a non-scalar key)";
      FK_CHECK(seen.insert(key).second, "config file " + path, "each key once in a mapping",
               "'" + key + "' twice" + (at.empty() ? " at the top level" : " in " + at));
      refuse_duplicate_keys(kv.second, path, at.empty() ? key : at + "." + key, walk);
    }
  } else {
    for (size_t i = 0; i < node.size(); ++i)
      refuse_duplicate_keys(node[i], path, at + "[" + std::to_string(i) + "]", walk);
  }
  walk.open.pop_back();
  walk.checked.push_back(node);
}

void refuse_duplicate_keys(const YAML::Node& node, const std::string& path, const std::string& at) {
  YamlWalk walk;
  refuse_duplicate_keys(node, path, at, walk);
}

YAML::Node load_yaml_file(const std::string& path) {
  FK_CHECK(!std::filesystem::is_directory(path), "config file", "a readable config file",
           "'" + path + "', a directory");
  YAML::Node root;
  try {
    std::ifstream in(path);
    if (!in.good()) throw YAML::BadFile(path);
    std::vector<YAML::Node> docs = YAML::LoadAll(in);
    // A second document ("---") was dropped without a word; an empty one (a
    // closing "---") is none.
    std::erase_if(docs, [](const YAML::Node& d) { return d.IsNull(); });
    FK_CHECK(docs.size() <= 1, path, "one YAML document",
             fk::to_text(docs.size()) + " (separated by ---)");
    if (!docs.empty()) root = docs.front();
  } catch (const YAML::BadFile&) {
    throw fk::Error("config file", "a readable config file", "'" + path + "'");
  } catch (const YAML::Exception& e) {
    throw fk::Error(path, "valid YAML", e.what());
  }
  refuse_duplicate_keys(root, path, "");
  return root;
}

// One override of the curriculum (CurriculumOverrides) from its YAML text:
// the same for a config file's `curriculum:` section and for --set
// curriculum.ATTR / optim.ema / optim.betas; `where` names the source. A
// value out of range is an error here, before any instance runs.
void set_curriculum(RunConfig& cfg, const std::string& attr, const std::string& value,
                    const std::string& where) {
  CurriculumOverrides& o = cfg.curriculum;
  CurriculumOverrides next = o;
  try {
    const YAML::Node v = YAML::Load(value);
    // A whole number read wide, so that one past int's range is named by its range.
    const auto whole = [&](int64_t lo, int64_t hi) {
      const int64_t n = yaml_whole<int64_t>(v);
      FK_CHECK(n >= lo && n <= hi, where + "." + attr,
               "a whole number in [" + fk::to_text(lo) + ", " + fk::to_text(hi) + "]", value);
      return static_cast<int>(n);
    };
    if (attr == "early_stop_patience") {
      next.early_stop_patience = whole(1, std::numeric_limits<int>::max());
    } else if (attr == "early_stop_min_delta") {
      next.early_stop_min_delta = v.as<double>();
    } else if (attr == "discrepancy_tau") {
      next.discrepancy_tau = v.as<double>();
    } else if (attr == "time_budget_s") {
      next.time_budget_s = v.as<double>();
    } else if (attr == "restarts") {
      next.restarts = whole(1, kMaxRestarts);
    } else if (attr == "ema") {
      next.ema = v.as<double>();
    } else if (attr == "betas") {
      const auto b = v.as<std::vector<double>>();
      FK_CHECK(b.size() == 2, where + ".betas", "two values [beta1, beta2]", value);
      next.betas = std::pair{b[0], b[1]};
    } else if (attr == "lr_mult") {
      FK_CHECK(v.IsMap(), where + ".lr_mult", "a mapping {prefix: multiplier}", value);
      next.lr_mult = v.as<std::map<std::string, double>>();
    } else if (attr == "freeze") {
      // [prefix, ...] for every stage, or [[prefix, ...], ...] one per stage.
      FK_CHECK(v.IsSequence(), where + ".freeze", "a list of prefixes or of prefix lists", value);
      std::vector<std::vector<std::string>> lists;
      if (v.size() > 0 && v[0].IsSequence())
        lists = v.as<std::vector<std::vector<std::string>>>();
      else
        lists.push_back(v.as<std::vector<std::string>>());
      next.freeze = lists;
    } else {
      throw fk::Error(where,
                      "a curriculum attribute (early_stop_patience, early_stop_min_delta, "
                      "discrepancy_tau, time_budget_s, restarts, freeze) or optim.ema / "
                      "optim.betas / optim.lr_mult",
                      "'" + attr + "'");
    }
  } catch (const YAML::Exception&) {
    const bool whole = attr == "early_stop_patience" || attr == "restarts";
    throw fk::Error(where + "." + attr,
                    whole               ? "a whole number"
                    : attr == "betas"   ? "two numbers [beta1, beta2]"
                    : attr == "lr_mult" ? "a mapping {prefix: multiplier}"
                    : attr == "freeze"  ? "a list of prefixes or of prefix lists"
                                        : "a number",
                    "'" + value + "'");
  }
  try {  // the ranges, on a default curriculum (with a stage per freeze list)
    Curriculum probe;
    if (next.freeze && next.freeze->size() > 1) probe.stages.resize(next.freeze->size());
    next.applied_to(probe);
  } catch (const fk::Error& e) {
    throw fk::Error(where + "." + attr, e.expected(), e.given());
  }
  o = next;
}

void set_device(RunConfig& cfg, const std::string& value, const std::string& where) {
  try {
    cfg.device = fk::parse_device(value).str();
  } catch (const fk::Error&) {
    throw fk::Error(where, "cpu or cuda[:N]", "'" + value + "'");
  }
}

void set_optim(RunConfig& cfg, const std::string& attr, const std::string& value,
               const std::string& where = "--set optim");

// run.data / run.mask (paths: relative ones as given, from the working
// directory) and run.noise_std (a level >= 0).
void set_measured(RunConfig& cfg, const std::string& attr, const std::string& value,
                  const std::string& where) {
  if (attr == "data" || attr == "mask") {
    FK_CHECK(!value.empty(), where, "a .npy path", "''");
    (attr == "data" ? cfg.data : cfg.mask) = value;
    return;
  }
  double sigma = -1;
  try {
    sigma = YAML::Load(value).as<double>();
  } catch (const YAML::Exception&) {
  }
  FK_CHECK(std::isfinite(sigma) && sigma >= 0, where, "a noise level >= 0", "'" + value + "'");
  cfg.noise_std = sigma;
}

void apply_curriculum_section(RunConfig& cfg, const YAML::Node& c, const std::string& path) {
  check_keys(c, path, "curriculum",
             {"early_stop_patience", "early_stop_min_delta", "discrepancy_tau", "time_budget_s",
              "restarts", "freeze", "optim"});
  for (const auto& kv : c) {
    const std::string k = key_of(kv.first, path, "curriculum");
    if (k != "optim") {
      set_curriculum(cfg, k, kv.second.IsScalar() ? kv.second.Scalar() : flow(kv.second),
                     path + ": curriculum");
      continue;
    }
    FK_CHECK(kv.second.IsMap(), "config section 'curriculum.optim' (" + path + ")", "a mapping",
             flow(kv.second));
    for (const auto& o : kv.second) {
      try {  // as --set optim.KEY: ema and betas, or the optimizer's instance keys
        set_optim(cfg, key_of(o.first, path, "curriculum.optim"),
                  o.second.IsScalar() ? o.second.Scalar() : flow(o.second), "curriculum.optim");
      } catch (const fk::Error& e) {
        throw fk::Error(path + ": " + e.where(), e.expected(), e.given());
      }
    }
  }
}

// Whether instance key `k` is declared a string (an unknown key: no, and
// Params names it when set).
bool is_string_key(const Params& p, const std::string& k) {
  for (const auto& e : p.entries())
    if (e.key == k) return std::holds_alternative<std::string>(e.value);
  return false;
}

// Whether `t` is one quoted YAML scalar, "..." (\" inside) or '...' ('' inside):
// '"a" or "b"' is not (YAML read its first scalar alone).
bool one_quoted_scalar(const std::string& t) {
  if (t.size() < 2 || (t.front() != '"' && t.front() != '\'') || t.back() != t.front())
    return false;
  const char q = t.front();
  for (size_t i = 1; i + 1 < t.size(); ++i) {
    if (q == '"' && t[i] == '\\') {
      ++i;
    } else if (t[i] == q) {
      if (q != '\'' || i + 2 >= t.size() || t[i + 1] != '\'') return false;
      ++i;
    }
  }
  return true;
}

// --set KEY=TEXT for an instance key: a string key takes TEXT as written (a
// shell has removed its quotes already; YAML cut "bumps # c" to bumps), or
// unquoted when TEXT is one quoted YAML scalar; any other key is parsed.
void set_instance_key(Params& p, const std::string& k, const std::string& text) {
  if (!is_string_key(p, k)) return p.set(k, text);
  p.set_value(k, one_quoted_scalar(text) ? YAML::Load(text).as<std::string>() : text);
}

// The instance keys: a scalar's text or a flow list, parsed by Params::set;
// a string key's scalar as the file's YAML read it (its text again through
// Params::set lost the quotes: "a # b" was cut to a, "[a]" read as a list).
void apply_instance_section(RunConfig& cfg, const YAML::Node& c, const std::string& path) {
  FK_CHECK(c.IsMap(), "config section 'config' (" + path + ")", "a mapping", flow(c));
  for (const auto& kv : c) {
    const std::string k = key_of(kv.first, path, "config");
    try {
      if (kv.second.IsScalar() && is_string_key(cfg.config, k))
        cfg.config.set_value(k, kv.second.Scalar());
      else
        cfg.config.set(k, kv.second.IsScalar() ? kv.second.Scalar() : flow(kv.second));
    } catch (const fk::Error& e) {  // say which file holds the bad value
      throw fk::Error(path + ": " + e.where(), e.expected(), e.given());
    }
  }
}

// A count the solver keeps as an int, in [lo, 2^31 - 1]: beyond it it would
// wrap (4294967296 read as 0).
int64_t int_count(int64_t v, int64_t lo, const std::string& where) {
  FK_CHECK(v >= lo && v <= std::numeric_limits<int>::max(), where,
           "an integer in [" + fk::to_text(lo) + ", 2147483647]" + (lo == 0 ? " (0: none)" : ""),
           fk::to_text(v));
  return v;
}

void apply_solver_section(RunConfig& cfg, const YAML::Node& s, const std::string& path) {
  check_keys(s, path, "solver", {"nan_guard", "checkpoint_every", "max_bad_steps", "cuda_graph"});
  if (s["nan_guard"]) cfg.nan_guard = scalar_as<bool>(s["nan_guard"], path, "nan_guard", "a bool");
  if (s["checkpoint_every"])
    cfg.checkpoint_every =
        int_count(scalar_as<int64_t>(s["checkpoint_every"], path, "checkpoint_every", "an integer"),
                  1, path + ": key 'checkpoint_every'");
  if (s["max_bad_steps"])
    cfg.max_bad_steps =
        int_count(scalar_as<int64_t>(s["max_bad_steps"], path, "max_bad_steps", "an integer"), 0,
                  path + ": key 'max_bad_steps'");
  if (s["cuda_graph"])
    cfg.cuda_graph = scalar_as<bool>(s["cuda_graph"], path, "cuda_graph", "a bool");
}

void apply_run_section(RunConfig& cfg, const YAML::Node& r, const std::string& path) {
  check_keys(
      r, path, "run",
      {"seed", "init_seed", "methods", "max_total_steps", "device", "data", "mask", "noise_std"});
  for (const char* k : {"data", "mask", "noise_std"})
    if (r[k])
      set_measured(cfg, k, scalar_as<std::string>(r[k], path, k, "a scalar"),
                   path + ": key '" + k + "'");
  if (r["seed"]) cfg.seed = scalar_as<uint64_t>(r["seed"], path, "seed", "an integer >= 0");
  if (r["init_seed"])
    cfg.init_seed = scalar_as<uint64_t>(r["init_seed"], path, "init_seed", "an integer >= 0");
  if (r["device"])
    set_device(cfg, scalar_as<std::string>(r["device"], path, "device", "cpu or cuda[:N]"),
               path + ": key 'device'");
  if (r["max_total_steps"])
    cfg.max_total_steps = int_count(
        scalar_as<int64_t>(r["max_total_steps"], path, "max_total_steps", "an integer >= 0"), 0,
        path + ": key 'max_total_steps'");
  if (const YAML::Node m = r["methods"]) {
    FK_CHECK(m.IsSequence() && m.size() > 0, path + ": key 'methods'",
             "a list of one or more method names", flow(m));
    cfg.methods.clear();
    for (const auto& x : m)
      cfg.methods.push_back(scalar_as<std::string>(x, path, "methods", "a method name"));
  }
}

}  // namespace

RunConfig default_run_config(const std::string& instance) {
  InstancePtr inst = find_instance(instance);
  RunConfig c;
  c.instance = inst->name();
  c.config = inst->default_config();
  c.methods = {inst->methods().front()};
  set_device(c, kDevice.as_string(), "NEFI_DEVICE");
  return c;
}

namespace {

// The instance a file names: `instance: NAME` (layout A) or the reference's
// layout B, `instance: {type: NAME, <instance keys>}`.
std::string instance_name(const YAML::Node& in, const std::string& path) {
  if (!in.IsMap()) return scalar_as<std::string>(in, path, "instance", "an instance name");
  FK_CHECK(in["type"], path + ": key 'instance'",
           "an instance name, or a mapping with its name under 'type:' (layout B)", flow(in));
  return scalar_as<std::string>(in["type"], path, "instance.type", "an instance name");
}

}  // namespace

void apply_config_file(RunConfig& cfg, const std::string& path) {
  const YAML::Node root = load_yaml_file(path);
  check_keys(root, path, "top level", {"instance", "config", "curriculum", "solver", "run"});
  if (const YAML::Node in = root["instance"]) {
    const std::string name = instance_name(in, path);
    FK_CHECK(cfg.instance.empty() || cfg.instance == name, path, "instance '" + cfg.instance + "'",
             "'" + name + "'");
    if (in.IsMap()) {  // layout B: the instance keys beside its type
      FK_CHECK(!root["config"], path, "the instance keys under 'instance:' (layout B) or 'config:'",
               "both");
      YAML::Node keys = YAML::Clone(in);
      keys.remove("type");
      if (keys.size() > 0) apply_instance_section(cfg, keys, path);
    }
  }
  if (const YAML::Node c = root["config"]) apply_instance_section(cfg, c, path);
  if (const YAML::Node c = root["curriculum"]) apply_curriculum_section(cfg, c, path);
  if (const YAML::Node s = root["solver"]) apply_solver_section(cfg, s, path);
  if (const YAML::Node r = root["run"]) apply_run_section(cfg, r, path);
}

bool is_config_file_target(const std::string& target) {
  return std::filesystem::is_regular_file(target) || target.ends_with(".yaml") ||
         target.ends_with(".yml");
}

RunConfig load_run_config_file(const std::string& path) {
  const YAML::Node root = load_yaml_file(path);
  FK_CHECK(root.IsMap() && root["instance"], path, "a top-level 'instance:' key", "none");
  const std::string name = instance_name(root["instance"], path);
  // An unknown name is said as the file's key, not as a CLI target.
  std::string names;
  bool known = false;
  for (const auto& i : all_instances()) {
    known = known || i->name() == name;
    names += (names.empty() ? "" : ", ") + i->name();
  }
  FK_CHECK(known, path + ": key 'instance'", "an instance (" + names + ")", "'" + name + "'");
  RunConfig cfg = default_run_config(name);
  apply_config_file(cfg, path);
  return cfg;
}

namespace {

// optim.ATTR: the optimizer keys every instance declares.
// `where` names the source: "--set optim", or a file's curriculum.optim.
void set_optim(RunConfig& cfg, const std::string& attr, const std::string& value,
               const std::string& where) {
  if (attr == "ema" || attr == "betas" || attr == "lr_mult")
    return set_curriculum(cfg, attr, value, where);
  const std::vector<std::string> valid{"optimizer",
                                       "weight_decay",
                                       "grad_clip",
                                       "lbfgs_history",
                                       "lbfgs_max_iter",
                                       "lbfgs_max_eval",
                                       "lbfgs_tolerance_grad",
                                       "lbfgs_tolerance_change",
                                       "lbfgs_line_search"};
  FK_CHECK(std::find(valid.begin(), valid.end(), attr) != valid.end() && cfg.config.has(attr),
           where + "." + attr,
           "an optimizer attribute (" + fmt::format("{}", fmt::join(valid, ", ")) +
               ", ema, betas, lr_mult)",
           "'" + attr + "'");
  cfg.config.set(attr, value);
}

// stage.ATTR: a per-stage key of this instance; stage.steps=N gives every
// stage N steps (the steps list, or thermal's steps and stage_steps).
void set_stage(RunConfig& cfg, const std::string& attr, const std::string& value) {
  std::vector<std::string> valid{"steps"};
  for (const char* k : {"lr_schedule", "lr_warmup", "anneal_fraction", "anneal_steps",
                        "lr_min_ratio", "lr_step_size", "lr_gamma"})
    if (cfg.config.has(k)) valid.push_back(k);
  if (attr == "warmup_steps" && cfg.config.has("lr_warmup"))  // the reference's name
    return cfg.config.set("lr_warmup", value);
  FK_CHECK(std::find(valid.begin(), valid.end(), attr) != valid.end(), "--set stage." + attr,
           "a stage attribute of " + cfg.instance + " (" +
               fmt::format("{}", fmt::join(valid, ", ")) + ")",
           "'" + attr + "'");
  if (attr != "steps") return cfg.config.set(attr, value);
  const double n = YAML::Load(value).as<double>();
  FK_CHECK(n >= 1 && n <= 1e9 && n == static_cast<int64_t>(n), "--set stage.steps",
           "a positive step count", "'" + value + "'");
  if (!cfg.config.has("stage_steps")) {
    const size_t stages = cfg.config.list("steps").size();
    return cfg.config.set_value("steps", std::vector<double>(stages, n));
  }
  const int64_t stages = cfg.config.i("n_stages");
  cfg.config.set_value("steps", static_cast<int64_t>(n) * std::max<int64_t>(1, stages));
  cfg.config.set_value("stage_steps",
                       stages > 1 ? std::vector<double>(stages, n) : std::vector<double>{});
}

void set_solver(RunConfig& cfg, const std::string& attr, const std::string& value) {
  if (attr == "nan_guard") {
    cfg.nan_guard = YAML::Load(value).as<bool>();
  } else if (attr == "checkpoint_every") {
    cfg.checkpoint_every =
        int_count(yaml_whole<int64_t>(YAML::Load(value)), 1, "--set solver.checkpoint_every");
  } else if (attr == "max_bad_steps") {
    cfg.max_bad_steps =
        int_count(yaml_whole<int64_t>(YAML::Load(value)), 0, "--set solver.max_bad_steps");
  } else if (attr == "cuda_graph") {
    cfg.cuda_graph = YAML::Load(value).as<bool>();
  } else {
    throw fk::Error("--set solver." + attr,
                    "a solver switch (nan_guard, checkpoint_every, max_bad_steps, cuda_graph)",
                    "'" + attr + "'");
  }
}

void set_run(RunConfig& cfg, const std::string& attr, const std::string& value) {
  if (attr == "seed") {
    cfg.seed = yaml_whole<uint64_t>(YAML::Load(value));
  } else if (attr == "init_seed") {
    cfg.init_seed = yaml_whole<uint64_t>(YAML::Load(value));
  } else if (attr == "max_total_steps") {
    cfg.max_total_steps =
        int_count(yaml_whole<int64_t>(YAML::Load(value)), 0, "--set run.max_total_steps");
  } else if (attr == "device") {
    set_device(cfg, value, "--set run.device");
  } else if (attr == "data" || attr == "mask" || attr == "noise_std") {
    set_measured(cfg, attr, value, "--set run." + attr);
  } else {
    throw fk::Error("--set run." + attr,
                    "a run setting (seed, init_seed, max_total_steps, device, data, mask, "
                    "noise_std)",
                    "'" + attr + "'");
  }
}

}  // namespace

void apply_set(RunConfig& cfg, const std::string& a) {
  const auto eq = a.find('=');
  FK_CHECK(eq != std::string::npos && eq > 0, "--set", "KEY=VALUE", "'" + a + "'");
  std::string key = a.substr(0, eq);
  const std::string value = a.substr(eq + 1);
  if (key.rfind("config.", 0) == 0) key = key.substr(7);
  auto after = [&](const char* prefix) {
    const std::string p = prefix;
    return key.rfind(p, 0) == 0 ? std::optional<std::string>(key.substr(p.size())) : std::nullopt;
  };
  try {
    if (key == "seed") {
      set_run(cfg, "seed", value);
    } else if (auto r = after("run.")) {
      set_run(cfg, *r, value);
    } else if (auto s = after("solver.")) {
      set_solver(cfg, *s, value);
    } else if (auto o = after("optim.")) {
      set_optim(cfg, *o, value);
    } else if (auto st = after("stage.")) {
      set_stage(cfg, *st, value);
    } else if (auto c = after("curriculum.optim.")) {  // the config file's nesting
      try {
        set_optim(cfg, *c, value);
      } catch (const fk::Error& e) {
        throw fk::Error("--set curriculum.optim." + *c, e.expected(), e.given());
      }
    } else if (auto c = after("curriculum.")) {
      set_curriculum(cfg, *c, value, "--set curriculum");
    } else {
      set_instance_key(cfg.config, key, value);
    }
  } catch (const YAML::Exception&) {
    throw fk::Error("--set " + key, "a value of the right type", "'" + value + "'");
  }
}

SolverOptions solver_options(const RunConfig& cfg) {
  SolverOptions so;
  so.nan_guard = cfg.nan_guard;
  so.max_total_steps = static_cast<int>(cfg.max_total_steps);
  so.checkpoint_every = static_cast<int>(cfg.checkpoint_every);
  so.max_bad_steps = static_cast<int>(cfg.max_bad_steps);
  so.cuda_graph = cfg.cuda_graph;
  so.device = fk::parse_device(cfg.device);
  so.curriculum = cfg.curriculum;
  so.init_seed = cfg.init_seed;
  if (!cfg.data.empty()) {
    Measurement m;
    m.data = fk::read_npy(cfg.data);
    if (!cfg.mask.empty()) m.mask = fk::read_npy(cfg.mask);
    m.noise_std = cfg.noise_std.value_or(-1);
    so.measured = std::move(m);
  } else {
    FK_CHECK(cfg.mask.empty() && !cfg.noise_std, "run.mask / run.noise_std",
             "a measured dataset beside them (run.data)", "none");
  }
  return so;
}

}  // namespace nefi
