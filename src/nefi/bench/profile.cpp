#include "nefi/bench/profile.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/memory.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "nefi/scalar.h"
#include "nefi/solve/fused_optimizer.h"
#include "nefi/solve/stage_run.h"

namespace nefi::bench {
namespace {

// Tracing is process-wide; never leave it on behind an exception.
struct TracingOff {
  ~TracingOff() { fk::profile::set_tracing(false); }
};

struct StepSample {
  double ms = 0;
  int64_t ops = 0, view_ops = 0, launches = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The bare loop of --minimal on a stage's live objects.
std::vector<StepSample> bare_loop(const StageView& v, int n_untraced, int n_traced) {
  FK_CHECK(v.optim->optimizer != "lbfgs", "nefi profile --minimal", "an Adam(W) curriculum",
           "optimizer lbfgs");
  FusedOptimizer adam(v.params, detail::adam_options(*v.optim));
  std::vector<StepSample> out;
  for (int t = 0; t < n_untraced + n_traced; ++t) {
    if (t == n_untraced) {
      fk::profile::clear_trace();
      fk::profile::set_tracing(true);
    }
    const int64_t t0 = fk::profile::now_ns();
    const fk::profile::Counters c0 = fk::profile::counters();
    const double progress = v.stage->progress_at(t);
    FieldMap fields = v.field->forward(*v.domain, progress);
    const fk::Tensor pred = v.op->forward(fields);
    const LossContext ctx{&fields, pred, v.obs, v.domain, v.op, v.index, t, progress};
    const LossSet::Value val = v.losses->forward(ctx);
    adam.zero_grad();
    val.total.backward(make_scalar(1.0, val.total.dtype()));
    adam.step(v.stage->lr_at(t));
    const fk::profile::Counters& c1 = fk::profile::counters();
    out.push_back({(fk::profile::now_ns() - t0) / 1e6, c1.ops - c0.ops, c1.view_ops - c0.view_ops,
                   c1.launches - c0.launches});
  }
  fk::profile::set_tracing(false);
  return out;
}

// The solver hooks of a profile: on_stage_start checks the stage (and runs
// the bare loop for a minimal profile), on_step records the step samples,
// switches tracing on after the timed steps and ends the stage when done.
struct StageRecorder {
  StageRecorder(const ProfileOptions& o, ProfileReport& r)
      : opt(o), rep(r), timed_end(o.warmup + o.steps) {}
  const ProfileOptions& opt;
  ProfileReport& rep;
  const int timed_end;
  int traced = 0;  // traced steps after the timed ones (fewer when the stage is short)
  bool stage_seen = false;
  int seen = 0;
  std::vector<StepSample> samples;

  void on_stage_start(const StageView& v) {
    stage_seen = true;
    rep.stage = v.index;
    rep.shape = v.domain->shape();
    rep.n_params = v.field->n_parameters();
    if (!opt.minimal)
      FK_CHECK(v.stage->steps >= timed_end, "--warmup + --steps",
               "at most the stage's " + fk::to_text(v.stage->steps) + " steps",
               fk::to_text(timed_end));
    traced = opt.minimal ? opt.steps : std::min(opt.steps, v.stage->steps - timed_end);
    if (!opt.minimal) return;
    fk::reset_peak_memory();
    samples = bare_loop(v, timed_end, traced);
    rep.peak_bytes = fk::memory_stats().peak;
  }

  bool on_step(const StepInfo& s) {
    if (opt.minimal) return false;  // the bare loop has run; end the stage
    const int k = seen++;
    if (k >= timed_end + traced) return false;  // a restart: the profile is complete
    samples.push_back({s.step_ms, s.step_ops, s.step_view_ops, s.step_launches});
    if (k + 1 == timed_end) {
      // The solver reset the peak at the stage start.
      rep.peak_bytes = fk::memory_stats().peak;
      if (traced == 0) return false;
      fk::profile::clear_trace();
      fk::profile::set_tracing(true);
    }
    if (k + 1 == timed_end + traced) {
      fk::profile::set_tracing(false);
      return false;
    }
    return true;
  }
};

ProfileReport start_report(const Instance& inst, const ProfileOptions& opt) {
  FK_CHECK(opt.steps >= 1, "--steps", "at least 1", fk::to_text(opt.steps));
  FK_CHECK(opt.warmup >= 0, "--warmup", "0 or more", fk::to_text(opt.warmup));
  ProfileReport rep;
  rep.instance = inst.name();
  rep.method =
      opt.method.empty() ? inst.methods().front() : canonical_method(inst, opt.method, "--method");
  rep.steps = opt.steps;
  rep.warmup = opt.warmup;
  rep.minimal = opt.minimal;
  rep.device = opt.device.str();
  FK_CHECK(opt.device.is_cpu() || !opt.minimal, "nefi profile --minimal",
           "the CPU (the bare loop is the host's)", opt.device.str());
  rep.threads = fk::get_num_threads();
  return rep;
}

// Median, mean and per-step counters over the timed samples.
void summarise_timed_steps(const std::vector<StepSample>& samples, const ProfileOptions& opt,
                           ProfileReport& rep) {
  std::vector<double> t;
  double ops = 0, views = 0, launches = 0;
  for (int k = opt.warmup; k < opt.warmup + opt.steps; ++k) {
    t.push_back(samples[k].ms);
    ops += samples[k].ops;
    views += samples[k].view_ops;
    launches += samples[k].launches;
  }
  rep.first_ms = samples.front().ms;
  rep.median_ms = median(t);
  rep.mean_ms = std::accumulate(t.begin(), t.end(), 0.0) / t.size();
  rep.ops_per_step = ops / opt.steps;
  rep.view_ops_per_step = views / opt.steps;
  rep.launches_per_step = launches / opt.steps;
}

// The traced steps' op table (their chrome trace kept at opt.trace_path if set).
void add_op_table(const ProfileOptions& opt, int traced, ProfileReport& rep) {
  if (!opt.trace_path.empty()) fk::profile::export_chrome_trace(opt.trace_path);
  for (const fk::profile::EventTotal& t : fk::profile::event_totals())
    rep.ops.push_back({t.name, static_cast<double>(t.calls) / traced, t.self_ms / traced});
  fk::profile::clear_trace();
}

}  // namespace

ProfileReport profile_instance(const Instance& inst, const Params& config,
                               const ProfileOptions& opt) {
  ProfileReport rep = start_report(inst, opt);
  StageRecorder rec(opt, rep);
  TracingOff tracing_off;
  SolverOptions so;
  so.seed = opt.seed;
  so.stopping_rules = false;
  so.only_stage = opt.stage;
  so.device = opt.device;
  so.curriculum = opt.curriculum;
  so.on_stage_start = [&rec](const StageView& v) { rec.on_stage_start(v); };
  so.callbacks.push_back([&rec](const StepInfo& s) { return rec.on_step(s); });
  RunOutput out = inst.run(config, rep.method, opt.seed, so);
  fk::profile::set_tracing(false);
  FK_CHECK(rec.stage_seen && static_cast<int>(rec.samples.size()) >= rec.timed_end, "nefi profile",
           "a method that runs the solver loop",
           rep.method + " ran " + fk::to_text(rec.samples.size()) + " steps");
  rep.n_stages = static_cast<int>(out.curriculum.stages.size());
  summarise_timed_steps(rec.samples, opt, rep);
  if (rec.traced > 0) {
    add_op_table(opt, rec.traced, rep);
    rep.trace_written = opt.trace_path;
  }
  return rep;
}

std::string format_profile(const ProfileReport& r, bool table, int top) {
  std::string shape = fmt::format("{}", fmt::join(r.shape.vec(), "×"));
  std::string s = fmt::format(
      "{} · {} · stage {}/{} ({}) · {} timed steps after {} warm-up · {} thread{}{}{}\n",
      r.instance, r.method, r.stage + 1, r.n_stages, shape, r.steps, r.warmup, r.threads,
      r.threads == 1 ? "" : "s", r.minimal ? " · minimal loop" : "",
      r.device == "cpu" ? "" : " · " + r.device);
  s += fmt::format("  ms/step      median {:.4f}  mean {:.4f}  first step {:.3f}\n", r.median_ms,
                   r.mean_ms, r.first_ms);
  s += fmt::format("  ops/step     {:.1f}  (view ops {:.1f})  launches/step {:.1f}\n",
                   r.ops_per_step, r.view_ops_per_step, r.launches_per_step);
  s += fmt::format("  peak memory  {:.3f} MiB   parameters {}\n", r.peak_bytes / 1048576.0,
                   r.n_params);
  if (r.ops.empty()) return s;
  const size_t n = table ? r.ops.size() : std::min<size_t>(top, r.ops.size());
  s += fmt::format("  {} (traced steps; self time, tracing adds overhead):\n",
                   table ? "ops" : "top ops");
  s += fmt::format("    {:<28} {:>12} {:>11}\n", "op", "ms/step", "calls/step");
  for (size_t i = 0; i < n; ++i)
    s += fmt::format("    {:<28} {:>12.4f} {:>11.2f}\n", r.ops[i].name, r.ops[i].self_ms_per_step,
                     r.ops[i].calls_per_step);
  return s;
}

std::string profile_json_line(const ProfileReport& r, const std::string& config_path,
                              const std::vector<std::string>& overrides) {
  nlohmann::json ops = nlohmann::json::array();
  for (size_t i = 0; i < std::min<size_t>(r.ops.size(), 10); ++i)
    ops.push_back({{"name", r.ops[i].name},
                   {"ms_per_step", r.ops[i].self_ms_per_step},
                   {"calls_per_step", r.ops[i].calls_per_step}});
  const nlohmann::json j{{"instance", r.instance},
                         {"method", r.method},
                         {"config", config_path},
                         {"overrides", overrides},
                         {"stage", r.stage},
                         {"n_stages", r.n_stages},
                         {"shape", r.shape.vec()},
                         {"threads", r.threads},
                         {"steps", r.steps},
                         {"warmup", r.warmup},
                         {"minimal", r.minimal},
                         {"device", r.device},
                         {"ms_per_step_median", r.median_ms},
                         {"ms_per_step_mean", r.mean_ms},
                         {"first_step_ms", r.first_ms},
                         {"ops_per_step", r.ops_per_step},
                         {"view_ops_per_step", r.view_ops_per_step},
                         {"launches_per_step", r.launches_per_step},
                         {"peak_mem_mb", r.peak_bytes / 1048576.0},
                         {"n_params", r.n_params},
                         {"top_ops", ops}};
  return j.dump();
}

}  // namespace nefi::bench
