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
            std::string out, int threads, int save_every, const std::string& resume,
            const std::vector<fs::path>& dirs) {
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
    // Never fall back to the full config: a missing smoke file is an error.
    if (p.empty()) {
      std::string searched;
      for (const auto& d : dirs) searched += (searched.empty() ? "" : ", ") + d.string();
      throw fk::Error("--smoke", cfg.instance + "_smoke.yaml in " + searched, "no such file");
    }
    if (!(is_file && fs::equivalent(p, target))) nefi::apply_config_file(cfg, p.string());
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
  FK_CHECK(save_every >= 0, "--save-every", "a step count >= 0", std::to_string(save_every));
  // --resume DIR reads each method's checkpoint from DIR; a file serves one method.
  const bool resume_dir = !resume.empty() && fs::is_directory(resume);
  FK_CHECK(resume.empty() || resume_dir || fs::exists(resume), "--resume",
           "a checkpoint file or a run directory", "'" + resume + "' (not found)");
  FK_CHECK(resume.empty() || resume_dir || cfg.methods.size() == 1, "--resume FILE",
           "one method (give a run directory for several)",
           std::to_string(cfg.methods.size()) + " methods");
  if (save_every > 0) fs::create_directories(out);
  const bool tty = stderr_is_tty();
  std::vector<nefi::RunOutput> outs;
  for (const auto& m : cfg.methods) {
    nefi::SolverOptions so;
    so.nan_guard = cfg.nan_guard;
    so.checkpoint_every = static_cast<int>(cfg.checkpoint_every);
    so.max_bad_steps = static_cast<int>(cfg.max_bad_steps);
    const std::string ckpt = "checkpoint-" + m + ".ckpt";
    if (save_every > 0) {
      so.checkpoint_path = (fs::path(out) / ckpt).string();
      so.checkpoint_interval = save_every;
    }
    if (!resume.empty()) so.resume_from = resume_dir ? (fs::path(resume) / ckpt).string() : resume;
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
    int threads = 0, save_every = 0;
    std::string resume;
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
  run->add_option("--save-every", o->save_every,
                  "write OUT/checkpoint-<method>.ckpt every N steps and at stage ends");
  run->add_option("--resume", o->resume,
                  "continue from a checkpoint file, or a run directory's checkpoints");
  return {run, [o, &ctx] {
            return run_cmd(o->target, o->smoke, o->sets,
                           o->seed_opt->count() ? std::optional<uint64_t>(o->seed) : std::nullopt,
                           o->methods, o->out, o->threads, o->save_every, o->resume,
                           ctx.config_dirs);
          }};
}

}  // namespace nefi::cli
