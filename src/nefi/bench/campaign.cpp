#include "nefi/bench/campaign.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <variant>

#include <yaml-cpp/yaml.h>

#include "fk/error.h"
#include "fk/memory.h"
#include "fk/parallel.h"
#include "nefi/bench/batched_runs.h"
#include "nefi/bench/unit_row.h"
#include "nefi/io/fnv.h"

namespace nefi::bench {
namespace {

// True when the `steps` key is one total (thermal_tomography, with its
// n_stages and stage_steps) rather than a list of stage steps.
bool steps_is_total(const Params& p) {
  for (const auto& e : p.entries())
    if (e.key == "steps") return std::holds_alternative<int64_t>(e.value);
  return false;
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// FNV-1a over the measurement's values: the pairing check across methods.
uint64_t data_fingerprint(const Measurement& m) {
  const std::vector<double> v = m.data.to_vector<double>();
  return fnv1a(v.data(), v.size() * sizeof(double));
}

// A successful row's metrics cut to the protocol's (bench --metrics); a
// named metric the row lacks stays missing (the tables count it).
void keep_metrics(const Protocol& p, Row& r) {
  if (p.metrics.empty() || !r.error.empty()) return;
  std::map<std::string, double> kept;
  for (const std::string& m : p.metrics)
    if (const auto it = r.metrics.find(m); it != r.metrics.end()) kept.insert(*it);
  r.metrics = std::move(kept);
}

// Before any timed run: every --metrics name is one the warm-up's rows
// report, or one the instance reports where defined; fk::Error listing them
// otherwise (nothing is checked when no warm-up run succeeded).
void check_metric_names(const Instance& inst, const Protocol& p, const std::vector<Row>& warm) {
  std::set<std::string> known;
  bool any = false;
  for (const Row& r : warm)
    if (r.error.empty()) {
      any = true;
      for (const auto& [k, v] : r.metrics) known.insert(k);
    }
  if (p.metrics.empty() || !any) return;
  for (const std::string& m : inst.occasional_metrics()) known.insert(m);
  for (const std::string& m : p.metrics)
    FK_CHECK(known.count(m), "--metrics",
             "metrics " + p.instance + " reports (" +
                 join(std::vector<std::string>(known.begin(), known.end()), ", ") + ")",
             "'" + m + "'");
}

// One (unit, method) run; `fingerprint` gets the measurement's (0 on failure).
Row run_one(const Instance& inst, Params p, const Unit& u, const std::string& method,
            const Protocol& proto, uint64_t* fingerprint = nullptr) {
  Row r = detail::start_row(u, method);
  p = detail::unit_params(std::move(p), u);
  SolverOptions so;
  so.seed = u.data_seed;
  so.init_seed = u.seed;
  so.nan_guard = proto.nan_guard;
  so.checkpoint_every = static_cast<int>(proto.checkpoint_every);
  so.max_bad_steps = static_cast<int>(proto.max_bad_steps);
  so.max_total_steps = static_cast<int>(proto.max_total_steps);
  so.curriculum = method_overrides(inst, proto, method);
  // The solver resets the peak at each stage start; the running maximum over
  // steps plus the final reading covers the whole solve.
  int64_t peak = 0;
  so.callbacks.push_back([&peak](const StepInfo&) {
    peak = std::max(peak, fk::memory_stats().peak);
    return true;
  });
  fk::reset_peak_memory();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    RunOutput out = inst.run(p, method, u.data_seed, so);
    r.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    peak = std::max(peak, fk::memory_stats().peak);
    r.peak_mem_mb = peak / 1048576.0;
    r.metrics = out.metrics;
    const Result& res = out.result;
    r.steps = res.total_steps();
    r.n_params = res.n_parameters;
    if (r.steps == 0) {
      r.stop = "direct";
      r.ms_per_step = r.ops_per_step = r.final_data_loss = kNaN;
    } else {
      std::vector<std::string> stops;
      for (const auto& s : res.stages) stops.push_back(s.stop);
      r.stop = join(stops, ",");
      r.ms_per_step = res.ms_per_step();
      r.ops_per_step = res.ops_per_step();
      r.final_data_loss = res.stages.back().final_data_loss;
    }
    if (fingerprint) *fingerprint = data_fingerprint(out.measurement);
  } catch (const std::exception& e) {
    r.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.metrics.clear();
    r.steps = 0;
    r.final_data_loss = r.ms_per_step = r.ops_per_step = kNaN;
    r.peak_mem_mb = std::max(peak, fk::memory_stats().peak) / 1048576.0;
    r.stop = "failed";
    r.error = e.what();
    if (r.error.empty()) r.error = "unknown error";
  }
  return r;
}

}  // namespace

int64_t Protocol::n_units() const {
  return static_cast<int64_t>(classes.size()) * n_samples * static_cast<int64_t>(seeds.size());
}

std::vector<Unit> units(const Protocol& p) {
  std::vector<Unit> out;
  for (const auto& c : p.classes)
    for (int64_t s = 0; s < p.n_samples; ++s)
      for (uint64_t seed : p.seeds)
        out.push_back({static_cast<int64_t>(out.size()), c, s,
                       p.data_seed_offset + static_cast<uint64_t>(s), seed});
  return out;
}

Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  Shard s;
  bool ok = slash != std::string::npos && slash > 0 && slash + 1 < text.size();
  if (ok) {
    try {
      size_t a = 0, b = 0;
      const std::string is = text.substr(0, slash), ns = text.substr(slash + 1);
      s.index = std::stoi(is, &a);
      s.count = std::stoi(ns, &b);
      ok = a == is.size() && b == ns.size();
    } catch (const std::exception&) {
      ok = false;
    }
  }
  FK_CHECK(ok && s.count >= 1 && s.count <= 999 && s.index >= 0 && s.index < s.count, "--shard",
           "I/N with 0 <= I < N <= 999", "'" + text + "'");
  return s;
}

std::string shard_filename(const Shard& s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "shard-%03d-of-%03d.json", s.index, s.count);
  return buf;
}

namespace {

// Protocol::fidelity from the first unit's setup of each method, and the
// guard: a matched method is an fk::Error unless allowed.
void record_fidelity(const Instance& inst, const Params& cfg, bool allow, Protocol& p) {
  p.allow_inverse_crime = allow;
  const std::string data = inst.data_tag(cfg);
  p.fidelity["data"] = data;
  const Unit first = units(p).front();
  for (const auto& m : p.methods) {
    const std::optional<ProblemSetup> s =
        inst.setup(detail::unit_params(cfg, first), m, first.data_seed);
    if (!s) continue;  // a direct method
    const std::string tag = s->problem.op ? s->problem.op->fidelity_tag() : "";
    p.fidelity[m] = tag;
    FK_CHECK(allow || tag.empty() || tag != data, "inverse crime (" + m + ")",
             "data drawn by another model than the method's operator (pass "
             "--allow-inverse-crime to benchmark the matched regime)",
             "both tagged '" + tag + "'");
  }
}

}  // namespace

std::map<std::string, std::string> Protocol::regimes() const {
  std::map<std::string, std::string> r;
  const auto data = fidelity.find("data");
  for (const auto& m : methods) {
    const auto f = fidelity.find(m);
    r[m] = f == fidelity.end()                           ? "direct"
           : f->second.empty() || data == fidelity.end() ? "unknown"
           : f->second == data->second                   ? "matched"
                                                         : "cross-fidelity";
  }
  return r;
}

void scale_steps(Params& config, double factor) {
  auto scaled = [&](std::vector<double> steps) {
    for (double& s : steps) s = std::max(1.0, std::round(s * factor));
    return steps;
  };
  // A steps list (one entry per stage), or a total with an optional
  // stage_steps list (thermal_tomography): every count scales alike.
  if (!steps_is_total(config)) {
    config.set_value("steps", scaled(config.list("steps")));
  } else {
    const double n = scaled({static_cast<double>(config.i("steps"))})[0];
    config.set_value("steps", static_cast<int64_t>(n));
    if (config.has("stage_steps"))
      config.set_value("stage_steps", scaled(config.list("stage_steps")));
  }
}

Protocol make_protocol(const CampaignSpec& spec) {
  const bool is_file = is_config_file_target(spec.target);
  RunConfig cfg = is_file ? load_run_config_file(spec.target) : default_run_config(spec.target);
  bool file_methods = false;
  if (is_file) {
    const YAML::Node root = YAML::LoadFile(spec.target);
    file_methods = root["run"] && root["run"]["methods"];
  }
  if (!spec.smoke_config.empty() &&
      !(is_file && std::filesystem::equivalent(spec.smoke_config, spec.target)))
    apply_config_file(cfg, spec.smoke_config);
  for (const auto& s : spec.sets) {
    // What the campaign sets per unit itself: a --set of it would be
    // overwritten without a word (identical rows in a sweep of it).
    std::string key = s.substr(0, s.find('='));
    if (key.rfind("config.", 0) == 0) key = key.substr(7);
    FK_CHECK(key != "scene", "--set " + s, "no scene in a campaign (--classes picks the scenes)",
             "one");
    FK_CHECK(key != "seed" && key != "run.seed", "--set " + s,
             "no seed in a campaign (--seeds gives each unit's)", "one");
    FK_CHECK(key != "run.device", "--set " + s,
             "no device in a campaign (the protocol fixes where its runs train; --batched "
             "--batch-device for a device)",
             "one");
    apply_set(cfg, s);
  }
  // A config file's run.seed too (its run.seed was dropped without a word).
  FK_CHECK(cfg.seed == 0, "run.seed", "no seed in a campaign (--seeds gives each unit's)",
           fk::to_text(cfg.seed));
  FK_CHECK(!cfg.init_seed, "run.init_seed",
           "no init seed in a benchmark (--seeds gives each unit's)",
           fk::to_text(cfg.init_seed.value_or(0)));
  FK_CHECK(cfg.data.empty(), "run.data",
           "no measured dataset in a benchmark (it scores against each scene's ground truth; "
           "nefi run solves a measured dataset)",
           "'" + cfg.data + "'");
  InstancePtr inst = find_instance(cfg.instance);
  Protocol p;
  FK_CHECK(spec.max_total_steps.value_or(0) >= 0, "--smoke-steps", "a step count >= 0 (0: no cap)",
           fk::to_text(spec.max_total_steps.value_or(0)));
  p.max_total_steps = spec.max_total_steps.value_or(cfg.max_total_steps);
  if (spec.batched && spec.batch_device.is_cuda()) p.batch_device = spec.batch_device.str();
  p.instance = inst->name();
  p.methods = !spec.methods.empty() ? spec.methods : file_methods ? cfg.methods : inst->methods();
  FK_CHECK(!p.methods.empty(), "--methods", "at least one method", "none");
  for (auto& m : p.methods) m = canonical_method(*inst, m, "--methods");
  for (const auto& m : p.methods) {
    FK_CHECK(std::count(p.methods.begin(), p.methods.end(), m) == 1, "--methods",
             "each method once", "'" + m + "' twice");
  }
  const bool all = spec.classes.empty() || (spec.classes.size() == 1 && spec.classes[0] == "all");
  p.classes = all ? inst->scenes() : spec.classes;
  for (const auto& c : p.classes) {
    FK_CHECK(contains(inst->scenes(), c), "--classes",
             "scenes of " + p.instance + " (" + join(inst->scenes()) + ") or all", "'" + c + "'");
    FK_CHECK(std::count(p.classes.begin(), p.classes.end(), c) == 1, "--classes", "each class once",
             "'" + c + "' twice");
  }
  FK_CHECK(!p.classes.empty(), "--classes", "at least one class", "none");
  FK_CHECK(spec.n_samples >= 1, "--n", "at least 1 sample per class", fk::to_text(spec.n_samples));
  FK_CHECK(!spec.seeds.empty(), "--seeds", "at least one seed", "none");
  // A seed twice would count its runs twice and narrow the intervals.
  for (size_t i = 0; i < spec.seeds.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      FK_CHECK(spec.seeds[i] != spec.seeds[j], "--seeds", "distinct seeds",
               fk::to_text(spec.seeds[i]) + " twice");
  p.n_samples = spec.n_samples;
  p.seeds = spec.seeds;
  FK_CHECK(std::isfinite(spec.budget_scale) && spec.budget_scale > 0, "--budget-scale",
           "a positive factor", fk::to_text(spec.budget_scale));
  p.budget_scale = spec.budget_scale;
  if (spec.budget_scale != 1.0) {
    FK_CHECK(cfg.config.has("steps"), "--budget-scale", "an instance with a 'steps' config key",
             p.instance + " has none");
    scale_steps(cfg.config, spec.budget_scale);
  }
  for (const auto& e : cfg.config.entries()) p.config.emplace_back(e.key, Params::render(e.value));
  p.nan_guard = cfg.nan_guard;
  p.checkpoint_every = cfg.checkpoint_every;
  p.curriculum = cfg.curriculum;
  p.max_bad_steps = cfg.max_bad_steps;
  record_fidelity(*inst, cfg.config, spec.allow_inverse_crime, p);
  for (const std::string& m : spec.metrics) {
    FK_CHECK(!m.empty(), "--metrics", "metric names", "an empty name");
    if (!contains(p.metrics, m)) p.metrics.push_back(m);
  }
  std::sort(p.metrics.begin(), p.metrics.end());  // the tables' order: shards merge either way
  return p;
}

CurriculumOverrides method_overrides(const Instance& instance, const Protocol& p,
                                     const std::string& method) {
  return method == default_method(instance) ? p.curriculum : CurriculumOverrides{};
}

Curriculum campaign_curriculum(const Instance& instance, const Protocol& p,
                               const std::string& method, const Curriculum& own) {
  return run_curriculum(own, method_overrides(instance, p, method),
                        static_cast<int>(p.max_total_steps));
}

Params protocol_params(const Instance& instance, const Protocol& p) {
  Params params = instance.default_config();
  for (const auto& [k, v] : p.config) params.set(k, v);
  return params;
}

void check_protocol_batch_device(const Protocol& proto, const CampaignOptions& opt) {
  // As make_protocol writes it: the CUDA device batches train on, else "".
  const std::string given = opt.batch_device.is_cuda() ? opt.batch_device.str() : "";
  const bool batched = opt.batch_size > 0;
  if (given == proto.batch_device && (given.empty() || batched)) return;
  throw fk::Error(
      "--batch-device",
      "the protocol's batch device, " + (proto.batch_device.empty()
                                             ? std::string("cpu (no device batches)")
                                             : proto.batch_device + " with --batched"),
      (given.empty() ? std::string("cpu") : given) + (batched ? "" : " without --batched"));
}

std::vector<Row> run_campaign(const Instance& inst, const Protocol& proto,
                              const CampaignOptions& opt) {
  FK_CHECK(opt.shard.count >= 1 && opt.shard.index >= 0 && opt.shard.index < opt.shard.count,
           "shard", "I/N with 0 <= I < N",
           fk::to_text(opt.shard.index) + "/" + fk::to_text(opt.shard.count));
  check_batch_device(opt.batch_device);
  check_protocol_batch_device(proto, opt);
  const Params params = protocol_params(inst, proto);
  std::vector<Unit> mine;
  for (const Unit& u : units(proto))
    if (u.index % opt.shard.count == opt.shard.index) mine.push_back(u);
  if (opt.warmup && !mine.empty()) {
    // One step per stage on this shard's first unit: FFT plans, allocator
    // caches and feature caches exist before the first timed run.
    Params w = params;
    if (steps_is_total(w)) {  // a total over n_stages (thermal_tomography)
      w.set_value("steps", w.has("n_stages") ? std::max<int64_t>(1, w.i("n_stages")) : 1);
      if (w.has("stage_steps"))
        w.set_value("stage_steps", std::vector<double>(w.list("stage_steps").size(), 1.0));
    } else if (w.has("steps")) {
      w.set_value("steps", std::vector<double>(w.list("steps").size(), 1.0));
    }
    std::vector<Row> warm;  // a run that throws is a row with its error
    for (const auto& m : proto.methods) warm.push_back(run_one(inst, w, mine.front(), m, proto));
    check_metric_names(inst, proto, warm);
  }
  // --batched: the methods batch_invert can solve run here, batch by batch.
  std::map<std::pair<int64_t, std::string>, BatchedRow> batched;
  for (const auto& m : proto.methods) {
    if (opt.batch_size <= 0) break;
    if (auto why = batched_method_reason(inst, proto, params, m, mine, opt.batch_device)) {
      if (opt.on_log) opt.on_log("method " + m + " runs sequentially: " + *why);
      continue;
    }
    for (auto& [k, br] :
         run_batched(inst, params, mine, m, proto, opt.batch_size, opt.batch_device))
      batched[{k, m}] = std::move(br);
  }
  std::vector<Row> rows;
  Progress prog;
  prog.total = static_cast<int64_t>(mine.size() * proto.methods.size());
  prog.units_total = static_cast<int64_t>(mine.size());
  const auto t0 = std::chrono::steady_clock::now();
  for (const Unit& u : mine) {
    // Every method of a unit must see the same data (the pairing).
    uint64_t reference = 0;
    std::string first_ok;
    for (const auto& m : proto.methods) {
      uint64_t fp = 0;
      const auto it = batched.find({u.index, m});
      Row r = it != batched.end() ? it->second.row : run_one(inst, params, u, m, proto, &fp);
      if (it != batched.end()) fp = it->second.fingerprint;
      if (r.error.empty() && first_ok.empty()) {
        reference = fp;
        first_ok = m;
      } else if (r.error.empty() && fp != reference) {
        r.metrics.clear();
        r.stop = "failed";
        r.error = "the measurement differs from " + first_ok +
                  "'s (the instance's data generation is not deterministic)";
      }
      keep_metrics(proto, r);
      rows.push_back(std::move(r));
      ++prog.done;
      prog.units_done = prog.done / static_cast<int64_t>(proto.methods.size());
      prog.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (opt.on_progress) opt.on_progress(prog);
    }
  }
  sort_rows(proto, rows);
  return rows;
}

void sort_rows(const Protocol& p, std::vector<Row>& rows) {
  const int64_t ns = static_cast<int64_t>(p.seeds.size());
  auto method_index = [&p](const std::string& m) {
    return std::find(p.methods.begin(), p.methods.end(), m) - p.methods.begin();
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    const auto ka = std::make_tuple(a.unit / ns, method_index(a.method), a.unit % ns);
    const auto kb = std::make_tuple(b.unit / ns, method_index(b.method), b.unit % ns);
    return ka < kb;
  });
}

}  // namespace nefi::bench
