// nefi list [instances|configs]: the registered instances and bundled configs.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "common.h"
#include "fk/error.h"
#include "fk/parallel.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"

namespace fs = std::filesystem;

namespace nefi::cli {
namespace {

int list_cmd(const std::string& kind, const std::vector<fs::path>& dirs) {
  if (kind.empty() || kind == "instances" || kind == "instance") {
    std::cout << "instances:\n";
    for (const auto& i : nefi::all_instances()) {
      std::string methods, scenes;
      for (const auto& m : i->methods()) methods += (methods.empty() ? "" : ", ") + m;
      for (const auto& s : i->scenes()) scenes += (scenes.empty() ? "" : ", ") + s;
      std::cout << fmt::format("  {:<14} {}\n  {:<14} methods: {}; scenes: {}\n", i->name(),
                               i->summary(), "", methods, scenes);
    }
  }
  if (kind.empty() || kind == "configs" || kind == "config") {
    std::cout << "configs:\n";
    for (const auto& d : dirs) {
      std::error_code ec;
      if (!fs::is_directory(d, ec)) continue;
      std::vector<std::string> names;
      for (const auto& e : fs::directory_iterator(d))
        if (e.path().extension() == ".yaml" || e.path().extension() == ".yml")
          names.push_back(e.path().string());
      std::sort(names.begin(), names.end());
      for (const auto& n : names) std::cout << "  " << n << "\n";
      break;
    }
  }
  if (!kind.empty() && kind != "instances" && kind != "instance" && kind != "configs" &&
      kind != "config")
    throw fk::Error("nefi list", "a kind (instances, configs)", "'" + kind + "'");
  return 0;
}

}  // namespace

Command add_list(CLI::App& app, const Context& ctx) {
  auto kind = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("list", "list registered instances and bundled configs");
  sub->add_option("kind", *kind, "instances | configs");
  return {sub, [kind, &ctx] { return list_cmd(*kind, ctx.config_dirs); }};
}

}  // namespace nefi::cli
