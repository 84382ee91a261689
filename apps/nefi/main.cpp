// nefi: the command line of the neural-field inversion engine.
//   nefi list [instances|configs|methods]
//   nefi run TARGET|CONFIG [--smoke] [--set key=value]... [--seed N] [--method M]
//            [--out DIR] [--threads N]
// Errors print one line and exit with status 2.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "fk/error.h"
#include "fk/parallel.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/io/run_writer.h"

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> config_dirs(const char* argv0) {
  std::vector<fs::path> dirs;
  if (const char* e = std::getenv("NEFI_CONFIG_DIR")) dirs.emplace_back(e);
  dirs.emplace_back("configs");
  std::error_code ec;
  const fs::path exe = fs::canonical(fs::path(argv0), ec);
  if (!ec) dirs.push_back(exe.parent_path().parent_path().parent_path() / "configs");
  return dirs;
}

fs::path find_config(const std::vector<fs::path>& dirs, const std::string& file) {
  for (const auto& d : dirs)
    if (fs::exists(d / file)) return d / file;
  return {};
}

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

int run_cmd(const std::string& target, bool smoke, const std::vector<std::string>& sets,
            std::optional<uint64_t> seed, const std::vector<std::string>& methods_opt,
            std::string out, int threads, const std::vector<fs::path>& dirs) {
  // One thread unless asked: these solves are small (10^3-10^4 cells), and on
  // a shared 2-vCPU machine two threads made a 32^2 deconvolution step 30x
  // slower (64 ms against 2 ms) with bit-identical results.
  if (threads > 0)
    fk::set_num_threads(threads);
  else if (!std::getenv("OMP_NUM_THREADS"))
    fk::set_num_threads(1);
  nefi::RunConfig cfg;
  const bool is_file = fs::exists(target) || target.ends_with(".yaml") || target.ends_with(".yml");
  if (is_file) {
    cfg = nefi::load_run_config_file(target);
  } else {
    cfg = nefi::default_run_config(target);
  }
  if (smoke) {
    const fs::path p = find_config(dirs, cfg.instance + "_smoke.yaml");
    if (!p.empty() && !(is_file && fs::equivalent(p, target)))
      nefi::apply_config_file(cfg, p.string());
    cfg.smoke = true;
  }
  for (const auto& s : sets) nefi::apply_set(cfg, s);
  if (seed) cfg.seed = *seed;
  if (!methods_opt.empty()) cfg.methods = methods_opt;
  nefi::InstancePtr inst = nefi::find_instance(cfg.instance);
  for (const auto& m : cfg.methods) {
    bool ok = false;
    std::string valid;
    for (const auto& v : inst->methods()) {
      ok = ok || v == m;
      valid += (valid.empty() ? "" : ", ") + v;
    }
    if (!ok) throw fk::Error("--method", "one of " + valid, "'" + m + "'");
  }
  if (out.empty())
    out = "runs/" + cfg.instance + "-" + nefi::config_hash(cfg, smoke ? "smoke" : "");
  const bool tty = isatty(fileno(stderr));
  std::vector<nefi::RunOutput> outs;
  for (const auto& m : cfg.methods) {
    nefi::SolverOptions so;
    so.nan_guard = cfg.nan_guard;
    so.checkpoint_every = static_cast<int>(cfg.checkpoint_every);
    so.max_bad_steps = static_cast<int>(cfg.max_bad_steps);
    if (tty)
      so.callbacks.push_back([m](const nefi::StepInfo& s) {
        if (s.global_step % 10 == 0 || s.global_step == s.total_steps)
          std::fprintf(stderr, "\r%s  stage %d  step %d/%d  loss %.4e  lr %.2e   ", m.c_str(),
                       s.stage, s.global_step, s.total_steps, s.total, s.lr);
        return true;
      });
    outs.push_back(inst->run(cfg.config, m, cfg.seed, so));
    if (tty) std::fprintf(stderr, "\r\033[K");
  }
  nefi::write_run_dir(out, cfg, outs, fk::get_num_threads());
  std::string line = cfg.instance + " (seed " + std::to_string(cfg.seed) + "):";
  for (const auto& o : outs) {
    line += fmt::format(" {} psnr {:.2f} dB", o.method, o.metrics.at("psnr"));
    if (o.metrics.count("ssim")) line += fmt::format(" ssim {:.3f}", o.metrics.at("ssim"));
    if (o.result.total_steps() > 0)
      line += fmt::format(" ({} steps, {:.3f} ms/step, {:.0f} ops/step)", o.result.total_steps(),
                          o.result.ms_per_step(), o.result.ops_per_step());
    line += ";";
  }
  std::cout << line << " -> " << out << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"nefi: neural-field inversion"};
  app.require_subcommand(1);
  std::string kind;
  auto* list = app.add_subcommand("list", "list registered instances and bundled configs");
  list->add_option("kind", kind, "instances | configs");
  std::string target, out;
  bool smoke = false;
  std::vector<std::string> sets, methods;
  uint64_t seed_v = 0;
  int threads = 0;
  auto* run = app.add_subcommand("run", "solve an instance and write runs/<name>-<hash>/");
  run->add_option("target", target, "instance name or config file")->required();
  run->add_flag("--smoke", smoke, "apply configs/<instance>_smoke.yaml");
  run->add_option("--set", sets, "override KEY=VALUE (repeatable)");
  auto* seed_opt = run->add_option("--seed", seed_v, "random seed");
  run->add_option("--method,-m", methods, "method(s) to run (default: the config's)");
  run->add_option("--out,-o", out, "output directory");
  run->add_option("--threads", threads, "fk threads (default 1, or $OMP_NUM_THREADS)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "nefi: error: " << e.what() << "\n";
    return 2;
  }
  try {
    const auto dirs = config_dirs(argv[0]);
    if (*list) return list_cmd(kind, dirs);
    return run_cmd(target, smoke, sets,
                   seed_opt->count() ? std::optional<uint64_t>(seed_v) : std::nullopt, methods, out,
                   threads, dirs);
  } catch (const std::exception& e) {
    std::cerr << "nefi: error: " << e.what() << "\n";
    return 2;
  }
}
