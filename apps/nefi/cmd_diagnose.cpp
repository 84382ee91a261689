// nefi diagnose TARGET [--solve] [--probes 32] [--k 8] [--n-iter 24]
// [--hessian K [--hessian-iter 30]] [--device cpu|cuda[:N]] [--smoke]: the forward operator
// linearized at the initial field (or, with --solve, at the solution):
// leading singular values, sensitivity and null-space probes, data misfit
// against the noise, and with --hessian the training loss's Hessian
// spectrum in the field's parameters (nefi/diagnostics/). Writes diagnostics.md,
// diagnostics.json, sensitivity.npy and diagnostics.png; prints the report.
#include <algorithm>
#include <iostream>
#include <memory>

#include "common.h"
#include "nefi/bench/merge.h"
#include "nefi/diagnostics/report.h"
#include "nefi/instances/diagnose_instance.h"
#include "run_request.h"

namespace nefi::cli {
namespace {

struct DiagnoseRequest {
  RunRequest run;
  bool solve = false;
  diagnostics::DiagnoseOptions opt;
};

int diagnose_cmd(DiagnoseRequest r, const std::vector<std::filesystem::path>& dirs) {
  set_threads(r.run.threads);
  const RunConfig cfg = resolve_config(r.run, dirs);
  // Before any work (a CPU-only build refuses every CUDA device here).
  fk::check_usable(fk::parse_device(cfg.device), "device (--device, run.device or NEFI_DEVICE)");
  const InstancePtr inst = find_instance(cfg.instance);
  const std::string method = r.run.methods.empty() ? default_method(*inst) : cfg.methods.front();
  const diagnostics::Diagnostics d =
      diagnostics::diagnose_instance(*inst, cfg, method, r.solve, r.opt);
  const std::string out = !r.run.out.empty()
                              ? r.run.out
                              : "runs/" + cfg.instance + "-diagnose-" +
                                    config_hash(cfg, std::string(r.solve ? "solve|" : "") + method);
  bench::prepare_out_dir(out);
  diagnostics::write_diagnostics(out, d, r.run.plot);
  std::cout << diagnostics::diagnostics_md(d) << "\n-> " << out << "\n";
  return 0;
}

}  // namespace

Command add_diagnose(CLI::App& app, const Context& ctx) {
  struct Opts {
    DiagnoseRequest req;
    uint64_t seed = 0;
    int64_t smoke_steps = 40;
    CLI::Option *seed_opt = nullptr, *smoke_steps_opt = nullptr;
    // --smoke's caps (the reference's smoke settings) on the options not
    // given; a step count not given also covers the count it serves
    // (at_least: --k for --n-iter, --hessian for --hessian-iter).
    struct Capped {
      CLI::Option* option;
      int* value;
      int cap;
      const int* at_least = nullptr;
    };
    std::vector<Capped> smoke_capped;
  };
  auto o = std::make_shared<Opts>();
  DiagnoseRequest& r = o->req;
  auto* sub = app.add_subcommand(
      "diagnose", "singular values, sensitivity and null-space probes of the linearized operator");
  sub->add_option("target", r.run.target, "instance name or config file")->required();
  sub->add_flag("--solve", r.solve, "diagnose at the solution (solve first) instead of the start");
  o->smoke_capped = {
      {sub->add_option("--probes", r.opt.probes, "Hutchinson and null-space probes (default 32)"),
       &r.opt.probes, 8},
      {sub->add_option("--k", r.opt.k, "singular values to report (default 8)"), &r.opt.k, 4},
      {sub->add_option("--n-iter", r.opt.n_iter,
                       "Lanczos bidiagonalisation steps, >= k (default 24)"),
       &r.opt.n_iter, 12, &r.opt.k},
      {sub->add_option("--hessian", r.opt.hessian_k,
                       "also the training loss's Hessian: its K largest and smallest eigenvalues "
                       "in the field's parameters (default 0: off)"),
       &r.opt.hessian_k, 4},
      {sub->add_option("--hessian-iter", r.opt.hessian_iter,
                       "Lanczos steps of --hessian, >= K (default 30; two gradients each)"),
       &r.opt.hessian_iter, 12, &r.opt.hessian_k}};
  sub->add_flag("--exact-sensitivity", r.opt.exact_sensitivity,
                "every column's norm instead of Hutchinson probes (one product a cell)");
  sub->add_flag(
      "--smoke", r.run.smoke,
      "the smoke config; probes <= 8, k <= 4, n-iter <= 12, hessian <= 4, hessian-iter <= 12 "
      "unless given, solve capped at --smoke-steps");
  o->smoke_steps_opt =
      sub->add_option("--smoke-steps", o->smoke_steps,
                      "step cap of --solve (default 40 under --smoke, else none; 0: none), "
                      "as nefi run's");
  sub->add_option("--set", r.run.sets, "override KEY=VALUE (repeatable)");
  o->seed_opt = sub->add_option("--seed", o->seed, "measurement and initialisation seed")
                    ->check(non_negative_seed());
  sub->add_option("--method,-m", r.run.methods, "the method whose problem to diagnose")
      ->expected(1);
  sub->add_option("--out,-o", r.run.out,
                  "output directory (default runs/<instance>-diagnose-<hash>)")
      ->check(non_empty_directory());
  sub->add_flag("--plot,!--no-plot", r.run.plot, "write diagnostics.png (default) or not");
  sub->add_option("--threads", r.run.threads,
                  "fk threads (default, and 0: $OMP_NUM_THREADS if set, else 1)")
      ->check(thread_count());
  sub->add_option("--device", r.run.device,
                  "where the operator's products run (and --solve trains), cpu or cuda[:N], "
                  "and --hessian's gradients (default: the config's run.device, else "
                  "$NEFI_DEVICE, else cpu; the Lanczos and probe arithmetic on the CPU)");
  sub->footer(
      "Examples:\n  nefi diagnose toy1d --smoke\n"
      "  nefi diagnose deconvolution --smoke --solve --k 6 --n-iter 16\n"
      "  nefi diagnose toy1d --smoke --solve --hessian 3");
  return {sub, [o, &ctx] {
            if (o->seed_opt->count()) o->req.run.seed = o->seed;
            if (o->smoke_steps_opt->count()) o->req.run.smoke_steps = o->smoke_steps;
            for (const auto& c : o->smoke_capped) {  // in order: a count before its steps
              if (c.option->count()) continue;
              if (o->req.run.smoke) *c.value = std::min(*c.value, c.cap);
              if (c.at_least) *c.value = std::max(*c.value, *c.at_least);
            }
            return diagnose_cmd(o->req, ctx.config_dirs);
          }};
}

}  // namespace nefi::cli
