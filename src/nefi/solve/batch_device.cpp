// batch_invert on a CUDA device (batch.h's header comment): the N neural or
// grid fields' parameters as one (N, P) block on the device, evaluated by one
// grouped MLP (grouped_mlp.h: a strided-batched GEMM per layer) or read as
// values (grid fields: resampled on the host at each stage start), their
// moments and the stacked measurements on the device, one operator call and
// one shared loss set per step, one host read per step. A step only enqueues
// device work (its per-problem scalars come and go through a BatchStepBlock,
// the AdamW update gated on the device), so it is captured once per stage
// as a CUDA graph and replayed (StepGraph, as the Solver's device steps).
#include "nefi/solve/batch_device.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "fk/autograd.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"
#include "fk/profile.h"
#include "fk/sync_debug.h"
#include "nefi/field/fourier_features.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/grouped_mlp.h"
#include "nefi/field/neural_field.h"
#include "nefi/losses/data_losses.h"
#include "nefi/solve/adam_device.h"
#include "nefi/solve/batch_blocks.h"
#include "nefi/solve/batch_stages.h"
#include "nefi/solve/batch_step_block.h"
#include "nefi/solve/device_step_slots.h"
#include "nefi/solve/final_fields.h"
#include "nefi/solve/fused_optimizer.h"
#include "nefi/solve/parameter_buffers.h"
#include "nefi/solve/step_graph.h"

namespace nefi::detail {
namespace {

// One problem's state in a device stage, its measurement (obs) on the device.
using DeviceProblem = BatchProblemStage;

struct DeviceRun : BatchRunState {
  MlpLayout layout;  // grid fields: only n_params (the stage's P) and n_out (channels)
  const NeuralField* mlp0 = nullptr;  // the architecture (heads, encoding); null for grid fields
  const GridField* grid0 = nullptr;   // grid fields: problem 0's (heads); else null
  fk::Tensor params;                  // (N, P) f32 leaf on the device: row b is problem b's
  Clock::time_point t_run = Clock::now();
  const std::vector<HeadPtr>& heads() const { return mlp0 ? mlp0->heads() : grid0->heads(); }
};

// The block's parameters as one (N, P) leaf on the run's device.
fk::Tensor device_block(const std::vector<InverseProblem>& problems, fk::Device device) {
  fk::Tensor params =
      blocks_from_fields(problems, static_cast<int64_t>(problems.size()))[0].detach().to(device);
  params.set_requires_grad(true);
  return params;
}

// Grid fields at a stage start, on the host as the CPU batch's regrid: each
// problem's values move to the stage grid as its sequential GridField does
// (on_stage_start), and the block is made anew at the new P.
void regrid(DeviceRun& run, const Domain& domain) {
  const fk::Tensor host = run.params.detach().to(fk::kCPU).contiguous();
  regrid_fields(
      run.problems, [&](int64_t b) { return host.data<float>() + b * run.layout.n_params; },
      domain);
  run.params = device_block(run.problems, run.opt.device);
  run.layout.n_params = run.problems[0].field->n_parameters();
}

fk::Dims with_batch(int64_t n, const fk::Dims& shape) {
  std::vector<int64_t> d{n};
  d.insert(d.end(), shape.begin(), shape.end());
  return fk::Dims(d);
}

// One stage of the device loop.
class DeviceStage {
 public:
  DeviceStage(DeviceRun& run, size_t index);
  void run_steps();
  const Domain& domain() const { return domain_; }
  const std::vector<DeviceProblem>& problems() const { return ps_; }

 private:
  int step(int t, double lr_t);
  void enqueue_step(double progress, double lr_t);
  void gather(const fk::Tensor& total, const std::vector<fk::Tensor>& terms,
              const fk::Tensor& pred);
  void update(const fk::Tensor& grad, double lr_t);
  int64_t step_shape(double progress);
  void guard(int64_t b, double total, int t);
  // Row b of an (N, P) block (a view).
  static fk::Tensor row(const fk::Tensor& block, int64_t b) { return block.detach().select(0, b); }

  DeviceRun& run_;
  const int index_;
  const Stage& stage_;
  const Domain domain_;
  const OperatorPtr op_;
  const fk::Tensor coords_;  // (cells, ndim) on the host
  FourierFeatures enc_;      // the shared features, kept on the device
  OptimizerOptions adam_;
  fk::Tensor m_, v_, good_;  // (N, P): moments and last good parameters, on the device
  std::vector<DeviceProblem> ps_;
  fk::Tensor obs_, mask_;  // (N, *out_shape) on the device
  // Per term, its weight for each problem, (N) f64 on the device; undefined
  // where every problem's is the same (a scalar then, term.weight).
  std::vector<fk::Tensor> row_weights_;
  std::vector<double> noise_std_;
  bool discrepancy_ = false;  // the rule is on and some measurement has a noise level
  // The step's scalars, then (CUDA) the graph: destroyed first, it restores
  // the device's stream after a sync.
  std::unique_ptr<BatchStepBlock> block_;
  std::unique_ptr<StepGraph> graph_;
  int64_t shape_ = 0;           // bumped when the step's host-side structure changes
  double shape_progress_ = -1;  // the progress step_shape last saw
};

DeviceStage::DeviceStage(DeviceRun& run, size_t index)
    : run_(run),
      index_(static_cast<int>(index)),
      stage_(run.cur.stages[index]),
      domain_(run.problems[0].domain.at(stage_shape(stage_, run.problems[0].domain))),
      op_(run.problems[0].op->at_resolution(domain_.shape())),
      coords_(domain_.coords(fk::DType::F32).reshape({domain_.numel(), domain_.ndim()})),
      enc_(batch_features(domain_.ndim(), run.mlp0)) {
  const fk::Device dev = run.opt.device;
  if (run.grid0) regrid(run, domain_);
  enc_.to(dev);
  // The operator's device tables in the parameters' dtype, as a device Solver makes them.
  op_->prepare_tables(dev, run.params.dtype());
  adam_ = adam_options(run.cur.optim);
  m_ = fk::zeros(run.params.shape(), {run.params.dtype(), dev});
  v_ = fk::zeros(run.params.shape(), {run.params.dtype(), dev});
  good_ = snapshot({run.params})[0];
  const fk::Dims out_shape = op_->output_shape(domain_.shape());
  ps_.resize(static_cast<size_t>(run.n));
  std::vector<fk::Tensor> obs, mask;
  for (int64_t b = 0; b < run.n; ++b) {
    DeviceProblem& p = ps_[b];
    p.obs = run.problems[b].measurement.resampled(out_shape);
    p.losses = run.problems[b].losses.with_weights(stage_.loss_weights);
    // At the stage's grid, on the host, before the upload (as the CPU batch
    // and the Solver check): the device losses would give this problem's
    // row a NaN instead of the CPU's error.
    p.losses.check_observations(p.obs, "nefi::batch_invert (device)",
                                "problem " + std::to_string(b));
    p.obs.data = p.obs.data.to(dev);
    if (p.obs.mask.defined()) p.obs.mask = p.obs.mask.to(dev);
    obs.push_back(p.obs.data);
    if (p.obs.mask.defined()) mask.push_back(p.obs.mask);
    noise_std_.push_back(p.obs.noise_std);
    discrepancy_ = discrepancy_ || (run.cur.discrepancy_tau && p.obs.has_noise());
    p.running = !run.failed[b];
    if (run.failed[b]) p.sr.stop = "failed";
    p.sr.name = stage_.name;
    p.sr.shape = domain_.shape();
  }
  obs_ = fk::stack(obs, 0);
  if (!mask.empty()) mask_ = fk::stack(mask, 0);
  std::vector<const LossSet*> sets;
  for (const DeviceProblem& p : ps_) sets.push_back(&p.losses);
  for (const std::vector<double>& w : term_row_weights(sets))
    row_weights_.push_back(std::all_of(w.begin(), w.end(), [&](double x) { return x == w[0]; })
                               ? fk::Tensor()
                               : fk::from_vector(w, fk::Dims{run.n}, dev));
  const int gathered = 1 + static_cast<int>(ps_[0].losses.terms().size()) + discrepancy_;
  block_ = std::make_unique<BatchStepBlock>(dev, run.n, gathered);
  if (!dev.is_cuda()) return;
  const std::string refusal = cuda_graph_enabled(run.opt.cuda_graph)
                                  ? step_graph_refusal(*op_, dev)
                                  : "NEFI_CUDA_GRAPH=0 or BatchOptions::cuda_graph off";
  graph_ = std::make_unique<StepGraph>(dev, refusal);
}

// The NaN guard of one problem whose loss was not finite at step t (the CPU
// batch's, with device restores).
void DeviceStage::guard(int64_t b, double total, int t) {
  DeviceProblem& p = ps_[b];
  if (nan_guard_fails(run_, p, b, total, t, stage_)) return;
  fk::autograd::NoGradGuard ng;
  row(run_.params, b).copy_(row(good_, b));
  run_.params.bump_version();
  p.lr_mult *= 0.5;
  fk::Tensor m = row(m_, b), v = row(v_, b);
  fk::fill_(m, 0.0);
  fk::fill_(v, 0.0);
  p.adam_t = 0;
}

// Writes the step's outputs into the block's rows: each problem's total
// (NaN-gated: a frozen problem's total divided by its seed 0 is not finite,
// so the gated update leaves it alone and the host skips its row), each
// term's value, (discrepancy) the masked MSE; all f64.
void DeviceStage::gather(const fk::Tensor& total, const std::vector<fk::Tensor>& terms,
                         const fk::Tensor& pred) {
  fk::autograd::NoGradGuard ng;
  const fk::Tensor rows = block_->rows();
  const fk::Tensor seed = block_->seeds();
  rows.select(1, kSlotTotal).copy_(fk::div(total.detach().to(fk::DType::F64), seed));
  int64_t slot = kSlotTotal + 1;
  for (const fk::Tensor& c : terms) {
    fk::Tensor col = rows.select(1, slot++);
    if (c.defined())
      col.copy_(c.detach().to(fk::DType::F64));
    else
      fk::fill_(col, 0.0);
  }
  if (discrepancy_)
    rows.select(1, slot).copy_(
        masked_mse_rows(pred.detach(), obs_, mask_, std::vector<double>(ps_.size(), 1.0))
            .to(fk::DType::F64));
}

// Each problem's squared gradient norm into its row and its AdamW update,
// gated by its row: on the device the gated kernel (the clip factor from the
// norm and threshold, nothing written for a non-finite total); on the CPU the
// same decision on the host and adam_update, the CPU batch's f64 norms.
void DeviceStage::update(const fk::Tensor& grad, double lr_t) {
  const int64_t n = run_.n;
  fk::autograd::NoGradGuard ng;
  for (int64_t b = 0; b < n; ++b) {
    fk::Tensor x = row(run_.params, b), m = row(m_, b), v = row(v_, b);
    const fk::Tensor g = row(grad, b);
    if (run_.opt.device.is_cuda()) {
      enqueue_grad_sq_sum({g}, block_->row(b) + kSlotSqSum);
      adam_update_device_gated(x, g, m, v, block_->row(b));
      continue;
    }
    double* r = block_->mirror_row(b);
    const float* gp = g.data<float>();
    double sq = 0;
    for (int64_t i = 0; i < g.numel(); ++i) sq += static_cast<double>(gp[i]) * gp[i];
    r[kSlotSqSum] = sq;
    if (!std::isfinite(r[kSlotTotal])) continue;
    const double norm = std::sqrt(sq);
    const double clip =
        (adam_.grad_clip > 0 && norm > adam_.grad_clip) ? adam_.grad_clip / (norm + 1e-6) : 1.0;
    const DeviceProblem& p = ps_[b];
    adam_update(x.data<float>(), g.data<float>(), m.data<float>(), v.data<float>(), x.numel(),
                p.lr_mult * lr_t, clip, adam_, p.adam_t + 1);
  }
  run_.params.bump_version();
}

// Everything one step does, enqueued with no host read: the inputs' upload,
// the grouped MLP, heads, operator and shared losses on the whole block, the
// gather of each problem's scalars, one backward of sum_b seed_b L_b, the
// gated updates, the outputs' download. Every tensor it makes dies inside it
// (a graph replay owns none). `progress` is the capture's: the features'
// annealing gate is rewritten in place through step_shape; lr_t only reaches
// the CPU's host update (the device reads its scalars from the block).
void DeviceStage::enqueue_step(double progress, double lr_t) {
  // The gradient dies with the step, also when a capture fails part-way.
  struct DropGrad {
    fk::Tensor& params;
    ~DropGrad() { params.set_grad(fk::Tensor()); }
  } drop{run_.params};
  const int64_t n = run_.n;
  block_->enqueue_upload();
  // Every field is evaluated (a frozen one's row gets a zero seed, so no
  // gradient): the block keeps its (N, *shape) layout.
  const int64_t cells = domain_.numel(), C = run_.layout.n_out;
  fk::Tensor raw;
  if (run_.grid0) {
    // Row b holds (C, *shape) values: (n, C, cells) -> (n cells, C), the
    // channel-last layout GridField's heads see.
    raw = run_.params.reshape({n, C, cells}).transpose(1, 2).contiguous().reshape({n * cells, C});
  } else {
    const fk::Tensor features = enc_.forward(coords_, progress);
    raw = grouped_mlp(run_.params, features, run_.layout).reshape({n * cells, C});
  }
  FieldMap fields = apply_heads_rows(run_.heads(), raw, with_batch(n, domain_.shape()), progress);
  const fk::Tensor pred = op_->forward(fields);
  BatchLossContext ctx;
  ctx.fields = &fields;
  ctx.pred = pred;
  ctx.obs = obs_;
  ctx.mask = mask_;
  ctx.noise_std = noise_std_;
  ctx.domain = &domain_;
  std::vector<fk::Tensor> values;  // per term, undefined where its weight is 0
  fk::Tensor total;
  const std::vector<LossSet::Term>& terms = ps_[0].losses.terms();
  for (size_t i = 0; i < terms.size(); ++i) {
    const LossSet::Term& term = terms[i];
    if (term.weight == 0.0) {
      values.emplace_back();
      continue;
    }
    fk::Tensor c = term.loss->forward_rows(ctx);
    FK_CHECK(c.defined() && c.dim() == 1 && c.size(0) == n, "nefi::batch_invert (device)",
             "per-problem values (" + fk::to_text(n) + ") from loss '" + term.loss->name() + "'",
             c.defined() ? c.shape().str() : "none");
    values.push_back(c);
    const fk::Tensor wc = row_weights_[i].defined() ? fk::mul(c, row_weights_[i].to(c.dtype()))
                          : term.weight == 1.0      ? c
                                                    : fk::mul(c, term.weight);
    total = total.defined() ? fk::add(total, wc) : wc;
  }
  FK_CHECK(total.defined(), "nefi::batch_invert (device)",
           "at least one term with a non-zero weight", "none");
  gather(total, values, pred);
  run_.params.set_grad(fk::Tensor());
  fk::Tensor seed;
  {
    fk::autograd::NoGradGuard ng;
    seed = block_->seeds().to(total.dtype());
  }
  fk::autograd::backward({total}, {seed});
  const fk::Tensor grad = run_.params.grad();
  if (grad.defined()) update(grad, lr_t);
  block_->enqueue_download();
}

// The host-side structure of the next step: the same number while only the
// per-problem scalars change (block inputs) and while the features'
// annealing gate can be rewritten in place (grid values have none).
int64_t DeviceStage::step_shape(double progress) {
  if (progress != shape_progress_) {
    if ((run_.mlp0 && !enc_.retarget(progress)) || heads_read_progress(run_.heads())) ++shape_;
    shape_progress_ = progress;
  }
  return shape_;
}

// One step of every running problem; returns how many ran.
int DeviceStage::step(int t, double lr_t) {
  const int64_t n = run_.n;
  int n_active = 0;
  for (int64_t b = 0; b < n; ++b) {
    DeviceProblem& p = ps_[b];
    n_active += p.running;
    // The update a finite step makes: step count adam_t + 1 (counted below).
    block_->set_inputs(b, adam_scalars(p.lr_mult * lr_t, 1.0, adam_, p.adam_t + 1), adam_.grad_clip,
                       p.running);
  }
  if (n_active == 0) return 0;
  const double progress = stage_.progress_at(t);
  {
    // FK_SYNC_DEBUG reports a host read of a device tensor inside the step.
    const fk::DeviceStepScope in_step;
    if (graph_)
      graph_->run([&] { enqueue_step(progress, lr_t); },
                  graph_->refused() ? 0 : step_shape(progress));
    else
      enqueue_step(progress, lr_t);
  }
  const double* out = block_->read();  // the step's one host read
  const fk::DeviceStepScope in_step;
  const size_t n_terms = ps_[0].losses.terms().size();
  for (int64_t b = 0; b < n; ++b) {
    DeviceProblem& p = ps_[b];
    if (!p.running) continue;
    const double* r = out + b * block_->width();
    p.progress = progress;
    const double tot = r[kSlotTotal];
    if (!std::isfinite(tot)) {
      guard(b, tot, t);  // the gated update wrote nothing
      continue;
    }
    p.bad = 0;
    ++p.adam_t;
    if (t % run_.opt.checkpoint_every == 0) {
      fk::autograd::NoGradGuard ng;
      row(good_, b).copy_(row(run_.params, b));
    }
    const std::vector<double> comps(r + kSlotTotal + 1, r + kSlotTotal + 1 + n_terms);
    record_step(run_, p, b, t, index_, p.lr_mult * lr_t, comps, tot);
    const double data = p.sr.final_data_loss;
    // The sequential Solver's stopping rules.
    if (!run_.opt.stopping_rules || p.progress < 1.0) continue;
    const char* stop = early_stop_due(run_, p, data) ? "early_stop" : nullptr;
    if (!stop && discrepancy_ && p.obs.has_noise() &&
        std::sqrt(r[kSlotTotal + 1 + n_terms]) <= *run_.cur.discrepancy_tau * p.obs.noise_std)
      stop = "discrepancy";
    if (stop) {
      p.sr.stop = stop;
      p.running = false;
    }
  }
  return n_active;
}

void DeviceStage::run_steps() {
  run_stage_steps(run_, stage_, index_, ps_, [this](int t, double lr_t) { return step(t, lr_t); });
  if (!graph_) return;
  // How the stage's steps ran (CUDA graph replays, or why they ran eagerly),
  // as a Solver's device stage reports it.
  std::string note = graph_->note();
  if (const std::string op_note = op_->device_note(); !op_note.empty()) note += "; " + op_note;
  for (DeviceProblem& p : ps_) {
    p.sr.device_note = note;
    p.sr.graph_steps = graph_->graph_steps();
  }
}

}  // namespace

std::vector<Result> batch_invert_device(std::vector<InverseProblem>& problems,
                                        const Curriculum& cur, const BatchOptions& opt) {
  // Before any field is reset or moved: a device this process cannot use.
  FK_CHECK(opt.device.is_cpu() || opt.device.index < fk::cuda::device_count(),
           "nefi::batch_invert (device)",
           "cpu or a usable CUDA device (" + fk::to_text(fk::cuda::device_count()) + " here)",
           opt.device.str());
  const int64_t n = static_cast<int64_t>(problems.size());
  DeviceRun run{{problems, cur, opt}, {}, nullptr, nullptr, {}};
  run.mlp0 = dynamic_cast<const NeuralField*>(problems[0].field.get());
  run.grid0 = dynamic_cast<const GridField*>(problems[0].field.get());
  if (run.mlp0) {
    run.layout = mlp_layout(*run.mlp0);
  } else {
    run.layout.n_params = run.grid0->n_parameters();
    for (const HeadPtr& h : run.grid0->heads()) run.layout.n_out += h->n_in();
  }
  for (int64_t b = 0; b < n; ++b) {
    problems[b].field->reset_parameters(opt.seeds.empty() ? 0 : opt.seeds[b]);
    run.results[b].history.columns = history_columns(problems[b].losses);
    run.results[b].device = opt.device.str();
  }
  // The fields stay on the host; their parameters train as one block.
  run.params = device_block(problems, opt.device);
  fk::Tensor host_params;  // the trained block, read back once
  return run_batch_stages<DeviceStage>(
      run, "nefi::batch_invert (device)",
      [&](int64_t b, const Domain& final_domain, double final_progress) {
        InverseProblem& prob = problems[b];
        if (!host_params.defined()) host_params = run.params.detach().to(fk::kCPU).contiguous();
        row_to_field(host_params.data<float>() + b * run.layout.n_params, *prob.field);
        fk::autograd::NoGradGuard ng;
        if (run.grid0) prob.field->on_stage_start(final_domain);  // only_stage: the last grid
        const OperatorPtr final_op = prob.op->at_resolution(final_domain.shape());
        record_final_fields(run.results[b], prob, *final_op, final_domain, final_progress);
        record_batch_result(run, b);
      });
}

}  // namespace nefi::detail
