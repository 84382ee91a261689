// nefi ablate TARGET --variants a,b,... [--independent] [--base neural]: the
// base method with the reference's modifiers (bench/variants.h) applied
// cumulatively (or one per row), each row a paired campaign against `full`.
#include <memory>

#include "common.h"
#include "variant_campaign.h"

namespace nefi::cli {

Command add_ablate(CLI::App& app, const Context&) {
  struct Opts {
    VariantRequest req;
    std::string modifiers;  // split by bench::split_list: a list value stays one
    bool independent = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand(
      "ablate", "switch parts of a method off, one row each, paired against the full method");
  add_variant_options(sub, o->req);
  sub->add_option("--variants", o->modifiers,
                  "comma list: no_annealing, no_pe (both on the neural method), single_stage, "
                  "grid_field, no_gate, drop_loss:NAME, set_weight:NAME=W, set:KEY=V, "
                  "stage:ATTR=V, optim:ATTR=V (set:steps=[150, 300]: a list stays one value)")
      ->multi_option_policy(CLI::MultiOptionPolicy::Join)
      ->required();
  sub->add_flag("--independent", o->independent,
                "apply one modifier per row (default: cumulative, row i carries rows 1..i)");
  sub->footer(
      "Examples:\n"
      "  nefi ablate toy1d --variants no_annealing,no_pe,single_stage,drop_loss:tv --n 2\n"
      "  nefi ablate deconvolution --variants set_weight:tv=1e-3,optim:grad_clip=0 "
      "--independent --seeds 0");
  return {sub, [o] {
            const VariantBase b = resolve_variant_base(o->req);
            return run_variant_command(
                o->req, "ablate",
                bench::ablation_variants(b.config, *b.instance, b.method,
                                         bench::split_list(o->modifiers, "--variants"),
                                         o->independent));
          }};
}

}  // namespace nefi::cli
