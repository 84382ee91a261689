#include "nefi/solve/solver.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "fk/amp.h"
#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/losses/data_losses.h"
#include "nefi/scalar.h"
#include "nefi/solve/adam.h"
#include "nefi/solve/checkpoint.h"
#include "nefi/solve/lbfgs.h"

namespace nefi {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<fk::Tensor> snapshot(const std::vector<fk::Tensor>& params) {
  fk::autograd::NoGradGuard ng;
  std::vector<fk::Tensor> s;
  for (const auto& p : params) s.push_back(p.detach().clone());
  return s;
}

void restore(std::vector<fk::Tensor>& params, const std::vector<fk::Tensor>& snap) {
  fk::autograd::NoGradGuard ng;
  for (size_t i = 0; i < params.size(); ++i) {
    fk::Tensor d = params[i].detach();
    d.copy_(snap[i]);
  }
}

// shadow <- decay * shadow + (1 - decay) * p, in one pass per buffer.
void ema_update(std::vector<fk::Tensor>& shadow, const std::vector<fk::Tensor>& params,
                double decay) {
  for (size_t i = 0; i < params.size(); ++i) {
    fk::profile::OpScope scope("ema_update");
    const int64_t n = params[i].numel();
    if (params[i].dtype() == fk::DType::F64) {
      double* s = shadow[i].data<double>();
      const double* p = params[i].data<double>();
      for (int64_t j = 0; j < n; ++j) s[j] = decay * s[j] + (1 - decay) * p[j];
    } else {
      float* s = shadow[i].data<float>();
      const float* p = params[i].data<float>();
      const float d = static_cast<float>(decay);
      for (int64_t j = 0; j < n; ++j) s[j] = d * s[j] + (1 - d) * p[j];
    }
  }
}

// Host copies of the trainable parameters for L-BFGS (one flat vector).
std::vector<double> gather(const std::vector<fk::Tensor>& params, bool grads) {
  std::vector<double> out;
  for (const auto& p : params) {
    const fk::Tensor t = grads ? p.grad() : p;
    if (!t.defined()) {
      out.insert(out.end(), static_cast<size_t>(p.numel()), 0.0);
      continue;
    }
    const auto v = t.to_vector<double>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

void scatter(std::vector<fk::Tensor>& params, const std::vector<double>& x) {
  fk::autograd::NoGradGuard ng;
  size_t off = 0;
  for (auto& p : params) {
    const auto n = static_cast<size_t>(p.numel());
    std::vector<double> seg(x.begin() + off, x.begin() + off + n);
    fk::Tensor d = p.detach();
    d.copy_(fk::from_vector(seg, p.shape()));
    off += n;
  }
}

}  // namespace

Solver::Solver(InverseProblem problem, Curriculum curriculum, SolverOptions options)
    : problem_(std::move(problem)), cur_(std::move(curriculum)), opt_(std::move(options)) {
  FK_CHECK(problem_.field && problem_.op, "nefi::Solver", "a problem with a field and an operator",
           "a missing one");
  FK_CHECK(problem_.measurement.data.defined(), "nefi::Solver", "a measurement", "none");
  cur_.validate();
  FK_CHECK(opt_.checkpoint_every >= 1, "SolverOptions::checkpoint_every", "a step count >= 1",
           std::to_string(opt_.checkpoint_every));
  FK_CHECK(opt_.checkpoint_interval >= 0, "SolverOptions::checkpoint_interval", "a step count >= 0",
           std::to_string(opt_.checkpoint_interval));
  FK_CHECK(!(cur_.optim.optimizer == "lbfgs" && problem_.field->autocast() == fk::DType::F16),
           "nefi::Solver", "L-BFGS without fp16 autocast (its line search needs unscaled losses)",
           "optimizer lbfgs with autocast fp16");
}

struct Solver::Attempt {
  Result res;  // history and stage summaries
  Domain final_domain;
  double final_progress = 1.0;
  OperatorPtr final_op;
  bool run_over = false;
  std::vector<fk::Tensor> params;  // snapshot at the end (restarts only)
};

Result Solver::run() {
  const auto t_run = Clock::now();
  Attempt best;
  int best_r = 0;
  double best_loss = std::numeric_limits<double>::infinity();
  const uint64_t base_seed = opt_.init_seed.value_or(opt_.seed);
  for (int r = 0; r < cur_.restarts; ++r) {
    Attempt a = run_once(base_seed + r, r == 0, t_run);
    const double loss = a.res.stages.empty() ? std::numeric_limits<double>::infinity()
                                             : a.res.stages.back().final_data_loss;
    const bool over = a.run_over;
    if (r == 0 || loss < best_loss) {
      best_loss = loss;
      best_r = r;
      best = std::move(a);
    }
    if (over) break;
  }
  Field& field = *problem_.field;
  if (cur_.restarts > 1) {
    std::vector<fk::Tensor> params{field.params().flat()};
    for (const auto& p : best.final_op->parameters()) params.push_back(p);
    restore(params, best.params);
  }
  Result res = std::move(best.res);
  res.seed = base_seed + best_r;
  res.restart = best_r;
  const Domain final_domain = best.final_domain;
  const double final_progress = best.final_progress;
  const OperatorPtr final_op = best.final_op;
  fk::autograd::NoGradGuard ng;
  FieldMap fields = field.forward(final_domain, final_progress);
  res.prediction = final_op->forward(fields).detach();
  for (auto& [k, v] : fields) res.raw_fields[k] = v.detach().contiguous();
  res.fields = res.raw_fields;
  const Measurement final_obs = problem_.measurement.resampled(res.prediction.shape());
  for (const auto& post : problem_.postprocess)
    for (const auto& [k, v] : post->apply(res.fields, res.prediction, final_obs))
      res.post_info[k] = v;
  res.n_parameters = field.n_parameters();
  res.total_s = seconds_since(t_run);
  return res;
}

Solver::Attempt Solver::run_once(uint64_t seed, bool first, Clock::time_point t_run) {
  Attempt at;
  Result& res = at.res;
  Field& field = *problem_.field;
  field.reset_parameters(seed);
  res.history.columns = {"step", "global_step", "stage", "lr", "progress", "total", "data_loss"};
  for (const auto& t : problem_.losses.terms()) res.history.columns.push_back(t.loss->name());
  const int total_steps = cur_.total_steps();
  int global = 0;
  bool& run_over = at.run_over;
  at.final_domain = problem_.domain;
  at.final_op = problem_.op;
  // A resume applies to the first attempt only (restarts re-seed from scratch).
  std::optional<Checkpoint> resume;
  if (!opt_.resume_from.empty() && first) {
    resume = load_checkpoint(opt_.resume_from);
    FK_CHECK(resume->field_kind == field.kind(), "nefi::Solver resume",
             "a checkpoint of a '" + field.kind() + "' field",
             "one of a '" + resume->field_kind + "' field (" + opt_.resume_from + ")");
    FK_CHECK(resume->stage >= 0 && static_cast<size_t>(resume->stage) < cur_.stages.size() &&
                 resume->step < cur_.stages[resume->stage].steps,
             "nefi::Solver resume", "a position inside this curriculum",
             "stage " + std::to_string(resume->stage) + " step " + std::to_string(resume->step));
    global = resume->global_step;
  }

  const int n_stages = static_cast<int>(cur_.stages.size());
  std::optional<size_t> only;
  if (opt_.only_stage) {
    const int k = *opt_.only_stage < 0 ? n_stages + *opt_.only_stage : *opt_.only_stage;
    FK_CHECK(k >= 0 && k < n_stages, "nefi::Solver stage",
             "an index in [" + std::to_string(-n_stages) + ", " + std::to_string(n_stages) + ")",
             std::to_string(*opt_.only_stage));
    only = static_cast<size_t>(k);
  }
  for (size_t si = 0; si < cur_.stages.size() && !run_over; ++si) {
    if (resume && static_cast<int>(si) < resume->stage) continue;
    if (only && si != *only) continue;
    const Stage& stage = cur_.stages[si];
    const fk::Dims shape = stage.shape.empty() ? problem_.domain.shape() : stage.shape;
    const Domain sd = problem_.domain.at(shape);
    OperatorPtr op = problem_.op->at_resolution(shape);
    const Measurement obs = problem_.measurement.resampled(op->output_shape(shape));
    field.on_stage_start(sd);
    const LossSet losses = problem_.losses.with_weights(stage.loss_weights);
    std::vector<fk::Tensor> params{field.params().flat()};
    for (const auto& p : op->parameters()) params.push_back(p);
    AdamOptions ao;
    ao.decoupled = cur_.optim.optimizer == "adamw";
    ao.weight_decay = cur_.optim.weight_decay;
    ao.beta1 = cur_.optim.beta1;
    ao.beta2 = cur_.optim.beta2;
    ao.eps = cur_.optim.eps;
    ao.grad_clip = cur_.optim.grad_clip;
    FusedAdam adam(params, ao);
    // f16 trunks: dynamic loss scaling so small gradients survive the f16 backward.
    std::optional<fk::amp::GradScaler> scaler;
    if (field.autocast() == fk::DType::F16) scaler.emplace();
    const bool use_lbfgs = cur_.optim.optimizer == "lbfgs";
    Lbfgs lbfgs(cur_.optim.lbfgs_history, cur_.optim.lbfgs_max_iter);
    std::vector<double> xh;
    if (use_lbfgs) xh = gather(params, false);
    std::vector<fk::Tensor> good = snapshot(params);
    std::vector<fk::Tensor> shadow;
    if (cur_.optim.ema) shadow = snapshot(params);

    if (opt_.on_stage_start)
      opt_.on_stage_start(StageView{static_cast<int>(si), &stage, &sd, &field, op.get(), &obs,
                                    &losses, &cur_.optim, params});
    StageResult sr;
    sr.name = stage.name;
    sr.shape = shape;
    double lr_mult = 1.0, best = std::numeric_limits<double>::infinity(), progress = 0;
    int since_best = 0, bad = 0, t0 = 0;
    if (resume) {
      FK_CHECK(resume->params.size() == params.size(), "nefi::Solver resume",
               std::to_string(params.size()) + " parameter buffers",
               std::to_string(resume->params.size()) + " in " + opt_.resume_from);
      fk::autograd::NoGradGuard ng;
      for (size_t i = 0; i < params.size(); ++i) {
        FK_CHECK(resume->params[i].shape() == params[i].shape() &&
                     resume->params[i].dtype() == params[i].dtype(),
                 "nefi::Solver resume",
                 "parameter buffer " + std::to_string(i) + " " + params[i].shape().str(),
                 resume->params[i].shape().str() + " in " + opt_.resume_from);
        params[i].detach().copy_(resume->params[i]);
      }
      if (!use_lbfgs && !resume->adam_m.empty())
        adam.load_state(resume->adam_m, resume->adam_v, resume->adam_steps);
      if (use_lbfgs) xh = gather(params, false);
      lr_mult = resume->lr_mult;
      t0 = resume->step + 1;
      progress = stage.progress_at(resume->step);  // what the field ends at if no step is left
      good = snapshot(params);
      if (cur_.optim.ema) shadow = snapshot(params);
      resume.reset();
    }
    auto save = [&](int t) {
      Checkpoint ck;
      ck.stage = static_cast<int>(si);
      ck.step = t;
      ck.global_step = global;
      ck.field_kind = field.kind();
      ck.lr_mult = lr_mult;
      ck.params = snapshot(params);
      if (!use_lbfgs) {
        ck.adam_m = adam.first_moments();
        ck.adam_v = adam.second_moments();
        ck.adam_steps = adam.steps();
      }
      save_checkpoint(opt_.checkpoint_path, ck);
    };
    fk::profile::ProfileScope prof;
    const auto t_stage = Clock::now();
    for (int t = t0; t < stage.steps; ++t) {
      const int64_t t_step = fk::profile::now_ns();
      const fk::profile::Counters c_step = fk::profile::counters();
      const double lr = lr_mult * stage.lr_at(t);
      progress = stage.progress_at(t);
      fk::Tensor pred;
      LossSet::Value val;
      double total = 0;
      if (use_lbfgs) {
        // No NaN guard or clipping here: the line search rejects bad points.
        auto objective = [&](const std::vector<double>& x, std::vector<double>& g) {
          scatter(params, x);
          for (auto& p : params) p.set_grad(fk::Tensor());
          FieldMap fl = field.forward(sd, progress);
          pred = op->forward(fl);
          LossContext c{&fl, pred, &obs, &sd, op.get(), static_cast<int>(si), t, progress};
          val = losses.forward(c);
          val.total.backward(make_scalar(1.0, val.total.dtype()));
          g = gather(params, true);
          return scalar_value(val.total);
        };
        total = lbfgs.step(objective, xh, lr);
      } else {
        FieldMap fields = field.forward(sd, progress);
        pred = op->forward(fields);
        LossContext ctx{&fields, pred, &obs, &sd, op.get(), static_cast<int>(si), t, progress};
        val = losses.forward(ctx);
        total = scalar_value(val.total);
        if (!std::isfinite(total)) {
          FK_CHECK(
              opt_.nan_guard, "nefi::Solver", "a finite loss (nan_guard is off)",
              std::to_string(total) + " at stage " + stage.name + " step " + std::to_string(t));
          ++bad;
          FK_CHECK(bad <= opt_.max_bad_steps, "nefi::Solver",
                   "at most " + std::to_string(opt_.max_bad_steps) + " non-finite steps in a row",
                   "a persistent non-finite loss at stage " + stage.name);
          restore(params, good);
          lr_mult *= 0.5;
          adam.reset_state();
          continue;
        }
        bad = 0;
        adam.zero_grad();
        if (scaler) {
          scaler->scale(val.total).backward();
          std::vector<fk::Tensor> grads;
          for (const auto& p : params) grads.push_back(p.grad());
          const bool finite = scaler->unscale_and_check(grads);
          scaler->update(!finite);
          if (finite) adam.step(lr);
        } else {
          val.total.backward(make_scalar(1.0, val.total.dtype()));  // no fill op for the seed
          adam.step(lr);
        }
      }
      if (cur_.optim.ema) ema_update(shadow, params, *cur_.optim.ema);
      // Snapshot after every checkpoint_every-th stage step (0, 25, ...), like the reference.
      if (t % opt_.checkpoint_every == 0) good = snapshot(params);

      std::vector<double> comps;
      for (const auto& c : val.components) comps.push_back(c.defined() ? scalar_value(c) : 0.0);
      const double data = losses.data_loss(comps);
      std::vector<double> row{static_cast<double>(t),
                              static_cast<double>(global),
                              static_cast<double>(si),
                              lr,
                              progress,
                              total,
                              data};
      row.insert(row.end(), comps.begin(), comps.end());
      res.history.rows.push_back(std::move(row));
      ++global;
      sr.steps = t + 1;
      sr.final_total = total;
      sr.final_data_loss = data;
      if (!opt_.checkpoint_path.empty() &&
          (t + 1 == stage.steps ||
           (opt_.checkpoint_interval > 0 && global % opt_.checkpoint_interval == 0)))
        save(t);

      const fk::profile::Counters& c_now = fk::profile::counters();
      StepInfo info{static_cast<int>(si),
                    t,
                    global,
                    stage.steps,
                    total_steps,
                    lr,
                    progress,
                    total,
                    data,
                    (fk::profile::now_ns() - t_step) / 1e6,
                    c_now.ops - c_step.ops,
                    c_now.view_ops - c_step.view_ops,
                    c_now.launches - c_step.launches};
      bool keep = true;
      for (const auto& cb : opt_.callbacks) keep = cb(info) && keep;
      if (!keep) {
        sr.stop = "callback";
        break;
      }
      if (!opt_.stopping_rules) continue;
      if (cur_.time_budget_s && seconds_since(t_run) > *cur_.time_budget_s) {
        sr.stop = "time_budget";
        run_over = true;
        break;
      }
      if (progress < 1.0) continue;
      if (cur_.early_stop_patience) {
        if (data < best - cur_.early_stop_min_delta) {
          best = data;
          since_best = 0;
        } else if (++since_best >= *cur_.early_stop_patience) {
          sr.stop = "early_stop";
          break;
        }
      }
      if (cur_.discrepancy_tau && obs.has_noise()) {
        fk::autograd::NoGradGuard ng;
        const double rmse = std::sqrt(masked_mse(pred.detach(), obs.data, obs.mask).item());
        if (rmse <= *cur_.discrepancy_tau * obs.noise_std) {
          sr.stop = "discrepancy";
          break;
        }
      }
    }
    sr.seconds = seconds_since(t_stage);
    const auto rep = prof.report();
    sr.ops = rep.counts.ops;
    sr.launches = rep.counts.launches;
    if (cur_.optim.ema) restore(params, shadow);
    // A stage that ran to its end is evaluated at the end of its schedule,
    // progress_at(steps) (bands fully open), as in the reference; one that
    // stopped early keeps the progress it was last trained at.
    if (sr.stop == "completed") progress = stage.progress_at(stage.steps);
    sr.lr_mult = lr_mult;
    sr.final_progress = progress;
    res.stages.push_back(sr);
    at.final_domain = sd;
    at.final_progress = progress;
    at.final_op = op;
  }
  if (only && *only + 1 != cur_.stages.size()) {
    // One early stage run alone: the result still lives on the curriculum's
    // final grid, where the instances compare it with their ground truth.
    const Stage& last = cur_.stages.back();
    const fk::Dims shape = last.shape.empty() ? problem_.domain.shape() : last.shape;
    at.final_domain = problem_.domain.at(shape);
    at.final_op = problem_.op->at_resolution(shape);
  }
  if (cur_.restarts > 1) {
    std::vector<fk::Tensor> ps{field.params().flat()};
    for (const auto& p : at.final_op->parameters()) ps.push_back(p);
    at.params = snapshot(ps);
  }
  return at;
}

}  // namespace nefi
