#pragma once
// What `nefi ablate` and `nefi sweep` share: bench's campaign options
// (--n, --seeds, --classes, --budget-scale, --set, --shard, --out, --threads)
// plus --base, and the run of their variants with bench's output files and
// variants.md beside them.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "nefi/bench/campaign.h"
#include "nefi/bench/variants.h"

namespace nefi::cli {

struct VariantRequest {
  bench::CampaignSpec spec;
  std::string base, shard = "0/1", out;
  int threads = 0;
};

void add_variant_options(CLI::App* sub, VariantRequest& r);

// The target's config with --set applied, the instance and the base method
// (--base, else neural when the instance has it, else its first method).
struct VariantBase {
  RunConfig config;
  InstancePtr instance;
  std::string method;
};
VariantBase resolve_variant_base(const VariantRequest& r);

// Runs `variants` (kind: "ablate" or "sweep", for the default directory
// runs/<instance>-<kind>-<hash> and the messages), writes the tables, calls
// `extra` (when given, on an unsharded run) for the command's own files and
// prints summary.md.
using ExtraFiles = std::function<void(const std::string& out, const bench::VariantCampaign&)>;
int run_variant_command(const VariantRequest& r, const std::string& kind,
                        const std::vector<bench::Variant>& variants, const ExtraFiles& extra = {});

}  // namespace nefi::cli
