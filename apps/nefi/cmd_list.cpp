// nefi list [instances|operators|configs] [-v] [--json]: the registered
// instances (with -v their full default config, each key's value and doc),
// the operator catalogue and the bundled configs, as text or as one JSON
// object.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <variant>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common.h"
#include "fk/error.h"
#include "nefi/instances/instance.h"
#include "nefi/operators/catalogue.h"
#include "nefi/params.h"

namespace fs = std::filesystem;

namespace nefi::cli {
namespace {

struct ListRequest {
  std::string kind;
  bool verbose = false, json = false;
};

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// The config files of every config directory, as a lookup by name finds
// them: a name in an earlier directory hides the same name in a later one.
std::vector<std::string> bundled_configs(const std::vector<fs::path>& dirs) {
  std::map<std::string, std::string> by_name;
  for (const auto& d : dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) continue;
    for (const auto& e : fs::directory_iterator(d, ec))
      if (e.path().extension() == ".yaml" || e.path().extension() == ".yml")
        by_name.emplace(e.path().filename().string(), e.path().string());
  }
  std::vector<std::string> names;
  for (const auto& [name, path] : by_name) names.push_back(path);
  return names;
}

nlohmann::json param_json(const ParamValue& v) {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, v);
}

nlohmann::json instance_json(const Instance& i, bool verbose) {
  nlohmann::json j{{"name", i.name()},
                   {"summary", i.summary()},
                   {"methods", i.methods()},
                   {"scenes", i.scenes()}};
  if (verbose) {
    nlohmann::json config = nlohmann::json::array();
    const Params defaults = i.default_config();
    for (const auto& e : defaults.entries())
      config.push_back({{"key", e.key}, {"value", param_json(e.value)}, {"doc", e.doc}});
    j["config"] = config;
  }
  return j;
}

void print_instance(const Instance& i, bool verbose) {
  std::cout << fmt::format("  {:<18} {}\n  {:<18} methods: {}; scenes: {}\n", i.name(), i.summary(),
                           "", joined(i.methods()), joined(i.scenes()));
  if (!verbose) return;
  const Params defaults = i.default_config();
  for (const auto& e : defaults.entries())
    std::cout << fmt::format("  {:<18}   {:<22} {:<16} {}\n", "", e.key, Params::render(e.value),
                             e.doc);
}

nlohmann::json operator_json(const OperatorInfo& o) {
  return {{"kind", o.kind},           {"summary", o.summary},         {"gradient", o.gradient},
          {"batchable", o.batchable}, {"homogeneity", o.homogeneity}, {"instances", o.instances},
          {"device", o.device}};
}

void print_operator(const OperatorInfo& o, bool verbose) {
  std::cout << fmt::format("  {:<22} {}\n", o.kind, o.summary);
  if (!verbose) return;
  std::cout << fmt::format(
      "  {:<22}   gradient: {}; batchable: {}; homogeneity: {}; device: {}{}\n", "", o.gradient,
      o.batchable, o.homogeneity, o.device,
      o.instances.empty() ? "" : "; instances: " + joined(o.instances));
}

int list_cmd(const ListRequest& r, const std::vector<fs::path>& dirs) {
  const std::vector<std::string> kinds{"instances", "operators", "configs"};
  std::string kind = r.kind;
  if (kind == "instance" || kind == "config" || kind == "operator") kind += "s";
  if (!kind.empty() && std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
    throw fk::Error("nefi list", "a kind (" + joined(kinds) + ")", "'" + r.kind + "'");
  const bool instances = kind.empty() || kind == "instances";
  const bool configs = kind.empty() || kind == "configs";
  const bool operators = kind.empty() || kind == "operators";
  if (r.json) {
    nlohmann::json j;
    if (instances) {
      j["instances"] = nlohmann::json::array();
      for (const auto& i : all_instances()) j["instances"].push_back(instance_json(*i, r.verbose));
    }
    if (operators) {
      j["operators"] = nlohmann::json::array();
      for (const auto& o : operator_catalogue()) j["operators"].push_back(operator_json(o));
    }
    if (configs) j["configs"] = bundled_configs(dirs);
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  if (instances) {
    std::cout << "instances:\n";
    for (const auto& i : all_instances()) print_instance(*i, r.verbose);
  }
  if (operators) {
    std::cout << "operators:\n";
    for (const auto& o : operator_catalogue()) print_operator(o, r.verbose);
  }
  if (configs) {
    std::cout << "configs:\n";
    for (const auto& n : bundled_configs(dirs)) std::cout << "  " << n << "\n";
  }
  return 0;
}

}  // namespace

Command add_list(CLI::App& app, const Context& ctx) {
  auto r = std::make_shared<ListRequest>();
  auto* sub =
      app.add_subcommand("list", "list registered instances, operators and bundled configs");
  sub->add_option("kind", r->kind, "instances | operators | configs (default: all)");
  sub->add_flag("-v,--verbose", r->verbose,
                "each instance's full default config (key, value, doc); each operator's "
                "gradient, batchability, homogeneity and instances");
  sub->add_flag("--json", r->json, "one JSON object instead of text");
  sub->footer(
      "Examples:\n  nefi list\n  nefi list instances -v\n  nefi list operators -v\n"
      "  nefi list configs --json");
  return {sub, [r, &ctx] { return list_cmd(*r, ctx.config_dirs); }};
}

}  // namespace nefi::cli
