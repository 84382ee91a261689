#pragma once
// Variants of one method for `nefi ablate` and `nefi sweep`: each is a label,
// the method it runs and the --set assignments that make it, so a variant is
// an ordinary one-method campaign (campaign.h) and the variants' rows share
// their units (class, sample, seed): the tables pair every row with `full`.
//
// Ablation modifiers (the reference's grammar, nefi.md §3.8):
//   no_annealing      every band open from a stage's second step
//                     (anneal_fraction -> 1e-9; thermal: anneal_steps=0)
//   no_pe             no Fourier features (n_octaves=0, include_input on)
//   single_stage      one stage at the full grid with all the steps
//   grid_field        the grid method instead of the base
//   drop_loss:NAME    loss weight NAME -> 0
//   set_weight:NAME=W loss weight NAME -> W
//   set:KEY=V, set_config:KEY=V   an instance config key
//   stage:ATTR=V, optim:ATTR=V    as --set stage.ATTR=V / optim.ATTR=V
// A loss weight is a real config key whose doc names it a weight (tv, l1,
// tv_weight, ...; not weight_decay). Cumulative by default: row i applies
// modifiers 1..i; independent: row i applies modifier i alone.
//
// Sweep axes: a config key, stage.ATTR, optim.ATTR or weight.NAME; one row
// per value, labelled KEY=V.
#include <string>
#include <vector>

#include "nefi/bench/campaign.h"
#include "nefi/io/run_config.h"

namespace nefi::bench {

struct Variant {
  std::string label;
  std::string method;
  std::vector<std::string> sets;       // applied after the campaign's own --set
  std::vector<std::string> modifiers;  // what the row applies, as given
};

// Every variant is checked against `base` (the target's config with the
// campaign's --set applied): an unknown modifier, key or value is an
// fk::Error naming it, raised before anything runs.
std::vector<Variant> ablation_variants(const RunConfig& base, const Instance& instance,
                                       const std::string& base_method,
                                       const std::vector<std::string>& modifiers, bool independent);
std::vector<Variant> sweep_variants(const RunConfig& base, const std::string& base_method,
                                    const std::string& axis,
                                    const std::vector<std::string>& values);

// A --values or --variants text as its items: split at commas outside
// brackets and braces (a list such as [10, 20] or a map such as {a: 1, b:
// 2} is one item) and at line breaks
// (the option given more than once), each trimmed; an empty item is an
// fk::Error naming `what`.
std::vector<std::string> split_list(const std::string& text, const std::string& what);

// The loss-weight keys of a config (see above).
std::vector<std::string> loss_weight_keys(const Params& config);

struct VariantCampaign {
  // The campaign's (its own --set, the first row's method), with the rows'
  // labels as methods and what each applies in `variants`.
  Protocol protocol;
  std::vector<Row> rows;
};

// Runs each variant as a campaign of `spec` (its method and its sets added)
// and relabels the rows with the variant's label.
VariantCampaign run_variants(const CampaignSpec& spec, const std::vector<Variant>& variants,
                             const CampaignOptions& options);

// variants.md: each row's label, method and assignments (the table's legend).
std::string variants_md(const std::vector<Variant>& variants, const std::string& title);

}  // namespace nefi::bench
