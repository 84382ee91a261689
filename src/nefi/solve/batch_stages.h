#pragma once
// What batch_invert's CPU loop (batch.cpp) and device loop (batch_device.cpp)
// do alike: the run's and a problem's stage state (each loop extends them),
// and templates over the loop's run, stage and problem types: the stage
// sequence (only_stage, the final fields' domain and progress, the
// failed-problems check), a stage's step loop and timings, the NaN guard's
// verdict, a step's history row and the early-stop rule. Both loops share
// them so that they stay the sequential Solver's rules.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fk/error.h"
#include "fk/interrupt.h"
#include "fk/profile.h"
#include "nefi/solve/batch_device.h"
#include "nefi/solve/final_fields.h"
#include "nefi/solve/stage_run.h"

namespace nefi::detail {

// What a batch run keeps across its stages, whichever loop steps it: the
// problems, their failures, global step counts and results, and whether the
// time budget ended the run (each loop keeps its own start time, t_run).
struct BatchRunState {
  BatchRunState(std::vector<InverseProblem>& ps, const Curriculum& c, const BatchOptions& o)
      : problems(ps),
        cur(c),
        opt(o),
        n(static_cast<int64_t>(ps.size())),
        failed(n, 0),
        errors(n),
        global(n, 0),
        results(n) {}
  std::vector<InverseProblem>& problems;
  const Curriculum& cur;
  const BatchOptions& opt;
  const int64_t n;
  std::vector<char> failed;
  std::vector<std::string> errors;
  std::vector<int> global;
  std::vector<Result> results;
  bool run_over = false;
};

// One problem's state inside a stage: the sequential Solver's bookkeeping
// (Adam's step count, the NaN guard's lr multiplier and bad steps, the
// early-stop best) and its stage result.
struct BatchProblemStage {
  Measurement obs;
  LossSet losses;
  int64_t adam_t = 0;
  double lr_mult = 1.0, progress = 0.0;
  int bad = 0;
  double best = std::numeric_limits<double>::infinity();
  int since_best = 0;
  bool running = true;
  StageResult sr;
};

// Steps stage `index` until no problem runs, on_step says stop or the run's
// time budget is spent (run.run_over then); `step(t, lr_t)` steps the running
// problems and returns how many ran. Then each problem's stage result gets
// the batch's timings per problem (what one solve costs inside it), its
// progress and its lr multiplier.
template <class Run, class Problem, class StepFn>
void run_stage_steps(Run& run, const Stage& stage, int index, std::vector<Problem>& ps,
                     StepFn&& step) {
  fk::profile::ProfileScope prof;
  const auto t_stage = Clock::now();
  const int64_t n = run.n;
  bool cut_short = false;  // on_step or the time budget ended the stage
  for (int t = 0; t < stage.steps; ++t) {
    fk::poll_interrupt();  // the host's Ctrl-C (fk/interrupt.h)
    const int64_t t_step = fk::profile::now_ns();
    const fk::profile::Counters c_step = fk::profile::counters();
    const int n_active = step(t, stage.lr_at(t));
    if (n_active == 0) break;
    const fk::profile::Counters& c_now = fk::profile::counters();
    const BatchStepInfo info{index, t, n_active, (fk::profile::now_ns() - t_step) / 1e6,
                             c_now.ops - c_step.ops};
    bool keep = !run.opt.on_step || run.opt.on_step(info);
    if (run.opt.stopping_rules && run.cur.time_budget_s &&
        seconds_since(run.t_run) > *run.cur.time_budget_s) {
      run.run_over = true;
      for (auto& p : ps)
        if (p.running) p.sr.stop = "time_budget";
      keep = false;
    }
    if (!keep) {
      cut_short = t + 1 < stage.steps;  // after the last step the stage is whole
      break;
    }
  }
  const double secs = seconds_since(t_stage);
  const auto rep = prof.report();
  for (size_t b = 0; b < ps.size(); ++b) {
    Problem& p = ps[b];
    // As the sequential Solver: a stage whose every step the NaN guard
    // skipped (fewer than max_bad_steps of them) trained nothing; it fails
    // the problem rather than handing back its untrained start. A stage cut
    // short (its time budget, on_step) is not judged: alone, the problem
    // would have gone on stepping.
    if (!cut_short && !run.failed[b] && p.sr.steps == 0 && p.bad > 0) {
      run.failed[b] = 1;
      run.errors[b] = "a finite loss on some step of stage " + stage.name + ": " +
                      std::to_string(p.bad) +
                      " non-finite steps and no other (values past float32's range, such as "
                      "data whose squares overflow or underflow it, do this: rescale the data to "
                      "order 1)";
      p.running = false;
      p.sr.stop = "failed";
    }
    p.sr.seconds = secs / static_cast<double>(n);
    p.sr.ops = rep.counts.ops / n;
    p.sr.launches = rep.counts.launches / n;
    if (p.sr.stop == "completed") p.progress = stage.progress_at(stage.steps);
    p.sr.lr_mult = p.lr_mult;
    p.sr.final_progress = p.progress;
  }
}

// Runs the curriculum's stages (only_stage: that one alone) as StageT(run,
// index) and run_steps(), then finishes each problem b with
// `finish(b, final_domain, final_progress_b)`; with raise_on_error a failed
// problem throws (named `who`). Returns the results.
template <class StageT, class Run, class Finish>
std::vector<Result> run_batch_stages(Run& run, const char* who, Finish&& finish) {
  const Curriculum& cur = run.cur;
  const std::vector<InverseProblem>& problems = run.problems;
  const int64_t n = run.n;
  const std::optional<size_t> only =
      only_stage_index(run.opt.only_stage, static_cast<int>(cur.stages.size()));
  Domain final_domain = problems[0].domain;
  std::vector<double> final_progress(n, 1.0);
  std::optional<size_t> last_run;  // the index of the last stage that ran
  for (size_t si = 0; si < cur.stages.size() && !run.run_over; ++si) {
    if (only && si != *only) continue;
    last_run = si;
    StageT stage(run, si);
    stage.run_steps();
    for (int64_t b = 0; b < n; ++b) {
      run.results[b].stages.push_back(stage.problems()[b].sr);
      final_progress[b] = stage.problems()[b].progress;
    }
    final_domain = stage.domain();
  }
  if (last_run && *last_run + 1 != cur.stages.size()) {
    // An early stage alone, or a time budget spent in one: the results live
    // on the final grid (as Solver's).
    const Stage& last = cur.stages.back();
    final_domain = problems[0].domain.at(stage_shape(last, problems[0].domain));
  }
  std::string failed_list;
  for (int64_t b = 0; b < n; ++b) {
    finish(b, final_domain, final_progress[b]);
    if (run.failed[b]) failed_list += (failed_list.empty() ? "" : ", ") + std::to_string(b);
  }
  // Every problem's share of the whole run, finishing included: read once
  // after the loop (read inside it, each index's share grew by its finish).
  const double share = seconds_since(run.t_run) / static_cast<double>(n);
  for (Result& r : run.results) r.total_s = share;
  FK_CHECK(failed_list.empty() || !run.opt.raise_on_error, who, "every problem solved",
           "problem(s) [" + failed_list +
               "] failed: " + run.errors[std::stoul(failed_list.substr(0, failed_list.find(',')))]);
  return std::move(run.results);
}

// The batch's part of problem b's result, after its final fields (its
// total_s is set once every problem is finished: run_batch_stages).
template <class Run>
void record_batch_result(Run& run, int64_t b) {
  Result& res = run.results[b];
  res.seed = run.opt.seeds.empty() ? 0 : run.opt.seeds[b];
  res.batch_size = static_cast<int>(run.n);
  if (!run.failed[b]) {  // a last update that diverged fails the problem, as a solve's does
    const std::string bad = non_finite_field(res);
    if (!bad.empty()) {
      run.failed[b] = 1;
      run.errors[b] = bad + " at the end of the solve (the last step's update diverged)";
      if (!res.stages.empty()) res.stages.back().stop = "failed";
    }
  }
  res.error = run.errors[b];
}

// The NaN guard for problem b, whose loss `total` was not finite at step t:
// true (b marked failed, with why) when nan_guard is off or b has had more
// than max_bad_steps non-finite steps in a row; false: the caller restores
// b's last good parameters.
template <class Run, class Problem>
bool nan_guard_fails(Run& run, Problem& p, int64_t b, double total, int t, const Stage& stage) {
  std::string why;
  if (!run.opt.nan_guard)
    why = "a non-finite loss " + std::to_string(total) + " at stage " + stage.name + " step " +
          std::to_string(t) + " (nan_guard is off)";
  else if (++p.bad > run.opt.max_bad_steps)
    why = persistent_non_finite(stage.name, run.opt.max_bad_steps);
  if (why.empty()) return false;
  run.failed[b] = 1;
  run.errors[b] = why;
  p.running = false;
  p.sr.stop = "failed";
  return true;
}

// Problem b's history row for step t of stage `index` at learning rate lr,
// and its stage result's step count and final losses.
template <class Run, class Problem>
void record_step(Run& run, Problem& p, int64_t b, int t, int index, double lr,
                 const std::vector<double>& comps, double total) {
  const double data = p.losses.data_loss(comps);
  std::vector<double> r{static_cast<double>(t),
                        static_cast<double>(run.global[b]),
                        static_cast<double>(index),
                        lr,
                        p.progress,
                        total,
                        data};
  r.insert(r.end(), comps.begin(), comps.end());
  run.results[b].history.rows.push_back(std::move(r));
  p.sr.steps = t + 1;
  p.sr.final_total = total;
  p.sr.final_data_loss = data;
  ++run.global[b];
}

// The sequential Solver's early-stop rule on a problem's data loss (its
// caller checks stopping_rules and full progress first).
template <class Run, class Problem>
bool early_stop_due(const Run& run, Problem& p, double data) {
  if (!run.cur.early_stop_patience) return false;
  if (data < p.best - run.cur.early_stop_min_delta) {
    p.best = data;
    p.since_best = 0;
    return false;
  }
  return ++p.since_best >= *run.cur.early_stop_patience;
}

}  // namespace nefi::detail
