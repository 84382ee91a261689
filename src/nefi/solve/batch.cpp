#include "nefi/solve/batch.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/join.h"
#include "fk/profile.h"
#include "nefi/field/batched_mlp.h"
#include "nefi/field/fourier_features.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/neural_field.h"
#include "nefi/losses/data_losses.h"
#include "nefi/scalar.h"
#include "nefi/solve/batch_blocks.h"
#include "nefi/solve/batch_device.h"
#include "nefi/solve/batch_stages.h"
#include "nefi/solve/final_fields.h"
#include "nefi/solve/fused_optimizer.h"
#include "nefi/solve/split_rows.h"
#include "nefi/solve/weighted_rows.h"

namespace nefi {
namespace {

using detail::Clock;

fk::Dims with_batch(int64_t n, const fk::Dims& shape) {
  std::vector<int64_t> d{n};
  d.insert(d.end(), shape.begin(), shape.end());
  return fk::Dims(d);
}

// What lives for the whole run: the parameter blocks, the per-problem
// bookkeeping that crosses stages, and the outputs.
struct BatchRun : detail::BatchRunState {
  // The MLP's layout; for grid fields only n_params (the current stage's P)
  // and n_out (the channels) are used.
  MlpLayout layout;
  const NeuralField* mlp0;  // the architecture (heads, encoding); null for grid fields
  const GridField* grid0;   // grid fields: problem 0's (heads); else null
  const int64_t chunk;      // problems per fused step (BatchOptions::chunk_size; N when 0)
  // (chunk, P) f32 leaves: problem b is row b % chunk of block b / chunk.
  std::vector<fk::Tensor> blocks;
  int64_t n_blocks() const { return static_cast<int64_t>(blocks.size()); }
  float* param_row(int64_t b) {
    return blocks[b / chunk].data<float>() + (b % chunk) * layout.n_params;
  }
  Clock::time_point t_run = Clock::now();
};

using ProblemStage = detail::BatchProblemStage;

// Grid fields at a stage start: each problem's values move to the stage grid
// as its sequential GridField does (on_stage_start), and the (chunk, P)
// blocks are made anew at the new P.
void regrid(BatchRun& run, const Domain& domain) {
  regrid_fields(
      run.problems, [&](int64_t b) { return run.param_row(b); }, domain);
  run.blocks = blocks_from_fields(run.problems, run.chunk);
  run.layout.n_params = run.problems[0].field->n_parameters();
}

class BatchStage {
 public:
  BatchStage(BatchRun& run, size_t index);
  void run_steps();
  const Domain& domain() const { return domain_; }
  const OperatorPtr& op() const { return op_; }
  const std::vector<ProblemStage>& problems() const { return ps_; }

 private:
  // One block's step values, indexed by the problem's row in the block.
  struct Eval {
    std::vector<fk::Tensor> preds;
    std::vector<double> totals;              // NaN where not evaluated
    std::vector<std::vector<double>> comps;  // per term (0 where its weight is 0)
    std::vector<fk::Tensor> roots;           // per-row totals, or one (n) in shared mode
  };
  Eval evaluate(int t, int64_t block, const ActiveMask& active);
  // Each problem's own LossSet on its rows.
  void losses_per_problem(int t, int64_t block, const ActiveMask& active, const FieldMap& fields,
                          const fk::Tensor& pred, Eval& e);
  // One shared LossSet on the whole block (every problem's set is the same
  // but for its weights, which weigh each problem's row).
  void losses_shared(int64_t block, const FieldMap& fields, const fk::Tensor& pred, Eval& e);
  bool shared_losses() const;
  // Returns the problems of the block that were active.
  int step_block(int t, double lr_t, int64_t block);
  void update(int64_t block, const std::vector<char>& stepped, double lr_t);
  void guard(int64_t b, double total, int t);
  void record(int64_t b, int t, double lr, const std::vector<double>& comps, double total);
  const char* stop_reason(int64_t b, double data, const fk::Tensor& pred);
  float* row(fk::Tensor& t, int64_t b) { return t.data<float>() + b * run_.layout.n_params; }

  BatchRun& run_;
  const int index_;
  const Stage& stage_;
  const Domain domain_;
  const OperatorPtr op_;
  fk::Tensor coords_;
  FourierFeatures enc_;
  OptimizerOptions adam_;
  fk::Tensor m_, v_, good_, shadow_;
  std::vector<ProblemStage> ps_;
  bool shared_ = false;                             // the loss mode of this stage
  std::vector<std::vector<double>> row_weights_;    // shared mode: [term][problem]
  std::vector<fk::Tensor> block_obs_, block_mask_;  // stacked observations (shared mode)
};

BatchStage::BatchStage(BatchRun& run, size_t index)
    : run_(run),
      index_(static_cast<int>(index)),
      stage_(run.cur.stages[index]),
      domain_(run.problems[0].domain.at(detail::stage_shape(stage_, run.problems[0].domain))),
      op_(run.problems[0].op->at_resolution(domain_.shape())),
      coords_(domain_.coords(fk::DType::F32).reshape({domain_.numel(), domain_.ndim()})),
      enc_(batch_features(domain_.ndim(), run.mlp0)) {
  if (run.grid0) regrid(run, domain_);
  adam_ = detail::adam_options(run.cur.optim);
  const fk::Dims pshape{run.n, run.layout.n_params};
  m_ = fk::zeros(pshape, {fk::DType::F32});
  v_ = fk::zeros(pshape, {fk::DType::F32});
  good_ = fk::empty(pshape, {fk::DType::F32});
  for (int64_t b = 0; b < run.n; ++b)
    std::memcpy(row(good_, b), run.param_row(b), run.layout.n_params * sizeof(float));
  if (run.cur.optim.ema) shadow_ = good_.clone();
  ps_.resize(static_cast<size_t>(run.n));
  const fk::Dims out_shape = op_->output_shape(domain_.shape());
  for (int64_t b = 0; b < run.n; ++b) {
    ProblemStage& p = ps_[b];
    p.obs = run.problems[b].measurement.resampled(out_shape);
    p.losses = run.problems[b].losses.with_weights(stage_.loss_weights);
    // At the stage's grid, as the Solver checks: a batched loss without a
    // check of its own (Huber, Poisson NLL) would give an all-zero mask's
    // row a NaN.
    p.losses.check_observations(p.obs, "nefi::batch_invert", "problem " + std::to_string(b));
    p.running = !run.failed[b];
    if (run.failed[b]) p.sr.stop = "failed";
    p.sr.name = stage_.name;
    p.sr.shape = domain_.shape();
  }
  shared_ = run.opt.loss_mode != "loop" && shared_losses();
  FK_CHECK(shared_ || run.opt.loss_mode != "shared", "nefi::batch_invert loss_mode",
           "problems whose loss sets match term by term (batched forms, zero weights in the same "
           "places, masks)",
           "loss_mode shared with differing or unbatchable loss sets");
  if (shared_) {
    std::vector<const LossSet*> sets;
    for (const ProblemStage& p : ps_) sets.push_back(&p.losses);
    row_weights_ = detail::term_row_weights(sets);
  }
  for (int64_t blk = 0; shared_ && blk < run.n_blocks(); ++blk) {
    std::vector<fk::Tensor> obs, mask;
    for (int64_t b = blk * run.chunk; b < std::min(run.n, (blk + 1) * run.chunk); ++b) {
      obs.push_back(ps_[b].obs.data);
      if (ps_[b].obs.mask.defined()) mask.push_back(ps_[b].obs.mask);
    }
    block_obs_.push_back(fk::stack(obs, 0));
    block_mask_.push_back(mask.empty() ? fk::Tensor() : fk::stack(mask, 0));
  }
}

// True when every problem's stage LossSet matches problem 0's term by term:
// zero weights in the same places, and the same batched loss wherever a
// weight is non-zero (whose value may differ per problem: a row weight), with
// masks on all measurements or on none. Checked at every stage start.
bool BatchStage::shared_losses() const {
  std::vector<const LossSet*> sets;
  std::vector<char> masked;
  for (const ProblemStage& p : ps_) {
    sets.push_back(&p.losses);
    masked.push_back(p.obs.mask.defined());
  }
  return detail::loss_sets_match(sets, masked);
}

// Field -> operator -> per-problem losses for the active problems.
BatchStage::Eval BatchStage::evaluate(int t, int64_t block, const ActiveMask& active) {
  const fk::Tensor& params = run_.blocks[block];
  const int64_t n = params.size(0), cells = domain_.numel(), C = run_.layout.n_out;
  fk::Tensor raw2;
  if (run_.grid0) {
    // Row b holds (C, *shape) values: (n, C, cells) -> (n cells, C), the
    // channel-last layout GridField's heads see.
    raw2 = params.reshape({n, C, cells}).transpose(1, 2).contiguous().reshape({n * cells, C});
  } else {
    const fk::Tensor features = enc_.forward(coords_, stage_.progress_at(t));
    raw2 = batched_mlp(params, features, run_.layout, active).reshape({n * cells, C});
  }
  const std::vector<HeadPtr>& heads = run_.mlp0 ? run_.mlp0->heads() : run_.grid0->heads();
  const FieldMap fields =
      apply_heads_rows(heads, raw2, with_batch(n, domain_.shape()), stage_.progress_at(t));
  const fk::Tensor pred = op_->forward(fields);
  Eval e;
  e.totals.assign(static_cast<size_t>(n), std::numeric_limits<double>::quiet_NaN());
  e.comps.resize(static_cast<size_t>(n));
  if (shared_) {
    fk::autograd::NoGradGuard ng;
    e.preds = split_rows(pred.detach());
  }
  if (shared_)
    losses_shared(block, fields, pred, e);
  else
    losses_per_problem(t, block, active, fields, pred, e);
  return e;
}

void BatchStage::losses_per_problem(int t, int64_t block, const ActiveMask& active,
                                    const FieldMap& fields, const fk::Tensor& pred, Eval& e) {
  const int64_t n = pred.size(0), b0 = block * run_.chunk;
  const double progress = stage_.progress_at(t);
  std::map<std::string, std::vector<fk::Tensor>> field_rows;
  for (const auto& [name, f] : fields) field_rows[name] = split_rows(f);
  e.preds = split_rows(pred);
  e.roots.resize(static_cast<size_t>(n));
  for (int64_t b = 0; b < n; ++b) {
    if (!(*active)[b]) continue;
    FieldMap fb;
    for (const auto& [name, rows] : field_rows) fb[name] = rows[b];
    ProblemStage& p = ps_[b0 + b];
    LossContext ctx{&fb, e.preds[b], &p.obs, &domain_, op_.get(), index_, t, progress};
    const LossSet::Value v = p.losses.forward(ctx);
    e.roots[b] = v.total;
    e.totals[b] = scalar_value(v.total);
    for (const auto& c : v.components) e.comps[b].push_back(c.defined() ? scalar_value(c) : 0.0);
  }
}

void BatchStage::losses_shared(int64_t block, const FieldMap& fields, const fk::Tensor& pred,
                               Eval& e) {
  const int64_t n = pred.size(0), b0 = block * run_.chunk;
  BatchLossContext ctx;
  ctx.fields = &fields;
  ctx.pred = pred;
  ctx.obs = block_obs_[block];
  ctx.mask = block_mask_[block];
  for (int64_t b = 0; b < n; ++b) ctx.noise_std.push_back(ps_[b0 + b].obs.noise_std);
  ctx.domain = &domain_;
  std::vector<fk::Tensor> active;
  std::vector<std::vector<double>> weights;  // [active term][row]
  std::vector<std::vector<double>> values;
  bool unit = true;
  for (size_t i = 0; i < row_weights_.size(); ++i) {
    const LossSet::Term& term = ps_[b0].losses.terms()[i];
    if (term.weight == 0.0) {
      values.emplace_back(static_cast<size_t>(n), 0.0);
      continue;
    }
    fk::Tensor c = term.loss->forward_rows(ctx);
    FK_CHECK(c.defined() && c.dim() == 1 && c.size(0) == n, "nefi::batch_invert",
             "per-problem values (" + fk::to_text(n) + ") from loss '" + term.loss->name() + "'",
             c.defined() ? c.shape().str() : "none");
    values.push_back(c.to_vector<double>());
    active.push_back(c);
    weights.emplace_back(row_weights_[i].begin() + b0, row_weights_[i].begin() + b0 + n);
    for (double w : weights.back()) unit = unit && w == 1.0;
  }
  FK_CHECK(!active.empty(), "nefi::batch_invert", "at least one term with a non-zero weight",
           "none");
  const fk::Tensor total =
      (active.size() == 1 && unit) ? active[0] : weighted_rows(active, weights);
  e.roots = {total};
  e.totals = total.to_vector<double>();
  for (int64_t b = 0; b < n; ++b)
    for (const auto& v : values) e.comps[b].push_back(v[b]);
}

// The NaN guard of one problem whose loss was not finite at step t.
void BatchStage::guard(int64_t b, double total, int t) {
  ProblemStage& p = ps_[b];
  if (detail::nan_guard_fails(run_, p, b, total, t, stage_)) return;
  std::memcpy(run_.param_row(b), row(good_, b), run_.layout.n_params * sizeof(float));
  run_.blocks[b / run_.chunk].bump_version();
  p.lr_mult *= 0.5;
  const size_t bytes = static_cast<size_t>(run_.layout.n_params) * sizeof(float);
  std::memset(row(m_, b), 0, bytes);
  std::memset(row(v_, b), 0, bytes);
  p.adam_t = 0;
}

// Per-problem clip factor and Adam(W) step of the problems that stepped.
void BatchStage::update(int64_t block, const std::vector<char>& stepped, double lr_t) {
  fk::profile::OpScope scope("batched_adam_step");
  fk::Tensor& params = run_.blocks[block];
  const fk::Tensor grad = params.grad();
  const int64_t P = run_.layout.n_params, b0 = block * run_.chunk;
  for (int64_t k = 0; k < params.size(0); ++k) {
    if (!stepped[k]) continue;
    const int64_t b = b0 + k;
    const float* g = grad.data<float>() + k * P;
    double sq = 0;
    for (int64_t i = 0; i < P; ++i) sq += static_cast<double>(g[i]) * g[i];
    const double norm = std::sqrt(sq);
    const double clip =
        (adam_.grad_clip > 0 && norm > adam_.grad_clip) ? adam_.grad_clip / (norm + 1e-6) : 1.0;
    ProblemStage& p = ps_[b];
    ++p.adam_t;
    adam_update(run_.param_row(b), g, row(m_, b), row(v_, b), P, p.lr_mult * lr_t, clip, adam_,
                p.adam_t);
  }
  params.bump_version();
  params.set_grad(fk::Tensor());
}

void BatchStage::record(int64_t b, int t, double lr, const std::vector<double>& comps,
                        double total) {
  detail::record_step(run_, ps_[b], b, t, index_, lr, comps, total);
}

// The sequential Solver's stopping rules for one problem (nullptr: go on).
const char* BatchStage::stop_reason(int64_t b, double data, const fk::Tensor& pred) {
  ProblemStage& p = ps_[b];
  if (!run_.opt.stopping_rules || p.progress < 1.0) return nullptr;
  if (detail::early_stop_due(run_, p, data)) return "early_stop";
  if (run_.cur.discrepancy_tau && p.obs.has_noise()) {
    fk::autograd::NoGradGuard ng;
    const double rmse = std::sqrt(masked_mse(pred.detach(), p.obs.data, p.obs.mask).item());
    if (rmse <= *run_.cur.discrepancy_tau * p.obs.noise_std) return "discrepancy";
  }
  return nullptr;
}

// One block's step: its problems' fields, operator call and losses, the
// backward of sum_b L_b, their updates and bookkeeping.
int BatchStage::step_block(int t, double lr_t, int64_t block) {
  const int64_t n = run_.blocks[block].size(0), b0 = block * run_.chunk;
  const int64_t P = run_.layout.n_params;
  auto mask = std::make_shared<std::vector<char>>(n);
  int n_active = 0;
  for (int64_t k = 0; k < n; ++k) n_active += (*mask)[k] = ps_[b0 + k].running;
  if (n_active == 0) return 0;
  Eval e = evaluate(t, block, mask);
  std::vector<char> stepped(n, 0);
  std::vector<fk::Tensor> roots, seeds;
  std::vector<double> seed_rows(static_cast<size_t>(n), 0.0);
  for (int64_t k = 0; k < n; ++k) {
    if (!(*mask)[k]) continue;
    ps_[b0 + k].progress = stage_.progress_at(t);
    if (!std::isfinite(e.totals[k])) continue;
    stepped[k] = 1;
    ps_[b0 + k].bad = 0;
    seed_rows[k] = 1.0;
    if (shared_) continue;
    roots.push_back(e.roots[k]);
    seeds.push_back(make_scalar(1.0, e.roots[k].dtype()));
  }
  if (shared_ && std::count(stepped.begin(), stepped.end(), 1) > 0) {
    // Seed 0 for the rows that do not step: their gradient is zero.
    roots = e.roots;
    seeds = {fk::from_vector(seed_rows, fk::Dims{n}).to(e.roots[0].dtype())};
  }
  if (!roots.empty()) {
    fk::autograd::backward(roots, seeds);  // the objective sum_b L_b
    update(block, stepped, lr_t);
  }
  for (int64_t k = 0; k < n; ++k)
    if ((*mask)[k] && !stepped[k]) guard(b0 + k, e.totals[k], t);
  const std::optional<double> ema = run_.cur.optim.ema;
  for (int64_t k = 0; k < n; ++k) {
    if (!stepped[k]) continue;
    const int64_t b = b0 + k;
    const float* x = run_.param_row(b);
    if (ema) {
      float* sh = row(shadow_, b);
      const float d = static_cast<float>(*ema);
      for (int64_t j = 0; j < P; ++j) sh[j] = d * sh[j] + (1 - d) * x[j];
    }
    if (t % run_.opt.checkpoint_every == 0)
      std::memcpy(row(good_, b), x, static_cast<size_t>(P) * sizeof(float));
    record(b, t, ps_[b].lr_mult * lr_t, e.comps[k], e.totals[k]);
    if (const char* stop = stop_reason(b, ps_[b].sr.final_data_loss, e.preds[k])) {
      ps_[b].sr.stop = stop;
      ps_[b].running = false;
    }
  }
  return n_active;
}

void BatchStage::run_steps() {
  detail::run_stage_steps(run_, stage_, index_, ps_, [this](int t, double lr_t) {
    int n_active = 0;
    for (int64_t block = 0; block < run_.n_blocks(); ++block)
      n_active += step_block(t, lr_t, block);
    return n_active;
  });
  // EMA: the shadow parameters are each problem's result.
  if (run_.cur.optim.ema) {
    const int64_t P = run_.layout.n_params;
    for (int64_t b = 0; b < run_.n; ++b)
      if (!run_.failed[b])
        std::memcpy(run_.param_row(b), row(shadow_, b), static_cast<size_t>(P) * sizeof(float));
    for (auto& blk : run_.blocks) blk.bump_version();
  }
}

// The (chunk, P) leaves: every problem's field initialised from its seed, as
// the sequential Solver does at run start.
std::vector<fk::Tensor> parameter_blocks(std::vector<InverseProblem>& problems,
                                         const BatchOptions& opt, int64_t chunk) {
  for (size_t b = 0; b < problems.size(); ++b)
    problems[b].field->reset_parameters(opt.seeds.empty() ? 0 : opt.seeds[b]);
  return blocks_from_fields(problems, chunk);
}

// The final fields of problem b (Solver::run's tail), its field holding the solution.
void finish(BatchRun& run, int64_t b, const Domain& final_domain, double final_progress) {
  InverseProblem& prob = run.problems[b];
  const OperatorPtr final_op = prob.op->at_resolution(final_domain.shape());
  Result& res = run.results[b];
  Field& field = *prob.field;
  row_to_field(run.param_row(b), field);
  fk::autograd::NoGradGuard ng;
  if (run.grid0) field.on_stage_start(final_domain);  // only_stage: the last stage's grid
  detail::record_final_fields(res, prob, *final_op, final_domain, final_progress);
  detail::record_batch_result(run, b);
}

}  // namespace

std::vector<Result> batch_invert(std::vector<InverseProblem> problems, const Curriculum& cur,
                                 const BatchOptions& opt) {
  cur.validate();
  if (auto why = batchable_reason(problems, cur))
    throw fk::Error("nefi::batch_invert", "batchable problems", *why);
  FK_CHECK(opt.seeds.empty() || opt.seeds.size() == problems.size(), "BatchOptions::seeds",
           "one seed per problem (" + fk::to_text(problems.size()) + ") or none",
           fk::to_text(opt.seeds.size()));
  FK_CHECK(opt.loss_mode == "auto" || opt.loss_mode == "shared" || opt.loss_mode == "loop",
           "BatchOptions::loss_mode", "auto, shared or loop", opt.loss_mode);
  FK_CHECK(opt.chunk_size >= 0, "BatchOptions::chunk_size", "0 (all) or a problem count",
           fk::to_text(opt.chunk_size));
  FK_CHECK(opt.checkpoint_every >= 1, "BatchOptions::checkpoint_every", "a step count >= 1",
           fk::to_text(opt.checkpoint_every));
  // Before any work, on either path: what a stage's losses refuse in a
  // problem's measurement (LossSet::check_observations), named by problem.
  // Each stage checks its own grid's measurement again; area resampling
  // keeps these refusals (a weighted mean of zeros is zero).
  for (size_t b = 0; b < problems.size(); ++b)
    for (const Stage& st : cur.stages)
      problems[b]
          .losses.with_weights(st.loss_weights)
          .check_observations(problems[b].measurement, "nefi::batch_invert",
                              "problem " + std::to_string(b));
  if (!opt.device.is_cpu()) {
    if (auto why = batch_device_reason(problems, cur, opt))
      throw fk::Error("nefi::batch_invert", "problems a device batch supports", *why);
    return detail::batch_invert_device(problems, cur, opt);
  }
  const auto* mlp0 = dynamic_cast<const NeuralField*>(problems[0].field.get());
  const auto* grid0 = dynamic_cast<const GridField*>(problems[0].field.get());
  MlpLayout layout;
  if (mlp0) {
    layout = mlp_layout(*mlp0);
  } else {
    layout.n_params = grid0->n_parameters();
    for (const HeadPtr& h : grid0->heads()) layout.n_out += h->n_in();
  }
  const int64_t n = static_cast<int64_t>(problems.size());
  const int64_t chunk = opt.chunk_size > 0 ? std::min<int64_t>(opt.chunk_size, n) : n;
  BatchRun run{
      {problems, cur, opt}, layout, mlp0, grid0, chunk, parameter_blocks(problems, opt, chunk)};
  for (int64_t b = 0; b < n; ++b)
    run.results[b].history.columns = detail::history_columns(problems[b].losses);
  return detail::run_batch_stages<BatchStage>(
      run, "nefi::batch_invert", [&run](int64_t b, const Domain& domain, double progress) {
        finish(run, b, domain, progress);
      });
}

}  // namespace nefi
