// nefi bench TARGET and nefi bench-merge DIR: paired benchmark campaigns,
// sharded for clusters (nefi/bench/campaign.h, merge.h, tables.h).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "common.h"
#include "fk/device.h"
#include "fk/error.h"
#include "nefi/bench/batched_runs.h"
#include "nefi/bench/campaign.h"
#include "nefi/bench/merge.h"
#include "nefi/bench/sweep_png.h"
#include "nefi/bench/tables.h"
#include "run_request.h"

namespace nefi::cli {
namespace {

void print_progress(const bench::Progress& p) {
  const double left = p.done > 0 ? p.elapsed_s * (p.total - p.done) / p.done : NAN;
  std::fprintf(stderr,
               "\r\033[K[bench] units %lld/%lld (runs %lld/%lld) · %.1f s elapsed · ~%.1f s left",
               static_cast<long long>(p.units_done), static_cast<long long>(p.units_total),
               static_cast<long long>(p.done), static_cast<long long>(p.total), p.elapsed_s, left);
  if (p.done == p.total) std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace

Command add_bench(CLI::App& app, const Context& ctx) {
  struct Opts {
    bench::CampaignSpec spec;
    std::string shard = "0/1", out;
    int threads = 0, batch_size = 16;
    std::string batch_device = "cpu";
    bool by_class = false, batched = false, smoke = false;
    int64_t smoke_steps = 40;
    CLI::Option *smoke_steps_opt = nullptr, *batch_size_opt = nullptr;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand(
      "bench", "paired benchmark: (class, sample, seed) units x methods, mean ± 95 % CI");
  sub->add_option("target", o->spec.target, "instance name or config file")->required();
  sub->add_option("--methods,-m", o->spec.methods,
                  "comma list (default: the config's run.methods, else all)")
      ->delimiter(',');
  sub->add_option("--n,-n", o->spec.n_samples, "measurements per class (default 4)");
  sub->add_option("--seeds", o->spec.seeds, "comma list of seeds (default 0,1,2)")
      ->delimiter(',')
      ->check(non_negative_seed());
  sub->add_option("--classes", o->spec.classes, "comma list of scenes, or all (default)")
      ->delimiter(',');
  sub->add_option("--metrics", o->spec.metrics,
                  "comma list of the metric columns to keep (default: every one the instance "
                  "reports)")
      ->delimiter(',');
  sub->add_option("--budget-scale", o->spec.budget_scale, "multiply every stage's steps");
  sub->add_option("--set", o->spec.sets, "override KEY=VALUE (repeatable)");
  sub->add_option("--shard", o->shard, "run shard I/N: units k with k mod N == I");
  sub->add_option("--out,-o", o->out, "output directory (default runs/<instance>-bench-<hash>)")
      ->check(non_empty_directory());
  sub->add_option("--threads", o->threads,
                  "fk threads (default, and 0: $OMP_NUM_THREADS if set, else 1)")
      ->check(thread_count());
  sub->add_flag("--by-class", o->by_class, "summary.csv per class and method");
  sub->add_flag("--allow-inverse-crime", o->spec.allow_inverse_crime,
                "benchmark a method whose operator drew the data (the matched regime, labelled "
                "so in summary.md and benchmark.json)");
  sub->add_flag("--batched", o->batched,
                "solve each method's units with batch_invert where it can (else sequentially)");
  o->batch_size_opt = sub->add_option("--batch-size", o->batch_size,
                                      "problems per batch with --batched (default 16)");
  sub->add_option("--batch-device", o->batch_device,
                  "where --batched batches train: cpu (default), cuda or cuda:N (needs "
                  "--batched; a method the device batch refuses runs sequentially on the CPU)");
  sub->add_flag(
      "--smoke", o->smoke,
      "apply configs/<instance>_smoke.yaml (over a config file's own settings) and cap every "
      "run at --smoke-steps");
  o->smoke_steps_opt = sub->add_option(
      "--smoke-steps", o->smoke_steps,
      "cap each run's total steps (stages scaled alike, each at least 2; default 40 with "
      "--smoke; 0: no cap)");
  sub->footer(
      "Examples:\n  nefi bench toy1d --n 2 --seeds 0,1\n"
      "  nefi bench configs/deconvolution_smoke.yaml --methods neural,wiener --shard 0/4 -o "
      "runs/b\n"
      "  nefi bench toy1d --smoke --batched --batch-size 8 --batch-device cuda\n"
      "  nefi bench-merge runs/b");
  return {sub, [o, &ctx] {
            // Before any work: a malformed batch device, one that is not
            // the protocol's (--batch-device without --batched), an unusable one.
            const fk::Device batch_device = fk::parse_device(o->batch_device);
            if (o->smoke) {
              const std::string& t = o->spec.target;
              const bool is_file = is_config_file_target(t);
              const std::string instance = is_file ? load_run_config_file(t).instance : t;
              o->spec.smoke_config = smoke_config_path(instance, ctx.config_dirs).string();
            }
            if (o->smoke || o->smoke_steps_opt->count()) {  // as `nefi run` takes it
              FK_CHECK(o->smoke_steps >= 0 && o->smoke_steps <= std::numeric_limits<int>::max(),
                       "--smoke-steps", "a step count in [0, 2147483647] (0: no cap)",
                       fk::to_text(o->smoke_steps));
              o->spec.max_total_steps = o->smoke_steps;
            }
            const bench::Shard shard = bench::parse_shard(o->shard);
            o->spec.batched = o->batched;
            o->spec.batch_device = batch_device;
            const bench::Protocol proto = bench::make_protocol(o->spec);
            bench::CampaignOptions co;
            co.shard = shard;
            FK_CHECK(o->batch_size >= 1, "--batch-size", "a batch size >= 1",
                     fk::to_text(o->batch_size));
            // Without --batched it would be dropped without a word (as
            // --batch-device is refused there).
            FK_CHECK(o->batched || o->batch_size_opt->count() == 0, "--batch-size",
                     "--batched with it (a batch size sets how many problems train at once)",
                     "--batch-size " + fk::to_text(o->batch_size) + " without --batched");
            if (o->batched) co.batch_size = o->batch_size;
            co.batch_device = batch_device;
            bench::check_protocol_batch_device(proto, co);
            bench::check_batch_device(batch_device);
            const std::string out = !o->out.empty() ? o->out
                                                    : "runs/" + proto.instance + "-bench-" +
                                                          bench::protocol_hash(proto);
            bench::prepare_out_dir(out);
            set_threads(o->threads);
            const InstancePtr inst = find_instance(proto.instance);
            if (stderr_is_tty()) co.on_progress = print_progress;
            co.on_log = [](const std::string& line) { std::cerr << "[bench] " << line << "\n"; };
            bench::ShardFile s{proto, shard, bench::run_campaign(*inst, proto, co)};
            int failed = 0;
            for (const auto& r : s.rows) failed += !r.error.empty();
            bench::TableOptions to;
            to.by_class = o->by_class;
            const auto files = bench::finish_campaign(out, s, to);
            if (shard.count == 1) std::cout << bench::summary_md(proto, s.rows, to) << "\n";
            std::cout << fmt::format("{}: {} runs ({} failed) -> {}\n",
                                     shard.count > 1 ? "shard " + o->shard : proto.instance,
                                     s.rows.size(), failed, shard.count > 1 ? files.front() : out);
            return 0;
          }};
}

Command add_bench_merge(CLI::App& app, const Context&) {
  struct Opts {
    std::string dir, out;
    bool allow_missing = false, by_class = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("bench-merge",
                                 "merge shard-III-of-NNN.json files into the campaign's tables");
  sub->add_option("dir", o->dir, "directory holding the shard files")->required();
  sub->add_flag("--allow-missing", o->allow_missing, "merge even when shards are missing");
  sub->add_flag("--by-class", o->by_class, "summary.csv per class and method");
  sub->add_option("--out,-o", o->out, "output directory (default: DIR)")
      ->check(non_empty_directory());
  sub->footer(
      "Examples:\n  nefi bench-merge runs/b\n  nefi bench-merge runs/b --allow-missing -o "
      "runs/b-partial");
  return {sub, [o] {
            const bench::MergedCampaign m = bench::merge_shards(o->dir, o->allow_missing);
            const std::string out = o->out.empty() ? o->dir : o->out;
            bench::TableOptions to;
            to.by_class = o->by_class;
            bench::write_tables(out, m.protocol, m.rows, to);
            // A sharded sweep's figure, which no shard could draw alone.
            if (const auto sweep = bench::sweep_axis_of(m.protocol.methods))
              bench::write_sweep_png(out + "/sweep.png",
                                     m.protocol.instance + ": sweep of " + sweep->key, sweep->key,
                                     sweep->values, m.protocol.methods, m.rows);
            std::cout << fmt::format(
                "merged {} shard(s) of {} ({} runs){} -> {}\n", m.found.size(), m.n_shards,
                m.rows.size(),
                m.missing.empty() ? "" : fmt::format(", {} missing", m.missing.size()), out);
            return 0;
          }};
}

}  // namespace nefi::cli
