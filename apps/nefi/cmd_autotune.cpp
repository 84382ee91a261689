// nefi autotune TARGET [--level quick|standard|thorough] [--compare] [--smoke]:
// the learning rate and regularizer weights chosen by pilot solves and the
// discrepancy principle (nefi/tune/autotune.h); writes autotune.md,
// autotune.json and tuned_config.yaml, which `nefi run` reproduces.
#include <iostream>
#include <memory>

#include "common.h"
#include "nefi/bench/merge.h"
#include "nefi/tune/autotune_report.h"
#include "run_request.h"

namespace nefi::cli {
namespace {

struct AutotuneRequest {
  RunRequest run;
  std::string level = "quick";
  bool compare = false;
};

int autotune_cmd(AutotuneRequest r, const std::vector<std::filesystem::path>& dirs) {
  set_threads(r.run.threads);
  const tune::LevelPlan plan = tune::level_plan(r.level);
  r.run.smoke_steps = 0;  // --smoke: the preset's own budget (the reference does not cap here)
  const RunConfig cfg = resolve_config(r.run, dirs);
  const InstancePtr inst = find_instance(cfg.instance);
  const std::string method = r.run.methods.empty() ? default_method(*inst) : cfg.methods.front();
  const std::string out = !r.run.out.empty() ? r.run.out
                                             : "runs/" + cfg.instance + "-autotune-" +
                                                   config_hash(cfg, plan.name + "|" + method);
  bench::prepare_out_dir(out);
  const bool tty = stderr_is_tty();
  tune::AutotuneReport rep = tune::autotune(*inst, cfg, method, plan, [tty](const std::string& l) {
    if (tty) std::cerr << "[autotune] " << l << "\n";
  });
  if (r.compare) rep.comparison = tune::compare(*inst, cfg, rep);
  tune::write_autotune(out, rep);
  std::cout << tune::autotune_md(rep) << "\n-> " << out << "\n";
  return 0;
}

}  // namespace

Command add_autotune(CLI::App& app, const Context& ctx) {
  struct Opts {
    AutotuneRequest req;
    uint64_t seed = 0;
    CLI::Option* seed_opt = nullptr;
  };
  auto o = std::make_shared<Opts>();
  AutotuneRequest& r = o->req;
  auto* sub = app.add_subcommand(
      "autotune", "choose the learning rate and regularizer weights by pilot solves");
  sub->add_option("target", r.run.target, "instance name or config file")->required();
  sub->add_option("--level", r.level, "quick | standard | thorough (default quick)");
  sub->add_flag("--compare", r.compare, "also solve the default and the tuned config in full");
  sub->add_flag("--smoke", r.run.smoke, "tune the smoke config (its own budget, no step cap)");
  sub->add_option("--set", r.run.sets, "override KEY=VALUE before tuning (repeatable)");
  o->seed_opt = sub->add_option("--seed", o->seed, "measurement and initialisation seed")
                    ->check(non_negative_seed());
  sub->add_option("--method,-m", r.run.methods, "the method to tune (default neural)")->expected(1);
  sub->add_option("--out,-o", r.run.out,
                  "output directory (default runs/<instance>-autotune-<hash>)")
      ->check(non_empty_directory());
  sub->add_option("--threads", r.run.threads,
                  "fk threads (default, and 0: $OMP_NUM_THREADS if set, else 1)")
      ->check(thread_count());
  sub->footer(
      "Examples:\n  nefi autotune toy1d --smoke\n"
      "  nefi autotune deconvolution --smoke --level standard --compare\n"
      "  nefi run runs/<instance>-autotune-<hash>/tuned_config.yaml");
  return {sub, [o, &ctx] {
            if (o->seed_opt->count()) o->req.run.seed = o->seed;
            return autotune_cmd(o->req, ctx.config_dirs);
          }};
}

}  // namespace nefi::cli
