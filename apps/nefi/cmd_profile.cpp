// nefi profile INSTANCE: ms/step, ops/step and the top ops of one curriculum
// stage (nefi/bench/profile.h).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <utility>

#include "common.h"
#include "fk/device.h"
#include "fk/error.h"
#include "fk/parallel.h"
#include "nefi/bench/batch_profile.h"
#include "nefi/bench/merge.h"
#include "nefi/bench/profile.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"

namespace fs = std::filesystem;

namespace nefi::cli {
namespace {

template <typename Opts>
int profile_batched(const Instance& inst, const Params& config, const Opts& o) {
  bench::BatchProfileOptions bp;
  bp.method = o.p.method;
  bp.seed = o.p.seed;
  bp.batch = o.batch;
  bp.chunk = o.chunk;
  bp.steps = o.p.steps;
  bp.warmup = o.p.warmup;
  bp.stage = o.p.stage;
  bp.curriculum = o.p.curriculum;
  const bench::BatchProfileReport rep = bench::profile_batch(inst, config, bp);
  std::cout << bench::format_batch_profile(rep);
  if (!o.json.empty()) {
    std::ofstream f(o.json, std::ios::app);
    FK_CHECK(f.good(), "--json", "a writable file", "'" + o.json + "'");
    f << bench::batch_profile_json_line(rep) << "\n";
    f.close();
    FK_CHECK(!f.fail(), "--json", "a successful write", "'" + o.json + "'");
  }
  return 0;
}

}  // namespace

Command add_profile(CLI::App& app, const Context&) {
  struct Opts {
    std::string instance, config, trace, json, method, device;
    std::vector<std::string> sets;
    bench::ProfileOptions p;
    int threads = 0, batch = 0, chunk = 0;
    bool table = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand(
      "profile", "time the real solver loop on one curriculum stage (ms/step, ops/step, top ops)");
  sub->add_option("instance", o->instance, "instance name (or a config file)")->required();
  sub->add_option("--config", o->config, "config file applied to the instance's defaults");
  sub->add_option("--set", o->sets, "override KEY=VALUE (repeatable)");
  sub->add_option("--method,-m", o->p.method, "method (default: the instance's first)");
  sub->add_option("--seed", o->p.seed, "measurement and initialisation seed (default 0)")
      ->check(non_negative_seed());
  sub->add_option("--steps", o->p.steps, "timed steps (default 20)");
  sub->add_option("--warmup", o->p.warmup, "untimed steps first (default 5)");
  sub->add_option("--stage", o->p.stage, "curriculum stage; negative from the end (default -1)");
  sub->add_option("--threads", o->threads,
                  "fk threads (default, and 0: $OMP_NUM_THREADS if set, else 1)")
      ->check(thread_count());
  sub->add_option("--batch", o->batch,
                  "time batch_invert with B problems instead (per-problem ms/step)");
  sub->add_option("--chunk", o->chunk, "with --batch: problems per fused sub-step (0: all)");
  sub->add_option("--device", o->device,
                  "cpu or cuda[:N] (default: the config's run.device, else $NEFI_DEVICE, else "
                  "cpu)");
  sub->add_flag("--minimal", o->p.minimal, "time a bare loop without the solver's bookkeeping");
  sub->add_flag("--table", o->table, "print every op's time, not just the top ones");
  sub->add_option("--trace", o->trace, "write a chrome trace of the traced steps into DIR");
  sub->add_option("--json", o->json, "append one JSON line per run to FILE");
  sub->footer(
      "Examples:\n  nefi profile deconvolution --config configs/deconvolution_smoke.yaml --table\n"
      "  nefi profile toy1d --batch 64 --steps 50");
  return {
      sub, [o] {
        set_threads(o->threads);
        FK_CHECK(o->batch >= 0, "--batch", "a number of problems >= 1 (0: no batch)",
                 fk::to_text(o->batch));
        FK_CHECK(o->chunk >= 0, "--chunk", "problems per sub-step >= 1 (0: all)",
                 fk::to_text(o->chunk));
        FK_CHECK(o->chunk == 0 || o->batch > 0, "--chunk", "--batch beside it",
                 "--chunk " + fk::to_text(o->chunk) + " alone");
        if (o->batch > 0)
          for (const auto& [given, flag] : {std::pair{!o->trace.empty(), "--trace"},
                                            {o->p.minimal, "--minimal"},
                                            {o->table, "--table"}})
            FK_CHECK(!given, "nefi profile --batch",
                     "no --trace, --minimal or --table (the batched profile has none)", flag);
        if (!o->json.empty()) {  // before the work, not after it
          std::ofstream f(o->json, std::ios::app);
          FK_CHECK(f.good(), "--json", "a writable file", "'" + o->json + "'");
        }
        const bool is_file = is_config_file_target(o->instance);
        RunConfig cfg =
            is_file ? load_run_config_file(o->instance) : default_run_config(o->instance);
        if (!o->config.empty()) apply_config_file(cfg, o->config);
        for (const auto& s : o->sets) apply_set(cfg, s);
        if (!o->device.empty()) {  // refused in the option's words, not --set run.device's
          try {
            apply_set(cfg, "run.device=" + o->device);
          } catch (const fk::Error& e) {
            throw fk::Error("--device", e.expected(), e.given());
          }
        }
        FK_CHECK(cfg.data.empty(), "run.data",
                 "no measured dataset (nefi profile times the instance's synthetic problem)",
                 "'" + cfg.data + "'");
        const InstancePtr inst = find_instance(cfg.instance);
        o->p.device = fk::parse_device(cfg.device);
        fk::check_usable(o->p.device, "device (--device, run.device or NEFI_DEVICE)");
        o->p.curriculum = cfg.curriculum;
        if (o->batch > 0) {
          FK_CHECK(o->p.device.is_cpu(), "nefi profile --batch", "the CPU",
                   cfg.device + " (nefi bench --batched --batch-device times device batches)");
          return profile_batched(*inst, cfg.config, *o);
        }
        if (!o->trace.empty()) {
          bench::prepare_out_dir(o->trace, "--trace");
          // The method's own name (-m ours is neural), as the report names it.
          const std::string method = o->p.method.empty()
                                         ? inst->methods().front()
                                         : nefi::canonical_method(*inst, o->p.method, "-m");
          o->p.trace_path =
              (fs::path(o->trace) / ("profile-" + inst->name() + "-" + method + ".json")).string();
        }
        const bench::ProfileReport rep = bench::profile_instance(*inst, cfg.config, o->p);
        std::cout << bench::format_profile(rep, o->table);
        if (!rep.trace_written.empty()) {
          std::cout << "  trace -> " << rep.trace_written << "\n";
        } else if (!o->p.trace_path.empty()) {
          // (It said "trace -> FILE" and wrote none.)
          std::cout << "  trace: none written (no step of the stage left after --warmup + "
                       "--steps to trace)\n";
        }
        if (!o->json.empty()) {
          std::ofstream f(o->json, std::ios::app);
          FK_CHECK(f.good(), "--json", "a writable file", "'" + o->json + "'");
          const std::string config_path = !o->config.empty() ? o->config
                                          : is_file          ? o->instance
                                                             : "";
          f << bench::profile_json_line(rep, config_path, o->sets) << "\n";
          f.close();
          FK_CHECK(!f.fail(), "--json", "a successful write", "'" + o->json + "'");
        }
        return 0;
      }};
}

}  // namespace nefi::cli
