// nefi: the command line of the neural-field inversion engine.
//   nefi list [instances|configs] [-v] [--json]
//   nefi --version
//   nefi run TARGET|CONFIG [--smoke] [--smoke-steps N] [--set key=value]... [--seed N]
//            [--scene S] [--method M] [--metrics a,b] [--out DIR] [--threads N]
//            [--plot|--no-plot]
//   nefi profile INSTANCE [--config F] [--set k=v]... [--steps 20] [--warmup 5]
//            [--stage -1] [--threads N] [--minimal] [--table] [--trace DIR] [--json FILE]
//            [--batch B]
//   nefi bench TARGET [--methods a,b] [--n N] [--seeds 0,1,2] [--classes ...]
//            [--budget-scale s] [--shard i/n] [--out DIR] [--threads N] [--by-class]
//            [--batched [--batch-size B]]
//   nefi bench-merge DIR [--allow-missing] [--by-class] [--out DIR]
//   nefi ablate TARGET --variants m1,m2 [--independent] [--base M] [bench's --n/--seeds/...]
//   nefi sweep TARGET --axis KEY --values a,b,c [--base M] [bench's --n/--seeds/...]
//   nefi diagnose TARGET [--solve] [--probes 32] [--k 8] [--n-iter 24] [--exact-sensitivity]
//            [--smoke] [--no-plot]
//   nefi autotune TARGET [--level quick|standard|thorough] [--compare] [--smoke]
//   nefi gallery [--budget 1] [--out runs/gallery] [--instances a,b]
//   nefi fit --matrix A.npy --data y.npy [--shape n,m] [--prior P] [--noise auto|sigma]
//            [--mask M.npy] [--representation neural|hash|grid|lowrank|blobs|ellipses|stars
//            |polygons|layers|layers+blobs|layers+ellipses|spectral] [--vertices V] [--modes M]
//            [--smoothness S]
//            [--budget B] [--refine levelset|voxels|tv_sharpen|phasefield] [--out DIR]
// Errors print one line and exit with status 2.
#include <iostream>
#include <new>
#include <stdexcept>
#include <string>

#include "common.h"
#include "fk/knobs.h"
#include "fk/parallel.h"
#include "flushed_status.h"

int main(int argc, char** argv) {
  CLI::App app{"nefi: neural-field inversion"};
  app.set_version_flag("--version", std::string("nefi (fieldkit) ") + FK_VERSION);
  app.require_subcommand(1);
  nefi::cli::Context ctx;
  std::vector<nefi::cli::Command> commands{
      nefi::cli::add_list(app, ctx),        nefi::cli::add_run(app, ctx),
      nefi::cli::add_profile(app, ctx),     nefi::cli::add_bench(app, ctx),
      nefi::cli::add_bench_merge(app, ctx), nefi::cli::add_ablate(app, ctx),
      nefi::cli::add_sweep(app, ctx),       nefi::cli::add_diagnose(app, ctx),
      nefi::cli::add_autotune(app, ctx),    nefi::cli::add_gallery(app, ctx),
      nefi::cli::add_fit(app, ctx)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return cli_checks::flushed_status("nefi", app.exit(e), 2);
  } catch (const CLI::CallForVersion& e) {
    return cli_checks::flushed_status("nefi", app.exit(e), 2);
  } catch (const CLI::ParseError& e) {
    std::cerr << "nefi: error: " << e.what() << "\n";
    return 2;
  }
  try {
    // Every knob's environment value up front, as fk-info checks them: a CPU
    // run never reads the CUDA ones, and took FK_ALLOW_TF32=maybe silently.
    for (const fk::Knob* k : fk::knobs()) k->validate();
    // OMP_NUM_THREADS too (read as fk's thread count, not a knob): it failed
    // each method on its own, "every method failed" for one bad variable.
    (void)fk::get_num_threads();
    ctx.config_dirs = nefi::cli::config_dirs(argv[0]);
    for (const auto& [sub, run] : commands)
      if (*sub) return cli_checks::flushed_status("nefi", run(), 2);
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "nefi: error: out of memory: the settings ask for more than this machine has "
                 "(a grid, count or size too large?)\n";
    return 2;
  } catch (const std::length_error& e) {
    std::cerr << "nefi: error: a size beyond what can be allocated (a grid, count or size too "
                 "large?): "
              << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "nefi: error: " << e.what() << "\n";
    return 2;
  }
}
