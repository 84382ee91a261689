#include "nefi/solve/solver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fk/amp.h"
#include "fk/error.h"
#include "nefi/solve/checkpoint.h"
#include "nefi/solve/final_fields.h"
#include "nefi/solve/lr_groups.h"
#include "nefi/solve/parameter_buffers.h"
#include "nefi/solve/stage_run.h"

namespace nefi {
namespace {

// Whether every value of these parameters (on any device) is finite.
bool all_finite(const std::vector<fk::Tensor>& params) {
  return std::all_of(params.begin(), params.end(),
                     [](const fk::Tensor& p) { return fk::amp::all_finite(p); });
}

using detail::Clock;
using detail::history_columns;
using detail::only_stage_index;
using detail::restore;
using detail::seconds_since;
using detail::snapshot;
using detail::solve_parameters;
using detail::stage_shape;
using detail::StageRun;

// The lines of config text `now` that `then` lacks, each beside then's line
// of the same key (keys qualified by the sections they sit in, as a config
// file nests them): "config.lr: 0.03 (was 0.01)"; at most four, then "...".
std::string config_changes(const std::string& then, const std::string& now) {
  const auto keyed = [](const std::string& text) {
    std::vector<std::pair<std::string, std::string>> out;  // (a.b.key, value)
    std::vector<std::pair<size_t, std::string>> open;      // the enclosing headers
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      const size_t colon = line.find(':');
      const size_t indent = line.find_first_not_of(' ');
      if (colon == std::string::npos || indent == std::string::npos || indent > colon) continue;
      const std::string key = line.substr(indent, colon - indent);
      std::string value = line.substr(colon + 1);
      value.erase(0, std::min(value.size(), value.find_first_not_of(' ')));
      while (!open.empty() && open.back().first >= indent) open.pop_back();
      std::string path;
      for (const auto& h : open) path += h.second + ".";
      if (value.empty()) {  // a section's header
        open.emplace_back(indent, key);
        continue;
      }
      out.emplace_back(path + key, value);
    }
    return out;
  };
  const auto before = keyed(then), after = keyed(now);
  std::map<std::string, std::string> was(before.begin(), before.end());
  std::vector<std::string> changes;
  for (const auto& [k, v] : after) {
    const auto w = was.find(k);
    if (w == was.end())
      changes.push_back(k + ": " + v + " (new)");
    else if (w->second != v)
      changes.push_back(k + ": " + v + " (was " + w->second + ")");
  }
  const std::map<std::string, std::string> is(after.begin(), after.end());
  for (const auto& [k, v] : before)
    if (!is.count(k)) changes.push_back(k + " (gone; was " + v + ")");
  std::string out;
  for (size_t i = 0; i < changes.size() && i < 4; ++i) out += (i ? "; " : "") + changes[i];
  return changes.size() > 4 ? out + "; ..." : out;
}

// The checkpoint a run continues from, checked against this field and curriculum.
Checkpoint checkpoint_to_resume(const std::string& path, const Field& field, const Curriculum& cur,
                                const std::string& identity, const std::string& identity_text) {
  Checkpoint ck = load_checkpoint(path);
  std::string changed;
  if (!identity_text.empty() && !ck.run_identity_text.empty())
    changed = identity_text == ck.run_identity_text
                  ? "the measured data's bytes (run.data, run.mask)"  // the one part not shown
                  : config_changes(ck.run_identity_text, identity_text);
  FK_CHECK(identity.empty() || ck.run_identity.empty() || ck.run_identity == identity,
           "nefi::Solver resume",
           "a checkpoint this run wrote (run " + identity + ": the same config, seed and data)",
           "one of run " + ck.run_identity + " (" + path +
               (changed.empty() ? "" : "; changed since: " + changed) + ")");
  FK_CHECK(ck.field_kind == field.kind(), "nefi::Solver resume",
           "a checkpoint of a '" + field.kind() + "' field",
           "one of a '" + ck.field_kind + "' field (" + path + ")");
  FK_CHECK(ck.stage >= 0 && static_cast<size_t>(ck.stage) < cur.stages.size() &&
               ck.step < cur.stages[ck.stage].steps,
           "nefi::Solver resume", "a position inside this curriculum",
           "stage " + fk::to_text(ck.stage) + " step " + fk::to_text(ck.step));
  return ck;
}

}  // namespace

Solver::Solver(InverseProblem problem, Curriculum curriculum, SolverOptions options)
    : problem_(std::move(problem)), cur_(std::move(curriculum)), opt_(std::move(options)) {
  FK_CHECK(problem_.field && problem_.op, "nefi::Solver", "a problem with a field and an operator",
           "a missing one");
  FK_CHECK(problem_.measurement.data.defined(), "nefi::Solver", "a measurement", "none");
  cur_.validate();
  FK_CHECK(opt_.checkpoint_every >= 1, "SolverOptions::checkpoint_every", "a step count >= 1",
           fk::to_text(opt_.checkpoint_every));
  FK_CHECK(opt_.checkpoint_interval >= 0, "SolverOptions::checkpoint_interval", "a step count >= 0",
           fk::to_text(opt_.checkpoint_interval));
  // A checkpoint holds one attempt's stage and step: with restarts it would
  // say nothing of which seed wrote it; run alone, a stage has no place in
  // the run the checkpoint came from.
  FK_CHECK(opt_.resume_from.empty() || (cur_.restarts <= 1 && !opt_.only_stage),
           "nefi::Solver resume",
           "a run of one attempt and every stage (no restarts, no only_stage)",
           fk::to_text(cur_.restarts) + " restarts" + (opt_.only_stage ? ", only_stage" : ""));
  // Each attempt overwrote the one file, which then held the last attempt,
  // not the kept one, and a resume of it was refused: the saving was lost.
  FK_CHECK(opt_.checkpoint_path.empty() || cur_.restarts <= 1, "nefi::Solver checkpoints",
           "a run of one attempt (checkpoints hold one; restarts 1)",
           fk::to_text(cur_.restarts) + " restarts");
  FK_CHECK(!(cur_.optim.optimizer == "lbfgs" && problem_.field->autocast() == fk::DType::F16),
           "nefi::Solver", "L-BFGS without fp16 autocast (its line search needs unscaled losses)",
           "optimizer lbfgs with autocast fp16");
  // Every stage's parameter groups before the first step (a typo in the last
  // stage's freeze list is not found hours into a run).
  check_lr_groups(*problem_.field, *problem_.op, cur_.optim, cur_.stages);
  if (opt_.device.is_cpu()) return;
  const char* where = "nefi::Solver (device)";
  FK_CHECK(problem_.field->has_device_path(), where,
           "a field with a device path (every kind nefi makes has one; a field of your own "
           "overrides Field::has_device_path and to)",
           "a " + problem_.field->kind() + " field");
  // Before any step: a host-only operator would otherwise fail on its first
  // mixed-device operand, deep inside a loss, with no word of which part is CPU-only.
  const std::string op_refusal = device_solve_refusal(*problem_.op, opt_.device);
  FK_CHECK(op_refusal.empty(), where, "an operator with a device path", op_refusal);
  // A coarse stage's operator may differ in kind (a model kept on its grid
  // sees a coarse field through a host-side prolongation).
  for (const Stage& s : cur_.stages) {
    const fk::Dims shape = stage_shape(s, problem_.domain);
    if (shape == problem_.domain.shape()) continue;
    const std::string r = device_solve_refusal(*problem_.op->at_resolution(shape), opt_.device);
    FK_CHECK(r.empty(), where, "an operator with a device path at every stage's grid",
             "stage '" + s.name + "' (" + shape.str() + "): " + r);
  }
  FK_CHECK(cur_.optim.optimizer != "sgd", where,
           "optimizer adam, adamw or lbfgs (SGD has no device step)", cur_.optim.optimizer);
  std::string groups = cur_.optim.lr_mult.empty() ? "" : "optim.lr_mult";
  for (const Stage& s : cur_.stages)
    if (!s.freeze.empty() && groups.find("freeze") == std::string::npos)
      groups += std::string(groups.empty() ? "" : " and ") + "stage '" + s.name + "' freeze";
  FK_CHECK(groups.empty(), where,
           "one learning rate for every parameter (lr_mult and freeze are CPU only)", groups);
  FK_CHECK(!cur_.optim.ema, where, "no EMA (its shadow update is a host loop)", "optim.ema set");
  FK_CHECK(problem_.field->autocast() != fk::DType::F16, where,
           "no fp16 autocast (loss scaling is not wired for a device solve)", "autocast fp16");
}

struct Solver::Attempt {
  Result res;  // history and stage summaries
  Domain final_domain;
  double final_progress = 1.0;
  OperatorPtr final_op;
  bool run_over = false;
  std::vector<fk::Tensor> params;   // snapshot at the end (restarts only)
  detail::StageRun::Before before;  // a resumed run's earlier part
};

Result Solver::run() {
  const auto t_run = Clock::now();
  Attempt best;
  int best_r = 0;
  double best_loss = std::numeric_limits<double>::infinity();
  size_t best_reached = 0;  // stages the best attempt began
  const uint64_t base_seed = opt_.init_seed.value_or(opt_.seed);
  Field& field = *problem_.field;
  auto to_host = [&] {
    field.to(fk::kCPU);
    problem_.op->parameters_to(fk::kCPU);
  };
  try {
    if (opt_.device.is_cuda()) {
      field.to(opt_.device);
      // Trainable operator parameters (device_solve_refusal let only movable ones through).
      problem_.op->parameters_to(opt_.device);
    }
    for (int r = 0; r < cur_.restarts; ++r) {
      Attempt a = run_once(base_seed + r, r == 0, t_run);
      double loss = a.res.stages.empty() ? std::numeric_limits<double>::infinity()
                                         : a.res.stages.back().final_data_loss;
      // An attempt whose last update diverged loses to any finite one.
      if (cur_.restarts > 1 && !all_finite(a.params))
        loss = std::numeric_limits<double>::infinity();
      const bool over = a.run_over;
      // An attempt the time budget cut short in an earlier stage was scored
      // there, on a coarser grid's averaged data, where losses are lower: it
      // is not compared by loss with one that got further (and loses to it).
      const size_t reached = std::isfinite(loss) ? a.res.stages.size() : 0;
      if (r == 0 || reached > best_reached || (reached == best_reached && loss < best_loss)) {
        best_loss = loss;
        best_reached = reached;
        best_r = r;
        best = std::move(a);
      }
      if (over) break;
    }
    if (cur_.restarts > 1) {
      // The last attempt may have ended on another grid than the best one
      // (cut short by the time budget): a grid field goes back to the best's.
      field.on_stage_start(best.final_domain);
      std::vector<fk::Tensor> params = solve_parameters(field, *best.final_op);
      restore(params, best.params);
    }
  } catch (...) {
    // The field and the operator's parameters go back where the caller left
    // them; a failure of that move (a broken device) leaves the first error.
    if (opt_.device.is_cuda()) {
      try {
        to_host();
      } catch (...) {
      }
    }
    throw;
  }
  if (opt_.device.is_cuda()) to_host();
  Result res = std::move(best.res);
  res.seed = base_seed + best_r;
  res.restart = best_r;
  res.device = opt_.device.str();
  const Domain final_domain = best.final_domain;
  const double final_progress = best.final_progress;
  const OperatorPtr final_op = best.final_op;
  detail::record_final_fields(res, problem_, *final_op, final_domain, final_progress);
  if (opt_.refuse_non_finite) {
    const std::string bad = detail::non_finite_field(res);
    FK_CHECK(bad.empty(), "nefi::Solver",
             "finite fields at the end of the solve (the last step's update diverged: a smaller "
             "lr)",
             bad + " after " + fk::to_text(res.total_steps()) + " steps");
  }
  res.total_s = best.before.seconds + seconds_since(t_run);
  return res;
}

Solver::Attempt Solver::run_once(uint64_t seed, bool first, Clock::time_point t_run) {
  Attempt at;
  Field& field = *problem_.field;
  field.reset_parameters(seed);
  at.res.history.columns = history_columns(problem_.losses);
  at.final_domain = problem_.domain;
  at.final_op = problem_.op;
  // A resume applies to the first attempt only (restarts re-seed from scratch).
  std::optional<Checkpoint> resume;
  if (!opt_.resume_from.empty() && first)
    resume = checkpoint_to_resume(opt_.resume_from, field, cur_, opt_.run_identity,
                                  opt_.run_identity_text);
  int global = resume ? resume->global_step : 0;
  if (resume && !resume->history) at.before.whole = false;  // an older file: no run so far
  if (resume && resume->history) {
    // The run so far: the resumed run reports it whole.
    FK_CHECK(resume->history->columns == at.res.history.columns, "nefi::Solver resume",
             fmt::format("a history of this run's columns ({})",
                         fmt::join(at.res.history.columns, ", ")),
             fmt::format("{} ({})", fmt::join(resume->history->columns, ", "), opt_.resume_from));
    at.res.history.rows = std::move(resume->history->rows);
    at.res.stages = std::move(resume->stages_done);
    at.before.seconds = resume->run_seconds;
  }
  const std::optional<size_t> only =
      only_stage_index(opt_.only_stage, static_cast<int>(cur_.stages.size()));
  if (only) at.before.whole = false;  // a stage alone: the stages before it never ran
  std::optional<size_t> last_run;     // the index of the last stage that ran
  for (size_t si = 0; si < cur_.stages.size() && !at.run_over; ++si) {
    if (resume && static_cast<int>(si) < resume->stage) continue;
    if (only && si != *only) continue;
    last_run = si;
    StageRun stage(problem_, cur_, opt_, si);
    if (resume) {
      stage.resume(*resume, opt_.resume_from);
      resume.reset();
    }
    at.res.stages.push_back(
        stage.run(at.res, global, cur_.total_steps(), t_run, at.before, at.run_over));
    at.final_domain = stage.domain();
    at.final_progress = stage.progress();
    at.final_op = stage.op();
  }
  if (last_run && *last_run + 1 != cur_.stages.size()) {
    // An early stage run alone, or a run a time budget stopped in an early
    // stage: the result still lives on the curriculum's final grid, where
    // the data and the instances' ground truth are.
    at.final_domain = problem_.domain.at(stage_shape(cur_.stages.back(), problem_.domain));
    at.final_op = problem_.op->at_resolution(at.final_domain.shape());
    field.on_stage_start(at.final_domain);  // a grid field's values resampled to it
  }
  if (cur_.restarts > 1) at.params = snapshot(solve_parameters(field, *at.final_op));
  return at;
}

}  // namespace nefi
