// Campaigns, shards and merges: a tiny toy1d campaign run whole and as three
// shards; the merge reproduces the unsharded tables byte for byte.
#include "nefi/bench/campaign.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "fk/error.h"
#include "nefi/bench/json_io.h"
#include "nefi/bench/merge.h"
#include "nefi/bench/tables.h"
#include "nefi/test_files.h"

namespace {

using nefi::test::config_path;
using nefi::test::scratch;
using nefi::test::slurp;

std::filesystem::path fresh_dir(const std::string& name) {
  return nefi::test::fresh_dir("nefi_bench_" + name);
}

namespace fs = std::filesystem;
using namespace nefi::bench;

// 2 classes x 2 samples x 2 seeds = 8 units, neural and grid (from the
// config), 3 + 6 steps each.
CampaignSpec tiny_spec() {
  CampaignSpec s;
  s.target = config_path("toy1d_smoke.yaml");
  s.classes = {"bumps", "spikes"};
  s.n_samples = 2;
  s.seeds = {0, 1};
  s.budget_scale = 0.05;
  return s;
}

bool same_except_environment(const Row& a, const Row& b) {
  return a.unit == b.unit && a.method == b.method && a.cls == b.cls && a.sample == b.sample &&
         a.data_seed == b.data_seed && a.seed == b.seed && a.metrics == b.metrics &&
         a.steps == b.steps && a.final_data_loss == b.final_data_loss && a.n_params == b.n_params &&
         a.stop == b.stop && a.error == b.error;
}

TEST(BenchCampaign, UnitsAndProtocol) {
  const Protocol p = make_protocol(tiny_spec());
  EXPECT_EQ(p.instance, "toy1d");
  EXPECT_EQ(p.methods, (std::vector<std::string>{"neural", "grid"}));
  EXPECT_EQ(p.n_units(), 8);
  const auto us = units(p);
  // class -> sample -> seed; the data seed follows the sample only.
  EXPECT_EQ(us[5].cls, "spikes");
  EXPECT_EQ(us[5].sample, 0);
  EXPECT_EQ(us[5].seed, 1u);
  EXPECT_EQ(us[6].data_seed, 1u);
  // The budget scale rounds each stage's steps (60, 120 -> 3, 6).
  bool found = false;
  for (const auto& [k, v] : p.config)
    if (k == "steps") {
      EXPECT_EQ(v, "[3, 6]");
      found = true;
    }
  EXPECT_TRUE(found);
  // Without a config file every method of the instance runs.
  CampaignSpec s;
  s.target = "deconvolution";
  EXPECT_EQ(make_protocol(s).methods, (std::vector<std::string>{"neural", "grid", "wiener", "admm",
                                                                "gaussian_splat", "deep_decoder"}));
  EXPECT_EQ(make_protocol(s).classes.size(), 3u);
}

// The config's run.max_total_steps caps a campaign's runs as it caps nefi
// run's; --smoke-steps (0: no cap) replaces it, as in nefi run.
TEST(BenchCampaign, TheConfigsStepCapCapsEveryRun) {
  CampaignSpec s = tiny_spec();
  s.sets = {"run.max_total_steps=10"};
  EXPECT_EQ(make_protocol(s).max_total_steps, 10);
  s.max_total_steps = 20;
  EXPECT_EQ(make_protocol(s).max_total_steps, 20);
  s.max_total_steps = 0;
  EXPECT_EQ(make_protocol(s).max_total_steps, 0);
}

TEST(BenchCampaign, BudgetScaleOfAStepTotal) {
  // thermal_tomography counts steps as one total plus an optional per-stage list.
  CampaignSpec s;
  s.target = config_path("thermal_tomography_smoke.yaml");
  s.budget_scale = 0.2;
  s.sets = {"n_stages=2", "stage_steps=[40, 110]"};
  std::map<std::string, std::string> config;
  for (const auto& [k, v] : make_protocol(s).config) config[k] = v;
  EXPECT_EQ(config["steps"], "30");  // 150 x 0.2
  EXPECT_EQ(config["stage_steps"], "[8, 22]");
}

// bench --smoke: the smoke config on top of an instance name, then every run
// capped at the step total, stages scaled alike (60 + 120 -> 3 + 7 of 10),
// as the reference's scale_budget(max_total_steps) does; the cap is part of
// the protocol (shards of another cap do not merge).
TEST(BenchCampaign, SmokeAppliesTheSmokeConfigAndCapsEveryRun) {
  CampaignSpec s;
  s.target = "toy1d";
  s.smoke_config = config_path("toy1d_smoke.yaml");
  s.max_total_steps = 10;
  s.classes = {"bumps"};
  s.n_samples = 1;
  s.seeds = {0};
  const Protocol p = make_protocol(s);
  EXPECT_EQ(p.max_total_steps, 10);
  EXPECT_EQ(p.methods, (std::vector<std::string>{"neural", "grid"}));  // the smoke file's
  std::map<std::string, std::string> config;
  for (const auto& [k, v] : p.config) config[k] = v;
  EXPECT_EQ(config["n"], "64");
  EXPECT_EQ(config["steps"], "[60, 120]");  // the budget itself is untouched
  CampaignOptions o;
  o.warmup = false;
  const auto rows = run_campaign(*nefi::find_instance("toy1d"), p, o);
  ASSERT_EQ(rows.size(), 2u);
  for (const Row& r : rows) {
    EXPECT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.steps, 10) << r.method;
  }
  CampaignSpec uncapped = s;
  uncapped.max_total_steps = 0;
  EXPECT_NE(protocol_hash(p), protocol_hash(make_protocol(uncapped)));
  EXPECT_EQ(make_protocol(uncapped).max_total_steps, 0);
  s.max_total_steps = -1;
  EXPECT_THROW(make_protocol(s), fk::Error);
}

// --set curriculum.* / optim.ema: part of the protocol (its hash and shard
// files), applied to every run's curriculum; the reference's method names
// become the instance's own.
TEST(BenchCampaign, CurriculumOverridesAndMethodNamesInTheProtocol) {
  CampaignSpec s = tiny_spec();
  s.methods = {"netmy", "grid"};
  const Protocol plain = make_protocol(s);
  EXPECT_EQ(plain.methods, (std::vector<std::string>{"neural", "grid"}));
  EXPECT_FALSE(nefi::bench::to_json(plain).contains("curriculum"));  // older hashes stay
  s.sets = {"curriculum.discrepancy_tau=1e6", "optim.betas=[0.8, 0.9]"};
  const Protocol p = make_protocol(s);
  EXPECT_NE(protocol_hash(p), protocol_hash(plain));
  const Protocol back = protocol_from_json(nefi::bench::to_json(p), "test");
  EXPECT_EQ(back.curriculum.discrepancy_tau, 1e6);
  EXPECT_EQ(back.curriculum.betas, (std::pair{0.8, 0.9}));
  EXPECT_EQ(protocol_hash(back), protocol_hash(p));
  // Learning-rate multipliers and frozen prefixes are the protocol's too
  // (two campaigns differing only in them once shared a hash).
  s.sets.push_back("optim.lr_mult={field.out: 0.5}");
  s.sets.push_back("curriculum.freeze=[[field.out], []]");
  const Protocol frozen = make_protocol(s);
  EXPECT_NE(protocol_hash(frozen), protocol_hash(p));
  const Protocol thawed = protocol_from_json(nefi::bench::to_json(frozen), "test");
  EXPECT_EQ(thawed.curriculum.lr_mult, frozen.curriculum.lr_mult);
  EXPECT_EQ(thawed.curriculum.freeze, frozen.curriculum.freeze);
  // Every neural run stops where the discrepancy rule fires, not at its budget.
  Protocol one = p;
  one.methods = {"neural"};
  one.classes = {"bumps"};
  one.n_samples = 1;
  one.seeds = {0};
  const nefi::InstancePtr inst = nefi::find_instance("toy1d");
  const std::vector<Row> rows = nefi::bench::run_campaign(*inst, one, CampaignOptions{});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].error, "");
  EXPECT_EQ(rows[0].stop, "discrepancy,discrepancy");
  s.sets = {"curriculum.restarts=0"};
  EXPECT_THROW(make_protocol(s), fk::Error);
  s.sets = {};
  s.methods = {"bogus"};
  EXPECT_THROW(make_protocol(s), fk::Error);
}

// The inverse-crime guard: every instance's default data generator differs
// from each of its methods' operators (the smoke configs, every method);
// nv_relaxometry's data_operator=F2 draws the data with the F2 operator
// itself, which make_protocol refuses unless allowed, and then labels.
TEST(BenchCampaign, InverseCrimeIsRefusedUnlessAllowedAndLabelled) {
  for (const auto& inst : nefi::all_instances()) {
    CampaignSpec s;
    s.target = config_path(inst->name() + "_smoke.yaml");
    s.methods = inst->methods();
    s.n_samples = 1;
    s.seeds = {0};
    const Protocol p = make_protocol(s);
    EXPECT_FALSE(p.fidelity.at("data").empty()) << inst->name();
    for (const auto& [m, r] : p.regimes())
      EXPECT_TRUE(r == "cross-fidelity" || r == "direct") << inst->name() << " " << m << ": " << r;
  }
  CampaignSpec s;
  s.target = config_path("nv_relaxometry_smoke.yaml");
  s.n_samples = 1;
  s.seeds = {0};
  s.sets = {"data_operator=F2"};
  s.methods = {"neural", "f1"};
  std::string e = "no error";
  try {
    make_protocol(s);
  } catch (const fk::Error& x) {
    e = x.what();
  }
  EXPECT_NE(e.find("inverse crime"), std::string::npos) << e;
  EXPECT_NE(e.find("--allow-inverse-crime"), std::string::npos) << e;
  EXPECT_NE(e.find("F2-fft-float32"), std::string::npos) << e;
  s.allow_inverse_crime = true;
  const Protocol crime = make_protocol(s);
  EXPECT_EQ(crime.regimes().at("neural"), "matched");
  EXPECT_EQ(crime.regimes().at("f1"), "cross-fidelity");  // the F1 model on F2 data
  const Protocol back = protocol_from_json(nefi::bench::to_json(crime), "test");
  EXPECT_EQ(back.fidelity, crime.fidelity);
  EXPECT_TRUE(back.allow_inverse_crime);
  EXPECT_EQ(protocol_hash(back), protocol_hash(crime));
  s.sets = {};
  EXPECT_NE(protocol_hash(make_protocol(s)), protocol_hash(crime));
  const std::string md = summary_md(crime, {}, {});
  EXPECT_NE(md.find("neural matched (F2-fft-float32)"), std::string::npos) << md;
}

// bench --batched --batch-device: a device batch rounds differently from the
// CPU, so its device is part of the protocol (another hash, another default
// directory; shards of the two do not merge). Without --batched, or with the
// CPU, the runs are the sequential ones: the protocol and its hash stay.
TEST(BenchCampaign, ADeviceBatchIsItsOwnProtocol) {
  CampaignSpec s = tiny_spec();
  const Protocol cpu = make_protocol(s);
  EXPECT_EQ(cpu.batch_device, "");
  EXPECT_FALSE(nefi::bench::to_json(cpu).contains("batch_device"));  // older hashes stay
  s.batch_device = fk::cuda_device(0);
  EXPECT_EQ(protocol_hash(make_protocol(s)), protocol_hash(cpu));  // not --batched: unused
  s.batched = true;
  const Protocol gpu = make_protocol(s);
  EXPECT_EQ(gpu.batch_device, "cuda:0");
  EXPECT_NE(protocol_hash(gpu), protocol_hash(cpu));
  EXPECT_EQ(protocol_from_json(nefi::bench::to_json(gpu), "test").batch_device, "cuda:0");
  s.batch_device = fk::cuda_device(1);
  EXPECT_NE(protocol_hash(make_protocol(s)), protocol_hash(gpu));
  s.batch_device = fk::kCPU;
  EXPECT_EQ(protocol_hash(make_protocol(s)), protocol_hash(cpu));
  // Either order of shards names the key, though only one of them writes it.
  for (const auto& [first, second] : {std::pair{cpu, gpu}, std::pair{gpu, cpu}}) {
    std::string e;
    try {
      merge_shard_files({{first, {0, 2}, {}}, {second, {1, 2}, {}}});
    } catch (const fk::Error& err) {
      e = err.what();
    }
    EXPECT_NE(e.find("shards from one protocol"), std::string::npos) << e;
    EXPECT_NE(e.find("'batch_device'"), std::string::npos) << e;
  }
  // Shards of other --methods differ in the fidelity that follows from them
  // too: the option is named first (fidelity alone was).
  Protocol fewer = cpu;
  fewer.methods.pop_back();
  fewer.fidelity["extra"] = "tag";
  try {
    merge_shard_files({{cpu, {0, 2}, {}}, {fewer, {1, 2}, {}}});
    ADD_FAILURE() << "merged";
  } catch (const fk::Error& err) {
    EXPECT_NE(std::string(err.what()).find("in 'methods', 'fidelity'"), std::string::npos)
        << err.what();
  }
}

// Options must batch where the protocol says its batches train (its hash
// covers the device): otherwise one campaign's hash would hold another's
// numbers. The error names both; run_campaign refuses before any run.
TEST(BenchCampaign, ABatchDeviceOtherThanTheProtocolsIsRefused) {
  CampaignSpec s = tiny_spec();
  const Protocol cpu = make_protocol(s);
  s.batched = true;
  s.batch_device = fk::cuda_device(0);
  const Protocol gpu = make_protocol(s);
  auto error = [](const Protocol& p, fk::Device device, int batch_size) {
    CampaignOptions o;
    o.batch_device = device;
    o.batch_size = batch_size;
    std::string e;
    try {
      check_protocol_batch_device(p, o);
    } catch (const fk::Error& err) {
      e = err.what();
    }
    return e;
  };
  // What make_protocol writes for each of these options matches them.
  EXPECT_EQ(error(cpu, fk::kCPU, 0), "");
  EXPECT_EQ(error(cpu, fk::kCPU, 4), "");
  EXPECT_EQ(error(gpu, fk::cuda_device(0), 4), "");
  EXPECT_EQ(error(cpu, fk::cuda_device(0), 4),
            "--batch-device: expected the protocol's batch device, cpu (no device batches), got "
            "cuda:0");
  EXPECT_EQ(error(cpu, fk::cuda_device(0), 0),
            "--batch-device: expected the protocol's batch device, cpu (no device batches), got "
            "cuda:0 without --batched");
  EXPECT_EQ(error(gpu, fk::kCPU, 4),
            "--batch-device: expected the protocol's batch device, cuda:0 with --batched, got cpu");
  EXPECT_EQ(error(gpu, fk::cuda_device(1), 4),
            "--batch-device: expected the protocol's batch device, cuda:0 with --batched, got "
            "cuda:1");
  EXPECT_EQ(error(gpu, fk::cuda_device(0), 0),
            "--batch-device: expected the protocol's batch device, cuda:0 with --batched, got "
            "cuda:0 without --batched");
  // run_campaign: a CPU batch (usable everywhere) under the device protocol.
  CampaignOptions o;
  o.batch_size = 2;
  int progress_calls = 0;
  o.on_progress = [&progress_calls](const Progress&) { ++progress_calls; };
  std::string e;
  try {
    run_campaign(*nefi::find_instance(gpu.instance), gpu, o);
  } catch (const fk::Error& err) {
    e = err.what();
  }
  EXPECT_EQ(e, error(gpu, fk::kCPU, 2));
  EXPECT_EQ(progress_calls, 0);
}

TEST(BenchCampaign, ShardedAndMergedEqualsUnshardedByteForByte) {
  const Protocol p = make_protocol(tiny_spec());
  const auto inst = nefi::find_instance(p.instance);
  const fs::path whole = fresh_dir("whole"), sharded = fresh_dir("sharded"),
                 merged = fresh_dir("merged");
  CampaignOptions o;
  const std::vector<Row> rows = run_campaign(*inst, p, o);
  ASSERT_EQ(rows.size(), 16u);
  finish_campaign(whole.string(), {p, {0, 1}, rows}, {});
  for (int i = 0; i < 3; ++i) {
    o.shard = {i, 3};
    const auto files =
        finish_campaign(sharded.string(), {p, o.shard, run_campaign(*inst, p, o)}, {});
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(fs::path(files[0]).filename(), shard_filename({i, 3}));
  }
  // Each shard holds exactly its units, every method of them, and each run
  // agrees with the unsharded one in everything but the environment fields.
  for (int i = 0; i < 3; ++i) {
    ShardFile s = read_shard((sharded / shard_filename({i, 3})).string());
    for (Row& r : s.rows) {
      EXPECT_EQ(r.unit % 3, i);
      const auto match = std::find_if(rows.begin(), rows.end(), [&](const Row& u) {
        return u.unit == r.unit && u.method == r.method;
      });
      ASSERT_NE(match, rows.end());
      EXPECT_TRUE(same_except_environment(r, *match)) << r.unit << " " << r.method;
      // Pin the environment fields to the unsharded run's.
      r.time_s = match->time_s;
      r.ms_per_step = match->ms_per_step;
      r.ops_per_step = match->ops_per_step;
      r.peak_mem_mb = match->peak_mem_mb;
      r.threads = match->threads;
      r.host = match->host;
    }
    EXPECT_EQ(s.rows.size(), (i == 2 ? 2u : 3u) * 2);
    write_shard(sharded.string(), s);
  }
  const MergedCampaign m = merge_shards(sharded.string());
  EXPECT_EQ(m.n_shards, 3);
  EXPECT_TRUE(m.missing.empty());
  write_tables(merged.string(), m.protocol, m.rows);
  for (const char* f : {"summary.md", "summary.csv", "rows.csv", "benchmark.json"}) {
    const std::string a = slurp(whole / f), b = slurp(merged / f);
    EXPECT_FALSE(a.empty()) << f;
    EXPECT_EQ(a, b) << f;
  }
  // Canonical order: class -> sample -> method -> seed.
  EXPECT_EQ(m.rows[0].method, "neural");
  EXPECT_EQ(m.rows[1].method, "neural");
  EXPECT_EQ(m.rows[1].seed, 1u);
  EXPECT_EQ(m.rows[2].method, "grid");
}

// toy1d under another instance's hooks.
class Toy1dWrapper : public nefi::Instance {
 public:
  Toy1dWrapper() : base_(nefi::find_instance("toy1d")) {}
  std::string name() const override { return "toy1d"; }
  std::string summary() const override { return "toy1d, wrapped"; }
  nefi::Params default_config() const override { return base_->default_config(); }
  std::vector<std::string> methods() const override { return base_->methods(); }
  std::vector<std::string> scenes() const override { return base_->scenes(); }
  nefi::DataLabels data_labels(const nefi::Params& p) const override {
    return base_->data_labels(p);
  }
  std::pair<nefi::Measurement, fk::Tensor> make_measurement(const nefi::Params& p,
                                                            uint64_t seed) const override {
    return base_->make_measurement(p, seed);
  }
  nefi::RunOutput run(const nefi::Params& p, const std::string& method, uint64_t seed,
                      const nefi::SolverOptions& so) const override {
    return base_->run(p, method, seed, so);
  }

 private:
  nefi::InstancePtr base_;
};

// toy1d whose grid method fails on the second sample.
class FlakyToy : public Toy1dWrapper {
 public:
  nefi::RunOutput run(const nefi::Params& p, const std::string& method, uint64_t seed,
                      const nefi::SolverOptions& so) const override {
    FK_CHECK(!(method == "grid" && seed == 1), "flaky", "a healthy run", "data seed 1");
    return Toy1dWrapper::run(p, method, seed, so);
  }
};

// toy1d reporting a metric `found` on data seed 1 only (as thermal's depth
// errors exist where a defect was found).
class OccasionalToy : public Toy1dWrapper {
 public:
  nefi::RunOutput run(const nefi::Params& p, const std::string& method, uint64_t seed,
                      const nefi::SolverOptions& so) const override {
    nefi::RunOutput out = Toy1dWrapper::run(p, method, seed, so);
    if (seed == 1) out.metrics["found"] = 1;
    return out;
  }
  std::vector<std::string> occasional_metrics() const override { return {"found"}; }
};

// --metrics may name a metric the warm-up's run lacks when the instance
// reports it where defined; rows without it leave it out.
TEST(BenchCampaign, MetricsMayNameAnOccasionalMetric) {
  CampaignSpec s = tiny_spec();
  s.classes = {"bumps"};
  s.seeds = {0};
  s.methods = {"grid"};
  s.metrics = {"found", "psnr"};
  CampaignOptions o;  // with the warm-up, on sample 0 (no `found`)
  const auto rows = run_campaign(OccasionalToy(), make_protocol(s), o);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].metrics.count("found"), 0u);
  EXPECT_EQ(rows[1].metrics.at("found"), 1);
  EXPECT_EQ(rows[1].metrics.size(), 2u);
  s.metrics = {"psnr", "nope"};
  EXPECT_THROW(run_campaign(OccasionalToy(), make_protocol(s), o), fk::Error);
}

TEST(BenchCampaign, FailingRunIsRecordedAndTheCampaignGoesOn) {
  CampaignSpec s = tiny_spec();
  s.classes = {"bumps"};
  s.seeds = {0};
  const Protocol p = make_protocol(s);
  FlakyToy flaky;
  CampaignOptions o;
  o.warmup = false;
  int calls = 0;
  o.on_progress = [&calls](const Progress& pr) {
    ++calls;
    EXPECT_EQ(pr.total, 4);
    EXPECT_EQ(pr.units_total, 2);
    EXPECT_EQ(pr.units_done, pr.done / 2);
  };
  const auto rows = run_campaign(flaky, p, o);
  EXPECT_EQ(calls, 4);
  ASSERT_EQ(rows.size(), 4u);
  const Row& bad = rows[3];  // sample 1, grid
  EXPECT_EQ(bad.method, "grid");
  EXPECT_EQ(bad.sample, 1);
  EXPECT_NE(bad.error.find("data seed 1"), std::string::npos);
  EXPECT_EQ(bad.stop, "failed");
  EXPECT_TRUE(bad.metrics.empty());
  EXPECT_TRUE(rows[2].error.empty());
  const std::string md = summary_md(p, rows, {});
  EXPECT_NE(md.find("Failed runs"), std::string::npos);
  EXPECT_NE(md.find("| grid | 1 | 1 |"), std::string::npos) << md;
  // The failed run is absent from the paired differences (1 pair left).
  const size_t paired = md.find("Paired differences");
  ASSERT_NE(paired, std::string::npos) << md;
  EXPECT_NE(md.find("| grid | 1 |", paired), std::string::npos) << md;
  // Round trip through a shard file keeps the error text.
  const fs::path d = fresh_dir("flaky");
  write_shard(d.string(), {p, {0, 1}, rows});
  EXPECT_EQ(read_shard((d / shard_filename({0, 1})).string()).rows[3].error, bad.error);
}

TEST(BenchCampaign, DirectBaselineRunsThroughTheSameProtocol) {
  CampaignSpec s;
  s.target = config_path("deconvolution_smoke.yaml");
  s.sets = {"n=16"};
  s.methods = {"wiener", "grid"};
  s.classes = {"phantom"};
  s.n_samples = 1;
  s.seeds = {0, 1};
  s.budget_scale = 0.02;
  const Protocol p = make_protocol(s);
  CampaignOptions o;
  o.warmup = false;
  const auto rows = run_campaign(*nefi::find_instance("deconvolution"), p, o);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].method, "wiener");
  EXPECT_TRUE(rows[0].error.empty()) << rows[0].error;
  EXPECT_EQ(rows[0].steps, 0);
  EXPECT_EQ(rows[0].stop, "direct");
  EXPECT_TRUE(std::isnan(rows[0].ms_per_step));
  EXPECT_TRUE(rows[0].metrics.count("psnr"));
  EXPECT_EQ(rows[2].method, "grid");
  EXPECT_EQ(rows[2].steps, 3 + 6);
  // The Wiener rows of both seeds saw the same data: same reconstruction.
  EXPECT_EQ(rows[0].metrics, rows[1].metrics);
  const std::string csv = rows_csv(p, rows);
  EXPECT_NE(csv.find(",direct,"), std::string::npos);
}

// --metrics: every row keeps the named metrics only, the protocol (and so
// the shard files and their merge) records them, and a name the instance
// does not report stops the campaign at its first row, naming those it does.
TEST(BenchCampaign, MetricsKeepsTheNamedColumns) {
  CampaignSpec s;
  s.target = config_path("deconvolution_smoke.yaml");
  s.sets = {"n=16"};
  s.methods = {"wiener"};
  s.classes = {"phantom"};
  s.n_samples = 1;
  s.seeds = {0};
  s.metrics = {"ssim", "psnr", "ssim"};
  const Protocol p = make_protocol(s);
  EXPECT_EQ(p.metrics, (std::vector<std::string>{"psnr", "ssim"}));  // as the tables order them
  EXPECT_EQ(protocol_from_json(nefi::bench::to_json(p), "test").metrics, p.metrics);
  CampaignOptions o;
  o.warmup = false;
  const nefi::Instance& deconvolution = *nefi::find_instance("deconvolution");
  const auto rows = run_campaign(deconvolution, p, o);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(metric_names(rows), (std::vector<std::string>{"psnr", "ssim"}));
  s.metrics = {"psnr", "nope"};
  o.warmup = true;  // the warm-up's row refuses it, before any timed run
  try {
    run_campaign(deconvolution, make_protocol(s), o);
    ADD_FAILURE() << "no error";
  } catch (const fk::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'nope'"), std::string::npos) << m;
    EXPECT_NE(m.find("mse"), std::string::npos) << m;  // one it reports
  }
  s.metrics = {""};
  EXPECT_THROW(make_protocol(s), fk::Error);
}

TEST(BenchCampaign, BadInputIsAClearError) {
  for (const char* bad : {"3/2", "2/2", "-1/2", "1/0", "a/b", "2", "1/2/3", ""})
    EXPECT_THROW(parse_shard(bad), fk::Error) << bad;
  EXPECT_EQ(parse_shard("2/3").index, 2);
  try {
    parse_shard("3/2");
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--shard"), std::string::npos);
  }
  CampaignSpec s = tiny_spec();
  s.methods = {"neural", "admm"};
  try {
    make_protocol(s);
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("admm"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("grid"), std::string::npos);
  }
  s = tiny_spec();
  s.target = "toy2d";
  EXPECT_THROW(make_protocol(s), fk::Error);
  s = tiny_spec();
  s.classes = {"bumps", "stars"};
  EXPECT_THROW(make_protocol(s), fk::Error);
  s = tiny_spec();
  s.budget_scale = 0;
  EXPECT_THROW(make_protocol(s), fk::Error);
  s = tiny_spec();
  s.n_samples = 0;
  EXPECT_THROW(make_protocol(s), fk::Error);

  // An output directory that is a file.
  const fs::path file = scratch() / "nefi_bench_not_a_dir";
  std::ofstream(file) << "x";
  const Protocol p = make_protocol(tiny_spec());
  try {
    write_tables(file.string(), p, {});
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a file"), std::string::npos);
  }
  EXPECT_THROW(write_shard(file.string(), {p, {0, 2}, {}}), fk::Error);
}

}  // namespace
