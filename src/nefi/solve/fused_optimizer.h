#pragma once
// The solver's first-order optimizers as one fused loop over flat parameter
// buffers: Adam / AdamW (for each buffer the gradient-norm clip factor, the
// moment updates, bias correction, decoupled (AdamW) or L2 (Adam) weight
// decay and the parameter write in a single pass: one op per buffer, plus
// one for the global norm when clipping) and, on the CPU, heavy-ball SGD.
// Parameters: f32/f64 leaves updated in place (their version bumps), all on
// the CPU or all on one CUDA device (solve/adam_device.h: the same update as
// one kernel per buffer, the norm as one device reduction read once per step).
// State (m, v) is f32/f64 like the parameter, on its device. Deterministic
// (sequential loops; fixed-order reductions on a device).
#include <vector>

#include "fk/tensor.h"

namespace nefi {

struct OptimizerOptions {
  bool decoupled = true;  // AdamW (Adam: L2 weight decay)
  double weight_decay = 0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double grad_clip = 0;  // global norm; <= 0 off
  // SGD instead of Adam (the reference's third first-order rule): heavy
  // ball momentum, b = momentum b + (g + weight_decay x), x -= lr b (torch's
  // SGD; the first step's buffer is the gradient; m holds b). CPU only.
  bool sgd = false;
  double momentum = 0.9;
};

// A run of elements of one parameter buffer whose learning rate is the
// step's times `mult` (OptimConfig::lr_mult, Stage::freeze). mult 0 freezes
// the run: no update, no moment update, no decay, and its gradient is left
// out of the clipping norm (as a parameter outside the optimizer's groups).
struct LrSegment {
  int64_t offset = 0, length = 0;
  double mult = 1;
};

// The per-step scalars of adam_update in f64; each loop (host or device)
// rounds them to its T once.
struct AdamScalars {
  double clip, l2, decay, b1, b2, step, inv_sqrt_bc2, eps;
};
AdamScalars adam_scalars(double lr, double clip, const OptimizerOptions& o, int64_t t);

// The update FusedOptimizer runs on one buffer of n elements at step count t >= 1
// with the clip factor already known (1: none): moments, bias correction,
// weight decay and the parameter write in one pass. Exposed so a batched
// optimizer (solve/batch.h) makes bitwise the same update per problem.
template <typename T>
void adam_update(T* x, const T* g, T* m, T* v, int64_t n, double lr, double clip,
                 const OptimizerOptions& o, int64_t t);

class FusedOptimizer {
 public:
  FusedOptimizer(std::vector<fk::Tensor> params, OptimizerOptions opt);
  // One step at learning rate lr with each param's .grad; a param without a
  // grad is skipped (unchanged, moments kept). Returns the global gradient
  // norm before clipping.
  double step(double lr);
  void reset_state();
  void zero_grad();
  // Per-element learning-rate multipliers of parameter i (segments covering
  // it in order; empty: all 1). CPU only: a device step refuses them.
  void set_lr_segments(size_t i, std::vector<LrSegment> segments);
  // step(lr) split for a step that reads nothing back (solve/device_step.h;
  // device parameters only): begin_device_step counts the step and returns
  // its scalars for the host to upload into the device step block (clip 1:
  // the device computes it from the norm); enqueue_device_step enqueues the
  // gradient norm into the block and the gated update that reads it.
  AdamScalars begin_device_step(double lr);
  void enqueue_device_step(double* block);
  const OptimizerOptions& options() const { return opt_; }
  const std::vector<fk::Tensor>& params() const { return params_; }
  int64_t steps() const { return t_; }
  bool on_cpu() const { return params_.empty() || params_.front().device().is_cpu(); }
  // The moments (m, v per parameter) and the step count, for checkpoints.
  const std::vector<fk::Tensor>& first_moments() const { return m_; }
  const std::vector<fk::Tensor>& second_moments() const { return v_; }
  // Restores saved moments; shapes and dtypes must match the parameters.
  void load_state(const std::vector<fk::Tensor>& m, const std::vector<fk::Tensor>& v, int64_t t);

 private:
  std::vector<fk::Tensor> update_grads() const;
  std::vector<fk::Tensor> params_, m_, v_;
  std::vector<std::vector<LrSegment>> segments_;
  OptimizerOptions opt_;
  int64_t t_ = 0;
};

}  // namespace nefi
