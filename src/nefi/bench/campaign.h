#pragma once
// A benchmark campaign: paired units (class, sample, seed) x methods on one
// instance. Unit k enumerates class -> sample -> seed; its measurement comes
// from data seed `data_seed_offset + sample` with the class as the scene, so
// every method and every seed of a (class, sample) sees the same data, and the
// seed only initialises the field (SolverOptions::init_seed). A run that
// throws becomes a row with its error; the campaign goes on.
//
// Sharding: shard (i, n) runs unit k exactly when k mod n == i, all methods of
// the unit together, so comparisons stay paired across a cluster.
//
// Rows carry everything the tables need, the environment-dependent fields
// included (kEnvironmentFields: timings, memory, threads, host), so the tables
// are a pure function of (protocol, rows) and a merge of shards reproduces the
// unsharded run's files exactly.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fk/device.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"

namespace nefi::bench {

// What a campaign runs; shards of one campaign share it exactly.
struct Protocol {
  std::string instance;
  std::vector<std::pair<std::string, std::string>> config;  // key -> YAML text, budget applied
  std::vector<std::string> methods;                         // the first is the reference
  std::vector<std::string> classes;
  int64_t n_samples = 4;
  std::vector<uint64_t> seeds{0, 1, 2};
  double budget_scale = 1.0;
  // > 0: every run's curriculum is capped at this many steps in total (each
  // stage scaled alike, at least 2 a stage; bench --smoke).
  int64_t max_total_steps = 0;
  // "cuda:N" when --batched batches train on that CUDA device (bench
  // --batch-device): a device batch's rounding differs from the CPU's, so its
  // results are another campaign's. Empty: the CPU, or no --batched (batches
  // on the CPU give the sequential runs' numbers).
  std::string batch_device;
  uint64_t data_seed_offset = 0;
  bool nan_guard = true;
  int64_t checkpoint_every = 25, max_bad_steps = 10;
  // The config's curriculum overrides (stopping rules, restarts, EMA,
  // betas), applied to every method's curriculum before the cap.
  CurriculumOverrides curriculum;
  // The inverse-crime guard (the reference's check_inverse_crime): "data" ->
  // the data generator's fidelity tag, and each method that runs a solver ->
  // its operator's tag; a method whose tag equals the data's solves data
  // drawn with its own model, which make_protocol refuses unless
  // allow_inverse_crime (bench --allow-inverse-crime). Direct methods have
  // no entry.
  std::map<std::string, std::string> fidelity;
  bool allow_inverse_crime = false;
  // The metrics every row keeps (bench --metrics; empty: all the instance
  // reports); tables list them by name as ever. The first successful row that lacks one is
  // an fk::Error naming the ones the instance reports.
  std::vector<std::string> metrics;
  // An ablation's or sweep's rows (variants.h): per row label, the method it
  // runs and then the --set assignments it applies over `config` (empty for
  // a plain bench). Part of the protocol: shards whose rows apply other
  // settings under one label are other campaigns.
  std::map<std::string, std::vector<std::string>> variants;

  int64_t n_units() const;
  // Per method: "matched" (the data's tag), "cross-fidelity", "unknown" (an
  // operator without a tag) or "direct" (no solver).
  std::map<std::string, std::string> regimes() const;
};

struct Unit {
  int64_t index = 0;  // k, the canonical position
  std::string cls;
  int64_t sample = 0;
  uint64_t data_seed = 0, seed = 0;
};
std::vector<Unit> units(const Protocol& p);

// Fields that vary between machines and runs of the same protocol.
inline const std::vector<std::string> kEnvironmentFields{
    "time_s", "ms_per_step", "ops_per_step", "peak_mem_mb", "threads", "host", "batch_size"};

struct Row {
  int64_t unit = 0;
  std::string method, cls;
  int64_t sample = 0;
  uint64_t data_seed = 0, seed = 0;
  std::map<std::string, double> metrics;  // empty when the run failed
  int64_t steps = 0;                      // optimizer steps run (0: a direct method)
  double final_data_loss = 0;             // NaN for direct methods and failures
  int64_t n_params = 0;
  std::string stop;   // per-stage stop reasons joined by ','; "direct" without a solver
  std::string error;  // empty on success
  // environment
  double time_s = 0, ms_per_step = 0, ops_per_step = 0, peak_mem_mb = 0;
  int64_t threads = 1;
  std::string host;
  // > 1: solved by batch_invert with this many problems; time_s, ms_per_step,
  // ops_per_step and peak_mem_mb are then the batch's divided by it.
  int64_t batch_size = 1;
};

struct Shard {
  int index = 0, count = 1;
};
// "i/n" with 0 <= i < n; fk::Error otherwise.
Shard parse_shard(const std::string& text);
// shard-III-of-NNN.json
std::string shard_filename(const Shard& s);

struct CampaignSpec {
  std::string target;                // instance name or config file
  std::vector<std::string> sets;     // --set KEY=VALUE
  std::vector<std::string> methods;  // empty: the config file's run.methods, else all
  std::vector<std::string> classes;  // empty or {"all"}: every scene of the instance
  int64_t n_samples = 4;
  std::vector<uint64_t> seeds{0, 1, 2};
  double budget_scale = 1.0;  // multiplies the `steps` list (at least 1 step per stage)
  // bench --smoke: a config file applied on top of the target before the
  // --set overrides (configs/<instance>_smoke.yaml), and the total step cap.
  std::string smoke_config;
  // --smoke / --smoke-steps: the step cap of every run (0: none) in place of
  // the config's run.max_total_steps, as nefi run takes it; unset: the config's.
  std::optional<int64_t> max_total_steps;
  // bench --batched and --batch-device (Protocol::batch_device).
  bool batched = false;
  fk::Device batch_device = fk::kCPU;
  bool allow_inverse_crime = false;  // bench --allow-inverse-crime
  // bench --metrics: the metric columns the rows keep (empty: every one the
  // instance reports).
  std::vector<std::string> metrics;
};
// Multiplies a config's `steps` (a list per stage, or a total with its
// stage_steps) by factor, rounded, at least 1 step each; the config has `steps`.
void scale_steps(Params& config, double factor);
// Resolves and checks a spec (unknown instance, method or class, bad budget
// are fk::Errors naming the valid choices).
Protocol make_protocol(const CampaignSpec& spec);
// The instance's config with the protocol's values applied.
Params protocol_params(const Instance& instance, const Protocol& p);
// The curriculum overrides a campaign's run of `method` takes: the
// protocol's for the instance's own solver, none for a baseline (the
// reference applies a config's curriculum to the default method only, so
// baselines keep their budgets).
CurriculumOverrides method_overrides(const Instance& instance, const Protocol& p,
                                     const std::string& method);
// `own` (the instance's curriculum for `method`) as a campaign's run solves
// it: method_overrides, then the protocol's step cap (solve_and_record's
// order).
Curriculum campaign_curriculum(const Instance& instance, const Protocol& p,
                               const std::string& method, const Curriculum& own);

struct Progress {
  int64_t done = 0, total = 0;              // runs (unit x method) in this shard
  int64_t units_done = 0, units_total = 0;  // units in this shard
  double elapsed_s = 0;
};

struct CampaignOptions {
  Shard shard;
  bool warmup = true;  // one untimed 1-step run per method before the clock starts
  std::function<void(const Progress&)> on_progress;
  // > 0 (--batched): each method that batch_invert can solve runs this
  // shard's units in batches of this size (batched_runs.h); the others run
  // one by one and on_log says why.
  int batch_size = 0;
  // (--batch-device) where the batches train: the CPU, or a CUDA device
  // (BatchOptions::device); a method the device batch refuses
  // (batch_device_reason) runs sequentially on the CPU and on_log says why.
  // run_campaign refuses a device this process cannot use, or one that is
  // not the protocol's (check_protocol_batch_device), before any work.
  fk::Device batch_device = fk::kCPU;
  std::function<void(const std::string&)> on_log;
};

// Throws fk::Error naming both unless `options` batch where `protocol` says
// its batches train: Protocol::batch_device (in its hash) is "cuda:N" only
// for batches on that device, so options on another device, or on one
// without batches (batch_size 0), would file their numbers under another
// campaign's hash. run_campaign calls it before any work; nefi bench before
// it checks the device is usable.
void check_protocol_batch_device(const Protocol& protocol, const CampaignOptions& options);

// Runs this shard's units with `instance` (which must be protocol.instance's
// implementation, or a stand-in with the same methods and scenes).
std::vector<Row> run_campaign(const Instance& instance, const Protocol& protocol,
                              const CampaignOptions& options);

// Canonical order: class -> sample -> method (protocol order) -> seed.
void sort_rows(const Protocol& p, std::vector<Row>& rows);

}  // namespace nefi::bench
