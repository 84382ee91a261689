#include "variant_campaign.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "fk/error.h"
#include "nefi/bench/merge.h"
#include "nefi/bench/tables.h"
#include "nefi/io/fnv.h"
#include "run_request.h"

namespace fs = std::filesystem;

namespace nefi::cli {

void add_variant_options(CLI::App* sub, VariantRequest& r) {
  sub->add_option("target", r.spec.target, "instance name or config file")->required();
  sub->add_option("--base", r.base, "the method to vary (default neural, else the first)");
  sub->add_option("--n,-n", r.spec.n_samples, "measurements per class (default 4)");
  sub->add_option("--seeds", r.spec.seeds, "comma list of seeds (default 0,1,2)")
      ->delimiter(',')
      ->check(non_negative_seed());
  sub->add_option("--classes", r.spec.classes, "comma list of scenes, or all (default)")
      ->delimiter(',');
  sub->add_option("--budget-scale", r.spec.budget_scale, "multiply every stage's steps");
  sub->add_option("--set", r.spec.sets, "override KEY=VALUE for every row (repeatable)");
  sub->add_option("--shard", r.shard, "run shard I/N (merge with nefi bench-merge)");
  sub->add_option("--out,-o", r.out, "output directory (default runs/<instance>-<kind>-<hash>)")
      ->check(non_empty_directory());
  sub->add_option("--threads", r.threads,
                  "fk threads (default, and 0: $OMP_NUM_THREADS if set, else 1)")
      ->check(thread_count());
  sub->add_flag("--allow-inverse-crime", r.spec.allow_inverse_crime,
                "benchmark a method whose operator drew the data (the matched regime)");
}

VariantBase resolve_variant_base(const VariantRequest& r) {
  const std::string& t = r.spec.target;
  const bool is_file = is_config_file_target(t);
  VariantBase b;
  b.config = is_file ? load_run_config_file(t) : default_run_config(t);
  for (const auto& s : r.spec.sets) apply_set(b.config, s);
  b.instance = find_instance(b.config.instance);
  b.method = r.base.empty() ? default_method(*b.instance)
                            : canonical_method(*b.instance, r.base, "--base");
  return b;
}

int run_variant_command(const VariantRequest& r, const std::string& kind,
                        const std::vector<bench::Variant>& variants, const ExtraFiles& extra) {
  const bench::Shard shard = bench::parse_shard(r.shard);
  set_threads(r.threads);
  bench::CampaignOptions co;
  co.shard = shard;
  co.on_log = [&kind](const std::string& line) {
    std::cerr << "[" << kind << "] " << line << "\n";
  };
  // The directory is checked before anything runs; its name covers every row.
  bench::CampaignSpec first = r.spec;
  first.methods = {variants.front().method};
  const bench::Protocol p = bench::make_protocol(first);
  std::string hashed = bench::protocol_hash(p);
  for (const auto& v : variants) {
    hashed += "|" + v.label + ":" + v.method;
    for (const auto& a : v.sets) hashed += ":" + a;
  }
  const std::string out =
      !r.out.empty() ? r.out : "runs/" + p.instance + "-" + kind + "-" + fnv1a_hex(hashed, 12);
  bench::prepare_out_dir(out);
  const bench::VariantCampaign vc = bench::run_variants(r.spec, variants, co);
  int failed = 0;
  for (const auto& row : vc.rows) failed += !row.error.empty();
  const bench::ShardFile s{vc.protocol, shard, vc.rows};
  const auto files = bench::finish_campaign(out, s, {});
  std::ofstream(fs::path(out) / "variants.md")
      << bench::variants_md(variants, vc.protocol.instance + " " + kind + ": rows");
  if (shard.count == 1 && extra) extra(out, vc);
  if (shard.count == 1) std::cout << bench::summary_md(vc.protocol, vc.rows, {}) << "\n";
  std::cout << fmt::format("{} {}: {} rows x {} runs ({} failed) -> {}\n", kind,
                           vc.protocol.instance, variants.size(),
                           variants.empty() ? 0 : vc.rows.size() / variants.size(), failed,
                           shard.count > 1 ? files.front() : out);
  return 0;
}

}  // namespace nefi::cli
