// nefi run TARGET: solve an instance and write runs/<name>-<hash>/.
#include <unistd.h>

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
#include "nefi/io/run_writer.h"

namespace fs = std::filesystem;

namespace nefi::cli {
namespace {

int run_cmd(const std::string& target, bool smoke, const std::vector<std::string>& sets,
            std::optional<uint64_t> seed, const std::vector<std::string>& methods_opt,
            std::string out, int threads, const std::vector<fs::path>& dirs) {
  set_threads(threads);
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

Command add_run(CLI::App& app, const Context& ctx) {
  struct Opts {
    std::string target, out;
    bool smoke = false;
    std::vector<std::string> sets, methods;
    uint64_t seed = 0;
    int threads = 0;
    CLI::Option* seed_opt = nullptr;
  };
  auto o = std::make_shared<Opts>();
  auto* run = app.add_subcommand("run", "solve an instance and write runs/<name>-<hash>/");
  run->add_option("target", o->target, "instance name or config file")->required();
  run->add_flag("--smoke", o->smoke, "apply configs/<instance>_smoke.yaml");
  run->add_option("--set", o->sets, "override KEY=VALUE (repeatable)");
  o->seed_opt = run->add_option("--seed", o->seed, "random seed");
  run->add_option("--method,-m", o->methods, "method(s) to run (default: the config's)");
  run->add_option("--out,-o", o->out, "output directory");
  run->add_option("--threads", o->threads, "fk threads (default 1, or $OMP_NUM_THREADS)");
  return {run, [o, &ctx] {
            return run_cmd(o->target, o->smoke, o->sets,
                           o->seed_opt->count() ? std::optional<uint64_t>(o->seed) : std::nullopt,
                           o->methods, o->out, o->threads, ctx.config_dirs);
          }};
}

}  // namespace nefi::cli
