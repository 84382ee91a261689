// nefi run TARGET: solve an instance and write runs/<name>-<hash>/.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common.h"
#include "fk/device.h"
#include "fk/error.h"
#include "fk/parallel.h"
#include "nefi/diagnostics/data_fit.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/io/run_writer.h"
#include "run_request.h"

namespace fs = std::filesystem;

namespace nefi::cli {
namespace {

// What a checkpoint of method m is tied to: the whole config (its
// curriculum, NaN guard, seeds and, through config_hash, the measured data's
// bytes), less what a resume may change: the step budgets ("steps" and the
// methods' "*_steps" but anneal_steps, which shapes the schedule; a
// "*_substeps" is physics), the smoke cap, the time budget, the device and
// the other methods. A resume from a checkpoint of another run is refused; the
// checkpoint keeps this config's YAML too, so the refusal names what changed.
nefi::RunConfig identity_config(const nefi::RunConfig& cfg, const std::string& m) {
  nefi::RunConfig id = cfg;
  id.config = nefi::Params();
  for (const auto& e : cfg.config.entries())
    if (!(e.key == "steps" || (e.key.ends_with("_steps") && e.key != "anneal_steps")))
      id.config.declare(e.key, e.value, "");
  id.methods = {m};
  id.max_total_steps = 0;
  id.smoke = false;
  id.device = "cpu";
  id.curriculum.time_budget_s.reset();
  return id;
}

// The solver switches of one method: the config's NaN guard, checkpoints
// under --save-every, --resume (a file, or DIR/checkpoint-<method>.ckpt), and
// a progress line on a terminal; off a terminal, --verbose logs a line every
// twentieth of the steps (a log file or CI shows the run's course, and stays
// quiet without -v).
nefi::SolverOptions solver_options(const nefi::RunConfig& cfg, const RunRequest& r,
                                   const std::string& out, const std::string& m, bool tty) {
  nefi::SolverOptions so = nefi::solver_options(cfg);
  const nefi::RunConfig id = identity_config(cfg, m);
  so.run_identity = nefi::config_hash(id, "checkpoint");
  // The text without the data's paths: the hash reads their bytes, so a
  // moved file is no change (and a refusal would name it as one).
  nefi::RunConfig shown = id;
  shown.data.clear();
  shown.mask.clear();
  so.run_identity_text = nefi::to_yaml(shown);
  const std::string ckpt = "checkpoint-" + m + ".ckpt";
  if (r.save_every > 0) {
    so.checkpoint_path = (fs::path(out) / ckpt).string();
    so.checkpoint_interval = r.save_every;
  }
  // A run directory: each method from its checkpoint; one that has none was
  // not reached before the run stopped, and starts (it failed, and a killed
  // multi-method run could not be resumed in one command).
  if (!r.resume.empty() && !fs::is_directory(r.resume)) so.resume_from = r.resume;
  if (!r.resume.empty() && fs::exists(fs::path(r.resume) / ckpt))
    so.resume_from = (fs::path(r.resume) / ckpt).string();
  if (tty)
    so.callbacks.push_back([m](const nefi::StepInfo& s) {
      if (s.global_step % 10 == 0 || s.global_step == s.total_steps)
        std::fprintf(stderr, "\r%s  stage %d  step %d/%d  loss %.4e  lr %.2e   ", m.c_str(),
                     s.stage, s.global_step, s.total_steps, s.total, s.lr);
      return true;
    });
  else if (r.verbose)
    so.callbacks.push_back([m](const nefi::StepInfo& s) {
      const int every = std::max(1, s.total_steps / 20);
      if (s.global_step % every == 0 || s.global_step == s.total_steps)
        std::fprintf(stderr, "%s  stage %d  step %d/%d  loss %.4e  lr %.2e\n", m.c_str(), s.stage,
                     s.global_step, s.total_steps, s.total, s.lr);
      return true;
    });
  return so;
}

// The run's device (--device, run.device or NEFI_DEVICE): cpu, or a CUDA
// device this process can use (checked before any work, so a CPU-only build
// refuses it at once).
void check_device(const std::string& name) {
  fk::check_usable(fk::parse_device(name), "device (--device, run.device or NEFI_DEVICE)");
}

void check_checkpoint_options(const RunRequest& r, const nefi::RunConfig& cfg) {
  FK_CHECK(r.save_every >= 0, "--save-every", "a step count >= 0", fk::to_text(r.save_every));
  // --resume DIR reads each method's checkpoint from DIR; a file serves one method.
  const bool resume_dir = !r.resume.empty() && fs::is_directory(r.resume);
  FK_CHECK(r.resume.empty() || resume_dir || fs::exists(r.resume), "--resume",
           "a checkpoint file or a run directory", "'" + r.resume + "' (not found)");
  FK_CHECK(r.resume.empty() || resume_dir || cfg.methods.size() == 1, "--resume FILE",
           "one method (give a run directory for several)",
           fk::to_text(cfg.methods.size()) + " methods");
  // Each attempt of several would overwrite the one file (the Solver refuses
  // it too, but per method, after any direct method ran and the folder was
  // made). A step cap makes one attempt. An instance's own restarts key
  // (nv_relaxometry's) is left to the Solver: its grid methods ignore it.
  const int restarts = cfg.curriculum.restarts.value_or(1);
  FK_CHECK(r.save_every == 0 || restarts <= 1 || cfg.max_total_steps > 0, "--save-every",
           "a run of one attempt (a checkpoint holds one: curriculum.restarts 1)",
           fk::to_text(restarts) + " restarts");
  if (resume_dir) {
    std::string wanted;
    bool any = false;
    for (const auto& m : cfg.methods) {
      const std::string f = "checkpoint-" + m + ".ckpt";
      any = any || fs::exists(fs::path(r.resume) / f);
      wanted += (wanted.empty() ? "" : ", ") + f;
    }
    FK_CHECK(any, "--resume",
             "a run directory with a checkpoint of this run's methods (" + wanted + ")",
             "'" + r.resume + "' with none");
  }
}

// --metrics: keep only the named metrics (each must be one the run computed).
void select_metrics(std::vector<nefi::RunOutput>& outs, const std::vector<std::string>& names) {
  if (names.empty()) return;
  for (auto& o : outs) {
    std::map<std::string, double> kept;
    std::string valid;
    for (const auto& [k, v] : o.metrics) valid += (valid.empty() ? "" : ", ") + k;
    for (const auto& n : names) {
      FK_CHECK(o.metrics.count(n), "--metrics", "metrics of " + o.method + " (" + valid + ")",
               "'" + n + "'");
      kept[n] = o.metrics.at(n);
    }
    o.metrics = std::move(kept);
  }
}

// psnr and ssim by default, else the --metrics selection.
std::string summary_line(const nefi::RunConfig& cfg, const std::vector<nefi::RunOutput>& outs,
                         const std::vector<std::string>& names) {
  std::string line = cfg.instance + " (seed " + std::to_string(cfg.seed) + "):";
  for (const auto& o : outs) {
    line += " " + o.method;
    for (const auto& n : names.empty() ? std::vector<std::string>{"psnr", "ssim"} : names) {
      if (!o.metrics.count(n)) continue;
      const double v = o.metrics.at(n);
      line += n == "psnr"   ? fmt::format(" psnr {:.2f} dB", v)
              : n == "ssim" ? fmt::format(" ssim {:.3f}", v)
                            : fmt::format(" {} {:.4g}", n, v);
    }
    if (o.result.total_steps() > 0)
      line += fmt::format(" ({} steps, {:.3f} ms/step, {:.0f} ops/step)", o.result.total_steps(),
                          o.result.ms_per_step(), o.result.ops_per_step());
    if (const auto fit = nefi::diagnostics::data_fit(o.measurement, o.result.prediction)) {
      line += fmt::format(" data fit {:.2f} dB", fit->psnr_db);
      if (fit->rmse_over_sigma) line += fmt::format(" rmse/sigma {:.2f}", *fit->rmse_over_sigma);
    }
    line += ";";
  }
  return line;
}

// --baseline NAME: the run solves NAME alone, which must be one of the
// instance's methods other than its neural field.
RunRequest with_baseline(const RunRequest& r) {
  if (r.baseline.empty()) return r;
  FK_CHECK(r.methods.empty(), "--baseline", "no --method beside it",
           fk::to_text(r.methods.size()) + " --method");
  RunRequest b = r;
  b.methods = {r.baseline};
  return b;
}

void check_baseline(const nefi::Instance& inst, const std::string& baseline) {
  if (baseline.empty()) return;
  const std::string method = canonical_method(inst, baseline, "--baseline");
  std::string others;
  for (const auto& m : inst.methods())
    if (m != default_method(inst)) others += (others.empty() ? "" : ", ") + m;
  FK_CHECK(method != default_method(inst), "--baseline",
           "a baseline of " + inst.name() + " (" + others + ")", "'" + baseline + "'");
}

int run_cmd(const RunRequest& req, const std::vector<fs::path>& dirs) {
  const RunRequest r = with_baseline(req);
  set_threads(r.threads);
  const nefi::RunConfig cfg = resolve_config(r, dirs);
  check_device(cfg.device);
  nefi::InstancePtr inst = nefi::find_instance(cfg.instance);
  check_baseline(*inst, r.baseline);
  const std::string out =
      r.out.empty() ? "runs/" + cfg.instance + "-" + nefi::config_hash(cfg) : r.out;
  FK_CHECK(!fs::exists(out) || fs::is_directory(out), "--out", "a directory (or a new path)",
           "'" + out + "', a file");  // before the solve, not after it
  check_checkpoint_options(r, cfg);
  FK_CHECK(cfg.data.empty() || r.metrics.empty(), "--metrics",
           "no metric selection with run.data (a measured dataset has no ground truth to score: "
           "metrics.json holds each method's data fit)",
           fk::to_text(r.metrics.size()) + " metrics");
  if (r.save_every > 0) fs::create_directories(out);
  const bool tty = stderr_is_tty() && !r.quiet;
  std::vector<nefi::RunOutput> outs;
  // A method that ends in an error (a baseline's own setting, a diverged
  // solve) does not cost the others: the run goes on, writes what finished,
  // records the error in metrics.json and then fails with it.
  std::map<std::string, std::string> failed;
  for (const auto& m : cfg.methods) {
    try {
      outs.push_back(inst->run(cfg.config, m, cfg.seed, solver_options(cfg, r, out, m, tty)));
    } catch (const fk::Error& e) {
      if (tty) std::fprintf(stderr, "\r\033[K");
      if (cfg.methods.size() == 1) throw;
      failed[m] = e.what();
      continue;
    }
    if (tty) std::fprintf(stderr, "\r\033[K");
    if (r.verbose)
      for (const auto& st : outs.back().result.stages)
        if (!st.device_note.empty())
          std::fprintf(stderr, "%s stage %s: %s\n", m.c_str(), st.name.c_str(),
                       st.device_note.c_str());
  }
  if (outs.empty()) {  // every method (two or more: one alone rethrows) failed
    // One cause (a bad shared key) is said once, not once per method.
    const std::string& first = failed.begin()->second;
    if (std::all_of(failed.begin(), failed.end(), [&](const auto& f) { return f.second == first; }))
      throw fk::Error("every method failed: " + first);
    std::string what;
    for (const auto& [m, e] : failed) what += (what.empty() ? "" : "; ") + m + ": " + e;
    throw fk::Error("every method failed (" + what + ")");
  }
  // A direct baseline has no solver, so no checkpoint to write or read (a
  // method that failed may have been one that trains: no verdict then).
  const bool trained = !failed.empty() || std::any_of(outs.begin(), outs.end(), [](const auto& o) {
    return !o.result.stages.empty();
  });
  FK_CHECK(trained || (r.resume.empty() && r.save_every == 0), "--resume / --save-every",
           "a method that trains (a direct baseline keeps no checkpoint)",
           "only direct methods (" + fmt::format("{}", fmt::join(cfg.methods, ", ")) + ")");
  select_metrics(outs, r.metrics);
  nefi::write_run_dir(out, cfg, outs, fk::get_num_threads(), r.plot, failed);
  if (!r.quiet) std::cout << summary_line(cfg, outs, r.metrics) << " -> " << out << "\n";
  if (!failed.empty()) {
    std::string names, what, written;
    for (const auto& [m, e] : failed) {
      names += (names.empty() ? "" : ", ") + m;
      what += (what.empty() ? "" : "; ") + (failed.size() > 1 ? m + ": " + e : e);
    }
    for (const auto& o : outs) written += (written.empty() ? "" : ", ") + o.method;
    throw fk::Error((failed.size() > 1 ? "methods " : "method ") + names + " failed (" + what +
                    "); " + written + " written to " + out);
  }
  return 0;
}

}  // namespace

Command add_run(CLI::App& app, const Context& ctx) {
  struct Opts {
    RunRequest req;
    uint64_t seed = 0;
    int64_t smoke_steps = 40;
    CLI::Option* seed_opt = nullptr;
    CLI::Option* smoke_steps_opt = nullptr;
  };
  auto o = std::make_shared<Opts>();
  RunRequest& r = o->req;
  auto* run = app.add_subcommand("run", "solve an instance and write runs/<name>-<hash>/");
  run->add_option("target", r.target, "instance name or config file")->required();
  run->add_flag(
      "--smoke", r.smoke,
      "apply configs/<instance>_smoke.yaml (over a config file's own settings) and cap the "
      "steps at --smoke-steps");
  o->smoke_steps_opt = run->add_option(
      "--smoke-steps", o->smoke_steps,
      "cap each method's total steps (each stage scaled and rounded as the reference does, "
      "then at least 2, so a small cap can be passed by a step or two; a capped run makes one "
      "attempt, whatever curriculum.restarts says; default 40 with --smoke; 0: no cap)");
  run->add_option("--scene", r.scene, "scene class (the config key scene)");
  run->add_flag("--plot,!--no-plot", r.plot,
                "write panel.png and history.png (default), or skip the figures");
  run->add_option("--metrics", r.metrics, "metrics to report and write (default: all)")
      ->delimiter(',');
  run->add_option("--set", r.sets, "override KEY=VALUE (repeatable)");
  o->seed_opt = run->add_option("--seed", o->seed, "random seed")->check(non_negative_seed());
  run->add_option("--method,-m", r.methods, "method(s) to run (default: the config's)");
  run->add_option("--baseline,-b", r.baseline,
                  "run this baseline alone (a method other than the neural field)");
  run->add_option("--out,-o", r.out, "output directory")->check(non_empty_directory());
  run->add_option("--threads", r.threads,
                  "fk threads (default, and 0: $OMP_NUM_THREADS if set, else 1)")
      ->check(thread_count());
  run->add_option("--save-every", r.save_every,
                  "write OUT/checkpoint-<method>.ckpt every N steps and at stage ends");
  run->add_option(
      "--device", r.device,
      "train the method's field on cpu or cuda[:N] (default: the config's run.device, else "
      "$NEFI_DEVICE, else cpu; a setting the device solve has no path for is refused by "
      "name)");
  auto* quiet = run->add_flag(
      "--quiet,-q", r.quiet,
      "no progress line and no summary line: the run folder only (errors still print)");
  run->add_flag("--verbose,-v", r.verbose,
                "on stderr: a loss line every 1/20 of the steps when not a terminal, and per-stage "
                "notes (a device solve: CUDA graph replays, or why not)")
      ->excludes(quiet);
  run->add_option("--resume", r.resume,
                  "continue from a checkpoint file, or a run directory's checkpoints");
  run->footer(
      "Examples:\n  nefi run toy1d --smoke\n"
      "  nefi run deconvolution --smoke -m neural -m wiener --set tv=1e-3 --no-plot\n"
      "  nefi run configs/poisson_source_full.yaml --seed 2 --out runs/ps2\n"
      "  nefi run deconvolution --smoke --baseline admm\n"
      "  nefi run deconvolution --smoke -m neural --device cuda");
  return {run, [o, &ctx] {
            if (o->seed_opt->count()) o->req.seed = o->seed;
            if (o->smoke_steps_opt->count()) o->req.smoke_steps = o->smoke_steps;
            return run_cmd(o->req, ctx.config_dirs);
          }};
}

}  // namespace nefi::cli
