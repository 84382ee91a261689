#include "nefi/solve/stage_run.h"

#include <cmath>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/interrupt.h"
#include "fk/ops/reduce/sum.h"
#include "fk/profile.h"
#include "fk/sync_debug.h"
#include "nefi/losses/data_losses.h"
#include "nefi/scalar.h"
#include "nefi/solve/adam_device.h"
#include "nefi/solve/device_step_slots.h"
#include "nefi/solve/lr_groups.h"
#include "nefi/solve/parameter_buffers.h"

namespace nefi::detail {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<fk::Tensor> solve_parameters(Field& field, const Operator& op) {
  std::vector<fk::Tensor> params{field.params().flat()};
  for (const auto& p : op.parameters()) params.push_back(p);
  return params;
}

std::vector<std::string> history_columns(const LossSet& losses) {
  std::vector<std::string> c{"step",     "global_step", "stage",    "lr",
                             "progress", "total",       "data_loss"};
  for (const auto& t : losses.terms()) c.push_back(t.loss->name());
  return c;
}

std::optional<size_t> only_stage_index(const std::optional<int>& only, int n_stages) {
  if (!only) return std::nullopt;
  const int k = *only < 0 ? n_stages + *only : *only;
  FK_CHECK(k >= 0 && k < n_stages, "the stage run alone (nefi profile --stage, only_stage)",
           "an index in [" + fk::to_text(-n_stages) + ", " + fk::to_text(n_stages) + ")",
           fk::to_text(*only));
  return static_cast<size_t>(k);
}

fk::Dims stage_shape(const Stage& stage, const Domain& domain) {
  return stage.shape.empty() ? domain.shape() : stage.shape;
}

OptimizerOptions adam_options(const OptimConfig& o) {
  OptimizerOptions ao;
  ao.decoupled = o.optimizer == "adamw";
  ao.weight_decay = o.weight_decay;
  ao.beta1 = o.beta1;
  ao.beta2 = o.beta2;
  ao.eps = o.eps;
  ao.grad_clip = o.grad_clip;
  ao.sgd = o.optimizer == "sgd";
  return ao;
}

namespace {

// The seed of backward: 1 in the total's dtype, on its device.
fk::Tensor unit_seed(const fk::Tensor& total) {
  if (total.device().is_cpu()) return make_scalar(1.0, total.dtype());  // no fill op
  return fk::ones(fk::Dims{}, {total.dtype(), total.device()});
}

// The stage's observations on the solve's device. A device step never reads
// a loss back on its own (it is captured), so what a CPU loss would refuse
// (an all-zero mask, observations without energy, ...) is refused here, on
// the host, once per stage and on every device alike, rather than becoming a
// NaN loss (LossSet::check_observations).
Measurement on_device(Measurement m, const LossSet& stage_losses, fk::Device d) {
  stage_losses.check_observations(m, "nefi::Solver");
  if (m.data.device() != d) m.data = m.data.to(d);
  if (m.mask.defined() && m.mask.device() != d) m.mask = m.mask.to(d);
  return m;
}

std::vector<fk::Tensor> on_host(std::vector<fk::Tensor> ts) {
  for (fk::Tensor& t : ts)
    if (!t.device().is_cpu()) t = t.to(fk::kCPU);
  return ts;
}

// The real dtype the stage's operator is applied in: the field's parameters'.
fk::DType operator_dtype(const Field& field) {
  const fk::Tensor& flat = field.params().flat();
  return flat.defined() ? flat.dtype() : fk::DType::F32;
}

// The field moves to the stage grid before its parameters are read (a grid
// field resamples its buffer).
std::vector<fk::Tensor> start_stage_field(Field& field, const Domain& domain, const Operator& op) {
  field.on_stage_start(domain);
  return solve_parameters(field, op);
}

}  // namespace

StageRun::StageRun(const InverseProblem& problem, const Curriculum& cur, const SolverOptions& opt,
                   size_t index)
    : cur_(cur),
      opt_(opt),
      index_(static_cast<int>(index)),
      stage_(cur.stages[index]),
      domain_(problem.domain.at(stage_shape(stage_, problem.domain))),
      op_(problem.op->at_resolution(domain_.shape())),
      obs_(on_device(problem.measurement.resampled(op_->output_shape(domain_.shape())),
                     problem.losses.with_weights(stage_.loss_weights), opt.device)),
      losses_(problem.losses.with_weights(stage_.loss_weights)),
      field_(*problem.field),
      params_(start_stage_field(field_, domain_, *op_)),
      adam_(params_, adam_options(cur.optim)),
      use_lbfgs_(cur.optim.optimizer == "lbfgs"),
      lbfgs_(cur.optim.lbfgs),
      discrepancy_on_device_(opt.device.is_cuda() && cur.discrepancy_tau && obs_.has_noise()) {
  if (field_.autocast() == fk::DType::F16) scaler_.emplace();
  if (!use_lbfgs_) {  // the parameter groups (lr_mult, the stage's freeze)
    const auto segments = lr_segments(field_, *op_, cur.optim, stage_);
    for (size_t i = 0; i < segments.size(); ++i)
      if (!segments[i].empty()) adam_.set_lr_segments(i, segments[i]);
  }
  if (use_lbfgs_) xh_ = gather(params_, false);
  good_ = snapshot(params_);
  if (cur_.optim.ema) shadow_ = snapshot(params_);
  if (opt_.on_stage_start)
    opt_.on_stage_start(StageView{index_, &stage_, &domain_, &field_, op_.get(), &obs_, &losses_,
                                  &cur_.optim, params_});
  sr_.name = stage_.name;
  sr_.shape = domain_.shape();
  // The operator's device tables exist before the first step: one first made
  // inside a captured step would fail the capture (Operator::prepare_tables).
  op_->prepare_tables(opt_.device, operator_dtype(field_));
  // L-BFGS reads every evaluation back: no step block, no graph.
  if (!opt_.device.is_cuda() || use_lbfgs_) return;
  // The total, every component, and the discrepancy's MSE when it is needed.
  const int gathered = 1 + static_cast<int>(losses_.terms().size()) + discrepancy_on_device_;
  block_ = std::make_unique<DeviceStepBlock>(opt_.device, gathered);
  const std::string refusal = cuda_graph_enabled(opt_.cuda_graph)
                                  ? step_graph_refusal(*op_, opt_.device)
                                  : "NEFI_CUDA_GRAPH=0 or SolverOptions::cuda_graph off";
  graph_ = std::make_unique<StepGraph>(opt_.device, refusal);
}

void StageRun::resume(const Checkpoint& ck, const std::string& path) {
  FK_CHECK(ck.stage == static_cast<int>(index_), "nefi::Solver resume",
           "the checkpoint's own stage " + fk::to_text(ck.stage),
           "stage " + fk::to_text(index_) + " (" + path + ")");
  FK_CHECK(ck.params.size() == params_.size(), "nefi::Solver resume",
           fk::to_text(params_.size()) + " parameter buffers",
           fk::to_text(ck.params.size()) + " in " + path);
  {
    fk::autograd::NoGradGuard ng;
    for (size_t i = 0; i < params_.size(); ++i) {
      FK_CHECK(
          ck.params[i].shape() == params_[i].shape() && ck.params[i].dtype() == params_[i].dtype(),
          "nefi::Solver resume",
          "parameter buffer " + fk::to_text(i) + " " + params_[i].shape().str(),
          ck.params[i].shape().str() + " in " + path);
      params_[i].detach().copy_(ck.params[i]);
    }
  }
  if (!use_lbfgs_ && !ck.adam_m.empty()) adam_.load_state(ck.adam_m, ck.adam_v, ck.adam_steps);
  if (use_lbfgs_) {
    xh_ = gather(params_, false);
    if (ck.lbfgs) {
      lbfgs_.restore(*ck.lbfgs, xh_.size());
      // The iterate in f64; the parameters loaded above hold it rounded.
      FK_CHECK(ck.lbfgs_x.size() == xh_.size(), "nefi::Solver resume",
               "an L-BFGS iterate of " + fk::to_text(xh_.size()) + " values",
               fk::to_text(ck.lbfgs_x.size()) + " in " + path);
      xh_ = ck.lbfgs_x;
    }
  }
  if (scaler_ && ck.loss_scale > 0) scaler_->restore(ck.loss_scale, ck.loss_scale_tracker);
  lr_mult_ = ck.lr_mult;
  t0_ = ck.step + 1;
  progress_ = stage_.progress_at(ck.step);  // what the field ends at if no step is left
  // The stopping state the saved step left; a stage a rule ended there runs
  // no further step (and says why it ended).
  best_ = ck.best_data_loss;
  since_best_ = ck.since_best;
  if (!ck.stop.empty()) {
    t0_ = stage_.steps;
    sr_.stop = ck.stop;
  }
  sr_.final_total = ck.final_total;
  sr_.final_data_loss = ck.final_data_loss;
  before_.steps = ck.stage_steps;
  before_.seconds = ck.stage_seconds;
  before_.ops = ck.stage_ops;
  before_.launches = ck.stage_launches;
  before_.graph_steps = ck.stage_graph_steps;
  sr_.steps = before_.steps;
  good_ = snapshot(params_);
  if (cur_.optim.ema) shadow_ = ck.ema.empty() ? snapshot(params_) : resumed_shadow(ck.ema, path);
}

// The checkpoint's EMA shadow, checked against the parameters and put where
// they are.
std::vector<fk::Tensor> StageRun::resumed_shadow(const std::vector<fk::Tensor>& ema,
                                                 const std::string& path) const {
  FK_CHECK(ema.size() == params_.size(), "nefi::Solver resume",
           fk::to_text(params_.size()) + " EMA shadow buffers",
           fk::to_text(ema.size()) + " in " + path);
  std::vector<fk::Tensor> out;
  for (size_t i = 0; i < ema.size(); ++i) {
    FK_CHECK(ema[i].shape() == params_[i].shape() && ema[i].dtype() == params_[i].dtype(),
             "nefi::Solver resume",
             "EMA shadow buffer " + fk::to_text(i) + " " + params_[i].shape().str(),
             ema[i].shape().str() + " in " + path);
    out.push_back(ema[i].to(params_[i].device()).contiguous());
  }
  return out;
}

// On a device too: each evaluation uploads x into the field's parameters,
// runs the forward, losses and backward there, and reads the total and the
// gradient back (L-BFGS's two-loop recursion and line search are host
// arithmetic on a few vectors; the evaluations are the cost).
void StageRun::lbfgs_step(int t, double lr, StepValue& v) {
  // No NaN guard or clipping here: the line search rejects bad points.
  std::vector<double> evaluated;  // where v.pred and v.val were last computed
  auto objective = [&](const std::vector<double>& x, std::vector<double>& g) {
    evaluated = x;
    scatter(params_, x);
    for (auto& p : params_) p.set_grad(fk::Tensor());
    FieldMap fl = field_.forward(domain_, progress_);
    v.pred = op_->forward(fl);
    LossContext c{&fl, v.pred, &obs_, &domain_, op_.get(), index_, t, progress_};
    v.val = losses_.forward(c);
    v.val.total.backward(unit_seed(v.val.total));
    g = gather(params_, true);
    return scalar_value(v.val.total);
  };
  v.total = lbfgs_.step(objective, xh_, lr);
  scatter(params_, xh_);
  if (evaluated == xh_) return;
  // The line search's last trial was not the point it accepted: the stop
  // and the history read the accepted one.
  fk::autograd::NoGradGuard ng;
  FieldMap fl = field_.forward(domain_, progress_);
  v.pred = op_->forward(fl);
  LossContext c{&fl, v.pred, &obs_, &domain_, op_.get(), index_, t, progress_};
  v.val = losses_.forward(c);
}

bool StageRun::adam_step(int t, double lr, StepValue& v) {
  FieldMap fields = field_.forward(domain_, progress_);
  v.pred = op_->forward(fields);
  LossContext ctx{&fields, v.pred, &obs_, &domain_, op_.get(), index_, t, progress_};
  v.val = losses_.forward(ctx);
  v.total = scalar_value(v.val.total);
  if (non_finite_step(t, v.total)) return false;
  adam_.zero_grad();
  if (scaler_) {
    scaler_->scale(v.val.total).backward();
    std::vector<fk::Tensor> grads;
    for (const auto& p : params_) grads.push_back(p.grad());
    const bool finite = scaler_->unscale_and_check(grads);
    scaler_->update(!finite);
    if (finite) adam_.step(lr);
  } else {
    v.val.total.backward(unit_seed(v.val.total));
    adam_.step(lr);
  }
  return true;
}

std::string persistent_non_finite(const std::string& stage, int64_t max_bad_steps) {
  return "a persistent non-finite loss at stage " + stage + " (more than " +
         fk::to_text(max_bad_steps) +
         " non-finite steps in a row; values past float32's range, such as data whose squares "
         "overflow or underflow it, or a learning rate too large, do this: rescale the data to "
         "order 1 or lower the learning rate)";
}

// The NaN guard: true (the step is skipped) when `total` is not finite.
bool StageRun::non_finite_step(int t, double total) {
  if (std::isfinite(total)) {
    bad_ = 0;
    return false;
  }
  FK_CHECK(opt_.nan_guard, "nefi::Solver", "a finite loss (nan_guard is off)",
           fk::to_text(total) + " at stage " + stage_.name + " step " + fk::to_text(t));
  ++bad_;
  FK_CHECK(bad_ <= opt_.max_bad_steps, "nefi::Solver",
           "a finite loss again within " + fk::to_text(opt_.max_bad_steps) + " steps",
           persistent_non_finite(stage_.name, opt_.max_bad_steps));
  restore(params_, good_);
  lr_mult_ *= 0.5;
  adam_.reset_state();  // new moment buffers: a captured graph would update the old ones
  if (graph_) graph_->invalidate();
  return true;
}

// Everything one device step does, enqueued on the current stream with no
// host read: the inputs' upload, forward, losses, the gather of the scalars,
// backward, the gradient norm and the gated AdamW update, the outputs'
// download. Every tensor it makes dies inside it (a graph replay owns none).
// The step index and progress it hands the losses are the capture's: no
// loss reads the step, one that reads progress (Loss::reads_progress) makes
// step_shape capture anew as it moves, and the field's annealing gate is
// rewritten in place through step_shape.
void StageRun::enqueue_device_step(int t) {
  // The gradients die with the step, also when a capture fails part-way
  // (they would hold memory of the discarded graph).
  struct DropGrads {
    FusedOptimizer& adam;
    ~DropGrads() { adam.zero_grad(); }
  } drop{adam_};
  block_->enqueue_upload();
  FieldMap fields = field_.forward(domain_, progress_);
  fk::Tensor pred = op_->forward(fields);
  LossContext ctx{&fields, pred, &obs_, &domain_, op_.get(), index_, t, progress_};
  LossSet::Value val = losses_.forward(ctx);
  std::vector<fk::Tensor> gathered{val.total};
  gathered.insert(gathered.end(), val.components.begin(), val.components.end());
  if (discrepancy_on_device_) {
    fk::autograd::NoGradGuard ng;
    gathered.push_back(masked_mse(pred.detach(), obs_.data, obs_.mask));
  }
  enqueue_gather_scalars(gathered, block_->device_block() + kSlotGathered);
  adam_.zero_grad();
  val.total.backward(unit_seed(val.total));
  adam_.enqueue_device_step(block_->device_block());
  block_->enqueue_download();
}

// The host-side structure of the next step: the same number while only the
// learning rate and step count change (both are block inputs) and while the
// field's annealing gate can be rewritten in place and no loss reads
// progress.
int64_t StageRun::step_shape() {
  if (progress_ != shape_progress_) {
    // The field keeps its structure while it can retarget in place
    // (Field::retarget); a loss that reads progress needs a new capture.
    if (!field_.retarget(progress_) || losses_.reads_progress()) ++shape_;
    shape_progress_ = progress_;
  }
  return shape_;
}

bool StageRun::device_step(int t, double lr, StepValue& v) {
  block_->set_inputs(adam_.begin_device_step(lr), cur_.optim.grad_clip);
  const int64_t shape = graph_->refused() ? 0 : step_shape();
  {
    // FK_SYNC_DEBUG reports a host read of a device tensor inside the step.
    const fk::DeviceStepScope in_step;
    graph_->run([&] { enqueue_device_step(t); }, shape);
  }
  const double* out = block_->read();  // the step's one host read
  v.total = out[kSlotTotal];
  if (non_finite_step(t, v.total)) return false;
  const size_t n_terms = losses_.terms().size();
  v.components = std::vector<double>(out + kSlotGathered + 1, out + kSlotGathered + 1 + n_terms);
  if (discrepancy_on_device_) v.discrepancy_mse = out[kSlotGathered + 1 + n_terms];
  return true;
}

namespace {
// A loss set's term values as the history records them (0 for an undefined term).
std::vector<double> term_values(const LossSet::Value& val) {
  std::vector<double> out;
  for (const auto& c : val.components) out.push_back(c.defined() ? scalar_value(c) : 0.0);
  return out;
}
}  // namespace

// Appends the step's history row and updates the stage summary; returns the data loss.
double StageRun::record(History& history, int t, int global, double lr, const StepValue& v) {
  const std::vector<double> comps = v.components ? *v.components : term_values(v.val);
  const double data = losses_.data_loss(comps);
  std::vector<double> row{static_cast<double>(t),
                          static_cast<double>(global),
                          static_cast<double>(index_),
                          lr,
                          progress_,
                          v.total,
                          data};
  row.insert(row.end(), comps.begin(), comps.end());
  history.rows.push_back(std::move(row));
  sr_.steps = before_.steps + t + 1 - t0_;  // a resumed stage's count goes on from its checkpoint
  sr_.final_total = v.total;
  sr_.final_data_loss = data;
  return data;
}

void StageRun::save(int t, int global, const std::string& stop, const Result* so_far,
                    double run_seconds) const {
  Checkpoint ck;
  ck.stage = index_;
  ck.step = t;
  ck.global_step = global;
  ck.field_kind = field_.kind();
  ck.run_identity = opt_.run_identity;
  ck.run_identity_text = opt_.run_identity_text;
  ck.stop = stop;
  ck.best_data_loss = best_;
  ck.since_best = since_best_;
  ck.final_total = sr_.final_total;
  ck.final_data_loss = sr_.final_data_loss;
  ck.lr_mult = lr_mult_;
  ck.params = on_host(snapshot(params_));
  if (!use_lbfgs_) {
    ck.adam_m = on_host(adam_.first_moments());
    ck.adam_v = on_host(adam_.second_moments());
    ck.adam_steps = adam_.steps();
  }
  if (cur_.optim.ema) ck.ema = on_host(shadow_);
  if (scaler_) {
    ck.loss_scale = scaler_->scale_value();
    ck.loss_scale_tracker = scaler_->growth_tracker();
  }
  if (use_lbfgs_) {
    ck.lbfgs = lbfgs_.state();
    ck.lbfgs_x = xh_;
  }
  if (so_far) {
    ck.history = so_far->history;
    ck.stages_done = so_far->stages;
  }
  ck.stage_steps = sr_.steps;
  ck.stage_seconds = before_.seconds + seconds_since(t_stage_);
  ck.run_seconds = run_seconds;
  const fk::profile::Counters& c = fk::profile::counters();
  ck.stage_ops = before_.ops + c.ops - c_stage_.ops;
  ck.stage_launches = before_.launches + c.launches - c_stage_.launches;
  ck.stage_graph_steps = before_.graph_steps + (graph_ ? graph_->graph_steps() : 0);
  save_checkpoint(opt_.checkpoint_path, ck);
}

const char* StageRun::stop_reason(const StepInfo& info, const StepValue& v, Clock::time_point t_run,
                                  bool& run_over, const char*& own_stop) {
  // The run's own rules first: their state (early stopping's best and count)
  // moves at every step whatever else ends it, so a checkpoint of a step a
  // callback or the budget ended holds the state an uninterrupted run has.
  own_stop = own_stop_reason(info, v);
  bool keep = true;
  for (const auto& cb : opt_.callbacks) keep = cb(info) && keep;
  if (!keep) return "callback";
  if (!opt_.stopping_rules) return nullptr;
  if (cur_.time_budget_s && seconds_since(t_run) > *cur_.time_budget_s) {
    run_over = true;
    return "time_budget";
  }
  return own_stop;
}

const char* StageRun::own_stop_reason(const StepInfo& info, const StepValue& v) {
  if (!opt_.stopping_rules || progress_ < 1.0) return nullptr;
  if (cur_.early_stop_patience) {
    if (info.data_loss < best_ - cur_.early_stop_min_delta) {
      best_ = info.data_loss;
      since_best_ = 0;
    } else if (++since_best_ >= *cur_.early_stop_patience) {
      return "early_stop";
    }
  }
  if (cur_.discrepancy_tau && obs_.has_noise()) {
    fk::autograd::NoGradGuard ng;
    const double mse = v.discrepancy_mse ? *v.discrepancy_mse
                                         : masked_mse(v.pred.detach(), obs_.data, obs_.mask).item();
    const double rmse = std::sqrt(mse);
    if (rmse <= *cur_.discrepancy_tau * obs_.noise_std) return "discrepancy";
  }
  return nullptr;
}

StageResult StageRun::run(Result& so_far, int& global, int total_steps, Clock::time_point t_run,
                          const Before& before, bool& run_over) {
  fk::profile::ProfileScope prof;
  t_stage_ = Clock::now();
  c_stage_ = fk::profile::counters();
  History& history = so_far.history;
  for (int t = t0_; t < stage_.steps; ++t) {
    fk::poll_interrupt();  // the host's Ctrl-C (fk/interrupt.h)
    const int64_t t_step = fk::profile::now_ns();
    const fk::profile::Counters c_step = fk::profile::counters();
    const double lr = lr_mult_ * stage_.lr_at(t);
    progress_ = stage_.progress_at(t);
    StepValue v;
    if (use_lbfgs_) {
      lbfgs_step(t, lr, v);
    } else if (!(graph_ ? device_step(t, lr, v) : adam_step(t, lr, v))) {
      continue;
    }
    if (cur_.optim.ema) ema_update(shadow_, params_, *cur_.optim.ema);
    // Snapshot after every checkpoint_every-th stage step (0, 25, ...), like the reference.
    if (t % opt_.checkpoint_every == 0) good_ = snapshot(params_);
    const double data = record(history, t, global, lr, v);
    ++global;
    const fk::profile::Counters& c_now = fk::profile::counters();
    const StepInfo info{index_,
                        t,
                        global,
                        stage_.steps,
                        total_steps,
                        lr,
                        progress_,
                        v.total,
                        data,
                        (fk::profile::now_ns() - t_step) / 1e6,
                        c_now.ops - c_step.ops,
                        c_now.view_ops - c_step.view_ops,
                        c_now.launches - c_step.launches,
                        graph_ != nullptr && graph_->last_replayed()};
    // The stop rules first, so a checkpoint holds the state they leave: a
    // resume from it stops where this run stops. A stop saves too (the
    // stage's last step). Early stopping and the discrepancy principle are
    // the run's own: kept, a resume ends the stage there too. A callback or
    // the time budget interrupted the run from outside: kept as "go on".
    const char* own_stop = nullptr;
    const char* stop = stop_reason(info, v, t_run, run_over, own_stop);
    if (!opt_.checkpoint_path.empty() &&
        (t + 1 == stage_.steps || stop ||
         (opt_.checkpoint_interval > 0 && global % opt_.checkpoint_interval == 0)))
      save(t, global, own_stop ? own_stop : "", before.whole ? &so_far : nullptr,
           before.seconds + seconds_since(t_run));
    if (stop) {
      sr_.stop = stop;
      break;
    }
  }
  // A stage whose every step the NaN guard skipped (fewer than max_bad_steps
  // of them) trained nothing: not a completed stage.
  FK_CHECK(sr_.steps > 0 || t0_ > 0 || bad_ == 0, "nefi::Solver",
           "a finite loss on some step of stage " + stage_.name,
           fk::to_text(bad_) +
               " non-finite steps and no other (values past float32's range, such as data whose "
               "squares overflow or underflow it, do this: rescale the data to order 1)");
  sr_.seconds = before_.seconds + seconds_since(t_stage_);
  const auto rep = prof.report();
  sr_.ops = before_.ops + rep.counts.ops;
  sr_.launches = before_.launches + rep.counts.launches;
  if (opt_.device.is_cuda()) {
    sr_.device_note = graph_ ? graph_->note()
                             : "L-BFGS: each evaluation on the device, eager; the two-loop "
                               "recursion and line search on the host";
    // What the operator's device path changed (a substituted setting).
    if (const std::string op_note = op_->device_note(); !op_note.empty())
      sr_.device_note += "; " + op_note;
    if (graph_) sr_.graph_steps = before_.graph_steps + graph_->graph_steps();
  }
  if (cur_.optim.ema) restore(params_, shadow_);
  // A stage that ran to its end is evaluated at the end of its schedule,
  // progress_at(steps) (bands fully open), as in the reference; one that
  // stopped early keeps the progress it was last trained at.
  if (sr_.stop == "completed") progress_ = stage_.progress_at(stage_.steps);
  if (cur_.optim.ema && sr_.steps > 0) {
    // The stage returns the EMA average, not the raw weights its last step
    // recorded: the losses it reports (and restarts compare) are the average's.
    fk::autograd::NoGradGuard ng;
    FieldMap fl = field_.forward(domain_, progress_);
    const fk::Tensor pred = op_->forward(fl);
    LossContext c{&fl, pred, &obs_, &domain_, op_.get(), index_, stage_.steps - 1, progress_};
    const LossSet::Value val = losses_.forward(c);
    sr_.final_total = scalar_value(val.total);
    sr_.final_data_loss = losses_.data_loss(term_values(val));
  }
  sr_.lr_mult = lr_mult_;
  sr_.final_progress = progress_;
  return sr_;
}

}  // namespace nefi::detail
