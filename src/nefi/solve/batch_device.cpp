// batch_invert on a CUDA device (batch.h's header comment): the N neural
// fields' parameters as one (N, P) block on the device, evaluated by one
// grouped MLP (grouped_mlp.h: a strided-batched GEMM per layer), their
// moments and the stacked measurements on the device, one operator call and
// one shared loss set per step, one host read per step.
#include "nefi/solve/batch_device.h"

#include <chrono>
#include <cmath>
#include <limits>

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
#include "nefi/field/grouped_mlp.h"
#include "nefi/field/neural_field.h"
#include "nefi/losses/data_losses.h"
#include "nefi/solve/adam.h"
#include "nefi/solve/adam_device.h"
#include "nefi/solve/batch_blocks.h"
#include "nefi/solve/batch_stages.h"
#include "nefi/solve/final_fields.h"
#include "nefi/solve/parameter_buffers.h"

namespace nefi::detail {
namespace {

// One problem's state in a device stage, its measurement (obs) on the device.
using DeviceProblem = BatchProblemStage;

struct DeviceRun : BatchRunState {
  MlpLayout layout;
  const NeuralField* mlp0 = nullptr;  // the architecture (heads, encoding)
  fk::Tensor params;                  // (N, P) f32 leaf on the device: row b is problem b's
  Clock::time_point t_run = Clock::now();
};

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
  fk::Tensor grad_sq_rows(const std::vector<double>& seed);
  fk::Tensor forward_backward(int t, const std::vector<double>& seed);
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
  AdamOptions adam_;
  fk::Tensor m_, v_, good_;  // (N, P): moments and last good parameters, on the device
  std::vector<DeviceProblem> ps_;
  fk::Tensor obs_, mask_;  // (N, *out_shape) on the device
  std::vector<double> noise_std_;
  bool discrepancy_ = false;  // the rule is on and some measurement has a noise level
};

DeviceStage::DeviceStage(DeviceRun& run, size_t index)
    : run_(run),
      index_(static_cast<int>(index)),
      stage_(run.cur.stages[index]),
      domain_(run.problems[0].domain.at(stage_shape(stage_, run.problems[0].domain))),
      op_(run.problems[0].op->at_resolution(domain_.shape())),
      coords_(domain_.coords(fk::DType::F32).reshape({domain_.numel(), domain_.ndim()})),
      enc_(domain_.ndim(), run.mlp0->config().n_octaves, run.mlp0->config().include_input,
           run.mlp0->config().annealed) {
  const fk::Device dev = run.opt.device;
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
    if (p.obs.mask.defined())
      FK_CHECK(fk::sum(p.obs.mask.to(fk::DType::F64)).item() > 0, "nefi::batch_invert (device)",
               "a mask with at least one observed cell",
               "an all-zero mask in problem " + std::to_string(b));
    p.obs.data = p.obs.data.to(dev);
    if (p.obs.mask.defined()) p.obs.mask = p.obs.mask.to(dev);
    obs.push_back(p.obs.data);
    if (p.obs.mask.defined()) mask.push_back(p.obs.mask);
    noise_std_.push_back(p.obs.noise_std);
    discrepancy_ = discrepancy_ || (run.cur.discrepancy_tau && p.obs.has_noise());
    p.losses = run.problems[b].losses.with_weights(stage_.loss_weights);
    p.running = !run.failed[b];
    if (run.failed[b]) p.sr.stop = "failed";
    p.sr.name = stage_.name;
    p.sr.shape = domain_.shape();
  }
  obs_ = fk::stack(obs, 0);
  if (!mask.empty()) mask_ = fk::stack(mask, 0);
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

// (N) f64: the squared gradient norm of each problem that stepped (0 for the
// others), enqueued on the device (device_grad_sq_sum's passes); on the CPU
// the CPU batch's f64 sum.
fk::Tensor DeviceStage::grad_sq_rows(const std::vector<double>& seed) {
  const int64_t n = run_.n;
  const fk::Device dev = run_.opt.device;
  const fk::Tensor grad = run_.params.grad();
  if (dev.is_cpu()) {
    std::vector<double> sq(static_cast<size_t>(n), 0.0);
    for (int64_t b = 0; b < n; ++b) {
      if (seed[b] == 0.0 || !grad.defined()) continue;
      const fk::Tensor g = row(grad, b);
      const float* gp = g.data<float>();
      for (int64_t i = 0; i < g.numel(); ++i) sq[b] += static_cast<double>(gp[i]) * gp[i];
    }
    return fk::from_vector(sq, fk::Dims{n});
  }
  fk::Tensor sq = fk::zeros(fk::Dims{n}, {fk::DType::F64, dev});
  for (int64_t b = 0; b < n; ++b)
    if (seed[b] != 0.0 && grad.defined())
      enqueue_grad_sq_sum({row(grad, b)}, sq.data<double>() + b);
  return sq;
}

// Fields, operator, losses and the backward of one step, enqueued with no
// host read (a DeviceStepScope marks it); returns what the step's one read
// brings back, (slots, N) f64: the totals, each term's values, (discrepancy)
// the masked MSE, the squared gradient norms.
fk::Tensor DeviceStage::forward_backward(int t, const std::vector<double>& seed) {
  const fk::DeviceStepScope in_step;
  const int64_t n = run_.n;
  const fk::Device dev = run_.opt.device;
  const double progress = stage_.progress_at(t);
  // Every field is evaluated (a frozen one's row gets a zero seed, so no
  // gradient): the block keeps its (N, *shape) layout.
  const fk::Tensor features = enc_.forward(coords_, progress);
  const fk::Tensor raw = grouped_mlp(run_.params, features, run_.layout)
                             .reshape({n * domain_.numel(), run_.layout.n_out});
  FieldMap fields = apply_heads_rows(run_.mlp0->heads(), raw, with_batch(n, domain_.shape()));
  const fk::Tensor pred = op_->forward(fields);
  BatchLossContext ctx;
  ctx.fields = &fields;
  ctx.pred = pred;
  ctx.obs = obs_;
  ctx.mask = mask_;
  ctx.noise_std = noise_std_;
  ctx.domain = &domain_;
  // Gathered for the one read: totals, per-term values, then (discrepancy)
  // the masked MSE, each (N) f64; the squared gradient norms go after them.
  std::vector<fk::Tensor> gathered;
  fk::Tensor total;
  const auto& terms = ps_[0].losses.terms();
  for (const LossSet::Term& term : terms) {
    if (term.weight == 0.0) {
      gathered.push_back(fk::zeros(fk::Dims{n}, {fk::DType::F64, dev}));
      continue;
    }
    fk::Tensor c = term.loss->forward_rows(ctx);
    FK_CHECK(c.defined() && c.dim() == 1 && c.size(0) == n, "nefi::batch_invert (device)",
             "per-problem values (" + std::to_string(n) + ") from loss '" + term.loss->name() + "'",
             c.defined() ? c.shape().str() : "none");
    {
      fk::autograd::NoGradGuard ng;
      gathered.push_back(c.detach().to(fk::DType::F64));
    }
    const fk::Tensor wc = term.weight == 1.0 ? c : fk::mul(c, term.weight);
    total = total.defined() ? fk::add(total, wc) : wc;
  }
  FK_CHECK(total.defined(), "nefi::batch_invert (device)",
           "at least one term with a non-zero weight", "none");
  {
    fk::autograd::NoGradGuard ng;
    gathered.insert(gathered.begin(), total.detach().to(fk::DType::F64));
    if (discrepancy_)
      gathered.push_back(masked_mse_rows(pred.detach(), obs_, mask_,
                                         std::vector<double>(static_cast<size_t>(n), 1.0))
                             .to(fk::DType::F64));
  }
  run_.params.set_grad(fk::Tensor());
  fk::autograd::backward({total}, {fk::from_vector(seed, fk::Dims{n}).to(total.dtype()).to(dev)});
  gathered.push_back(grad_sq_rows(seed));
  return fk::stack(gathered, 0);
}

// One step of every running problem; returns how many ran.
int DeviceStage::step(int t, double lr_t) {
  const int64_t n = run_.n;
  const fk::Device dev = run_.opt.device;
  std::vector<double> seed(static_cast<size_t>(n), 0.0);
  int n_active = 0;
  for (int64_t b = 0; b < n; ++b) n_active += static_cast<int>(seed[b] = ps_[b].running);
  if (n_active == 0) return 0;
  const double progress = stage_.progress_at(t);
  // The step's one host read (FK_SYNC_DEBUG reports any other inside it).
  const std::vector<double> got = forward_backward(t, seed).to(fk::kCPU).to_vector<double>();
  const fk::DeviceStepScope in_step;
  const size_t n_terms = ps_[0].losses.terms().size();
  auto at = [&](size_t slot, int64_t b) { return got[slot * static_cast<size_t>(n) + b]; };
  const size_t sq_slot = got.size() / static_cast<size_t>(n) - 1;
  for (int64_t b = 0; b < n; ++b) {
    if (seed[b] == 0.0) continue;
    DeviceProblem& p = ps_[b];
    p.progress = progress;
    const double tot = at(0, b);
    if (!std::isfinite(tot)) {
      guard(b, tot, t);
      continue;
    }
    p.bad = 0;
    fk::Tensor x = row(run_.params, b);
    const fk::Tensor grad = run_.params.grad();
    if (grad.defined()) {
      const fk::Tensor g = row(grad, b);
      fk::Tensor m = row(m_, b), v = row(v_, b);
      const double norm = std::sqrt(at(sq_slot, b));
      const double clip =
          (adam_.grad_clip > 0 && norm > adam_.grad_clip) ? adam_.grad_clip / (norm + 1e-6) : 1.0;
      ++p.adam_t;
      fk::autograd::NoGradGuard ng;
      if (dev.is_cpu())
        adam_update(x.data<float>(), g.data<float>(), m.data<float>(), v.data<float>(), x.numel(),
                    p.lr_mult * lr_t, clip, adam_, p.adam_t);
      else
        adam_update_device(x, g, m, v, p.lr_mult * lr_t, clip, adam_, p.adam_t);
      run_.params.bump_version();
    }
    if (t % run_.opt.checkpoint_every == 0) {
      fk::autograd::NoGradGuard ng;
      row(good_, b).copy_(x);
    }
    std::vector<double> comps;
    for (size_t k = 0; k < n_terms; ++k) comps.push_back(at(1 + k, b));
    record_step(run_, p, b, t, index_, p.lr_mult * lr_t, comps, tot);
    const double data = p.sr.final_data_loss;
    // The sequential Solver's stopping rules.
    if (!run_.opt.stopping_rules || p.progress < 1.0) continue;
    const char* stop = early_stop_due(run_, p, data) ? "early_stop" : nullptr;
    if (!stop && discrepancy_ && p.obs.has_noise() &&
        std::sqrt(at(1 + n_terms, b)) <= *run_.cur.discrepancy_tau * p.obs.noise_std)
      stop = "discrepancy";
    if (stop) {
      p.sr.stop = stop;
      p.running = false;
    }
  }
  run_.params.set_grad(fk::Tensor());
  return n_active;
}

void DeviceStage::run_steps() {
  run_stage_steps(run_, stage_, index_, ps_, [this](int t, double lr_t) { return step(t, lr_t); });
}

}  // namespace

std::vector<Result> batch_invert_device(std::vector<InverseProblem>& problems,
                                        const Curriculum& cur, const BatchOptions& opt) {
  // Before any field is reset or moved: a device this process cannot use.
  FK_CHECK(opt.device.is_cpu() || opt.device.index < fk::cuda::device_count(),
           "nefi::batch_invert (device)",
           "cpu or a usable CUDA device (" + std::to_string(fk::cuda::device_count()) + " here)",
           opt.device.str());
  const int64_t n = static_cast<int64_t>(problems.size());
  DeviceRun run{{problems, cur, opt}, {}, nullptr, {}};
  run.mlp0 = &dynamic_cast<const NeuralField&>(*problems[0].field);
  run.layout = mlp_layout(*run.mlp0);
  for (int64_t b = 0; b < n; ++b) {
    problems[b].field->reset_parameters(opt.seeds.empty() ? 0 : opt.seeds[b]);
    run.results[b].history.columns = batch_history_columns(problems[b].losses);
  }
  // The fields stay on the host; their parameters train as one block.
  run.params = blocks_from_fields(problems, n)[0].detach().to(opt.device);
  run.params.set_requires_grad(true);
  fk::Tensor host_params;  // the trained block, read back once
  return run_batch_stages<DeviceStage>(
      run, "nefi::batch_invert (device)",
      [&](int64_t b, const Domain& final_domain, double final_progress) {
        InverseProblem& prob = problems[b];
        if (!host_params.defined()) host_params = run.params.detach().to(fk::kCPU).contiguous();
        row_to_field(host_params.data<float>() + b * run.layout.n_params, *prob.field);
        const OperatorPtr final_op = prob.op->at_resolution(final_domain.shape());
        record_final_fields(run.results[b], prob, *final_op, final_domain, final_progress);
        record_batch_result(run, b);
      });
}

}  // namespace nefi::detail
