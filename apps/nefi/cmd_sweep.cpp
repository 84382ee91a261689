// nefi sweep TARGET --axis KEY --values a,b,c: one paired campaign row per
// value of a config key, stage.ATTR, optim.ATTR or weight.NAME; with numeric
// values also sweep.png (each metric against the value).
#include <memory>

#include "common.h"
#include "nefi/bench/sweep_png.h"
#include "variant_campaign.h"

namespace nefi::cli {

Command add_sweep(CLI::App& app, const Context&) {
  struct Opts {
    VariantRequest req;
    std::string axis;
    std::string values;  // split by bench::split_list: a list value stays one
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("sweep", "run the base method at each value of one setting");
  add_variant_options(sub, o->req);
  sub->add_option("--axis", o->axis,
                  "a config key, stage.ATTR, optim.ATTR, curriculum.ATTR or weight.NAME")
      ->required();
  // One string, not CLI11's list: that split "[10, 20]" (a stage list) into
  // the two values 10 and 20.
  sub->add_option("--values", o->values,
                  "comma list of values (a bracketed list, [150, 300], is one value)")
      ->multi_option_policy(CLI::MultiOptionPolicy::Join)
      ->required();
  sub->footer(
      "Examples:\n"
      "  nefi sweep toy1d --axis lr --values 1e-3,3e-3,1e-2 --n 2\n"
      "  nefi sweep toy1d --axis stage.anneal_fraction --values 0.25,0.5,1.0\n"
      "  nefi sweep deconvolution --axis weight.tv --values 0,1e-4,1e-3 --seeds 0");
  return {sub, [o] {
            const VariantBase b = resolve_variant_base(o->req);
            const std::vector<std::string> values = bench::split_list(o->values, "--values");
            const auto variants = bench::sweep_variants(b.config, b.method, o->axis, values);
            const auto numbers = bench::numeric_values(values);
            ExtraFiles plot;
            if (numbers)  // sweep.png: each metric against the value
              plot = [&](const std::string& out, const bench::VariantCampaign& vc) {
                std::vector<std::string> labels;
                for (const auto& v : variants) labels.push_back(v.label);
                bench::write_sweep_png(out + "/sweep.png",
                                       vc.protocol.instance + ": sweep of " + o->axis, o->axis,
                                       *numbers, labels, vc.rows);
              };
            return run_variant_command(o->req, "sweep", variants, plot);
          }};
}

}  // namespace nefi::cli
