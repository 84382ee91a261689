#pragma once
// Optimizers over a list of parameters (f32 or f64 leaves), updated in place
// from their .grad() with plain loops (arithmetic in double, one pass per
// tensor, so a step is the same at any thread count). Parameters without a
// gradient are skipped, as PyTorch does, and each parameter counts its own
// steps (Adam's bias correction uses the steps that parameter took: one that
// missed a step, an unused branch, is not corrected as if it had taken it).
// Weight decay 0 adds nothing (0 * inf would make an infinite parameter NaN).
// Parameters on a CUDA device (a
// module moved with Module::to) are updated there by one kernel each with
// their moment buffers on that device (optim_device.h: the host step's
// values); a gradient on another device than its parameter is an fk::Error.
//
//   SGD    g += wd p; v = momentum v + g (v = g on the first step);
//          p -= lr (nesterov ? g + momentum v : v)       (momentum 0: p -= lr g)
//   Adam   g += wd p (L2); m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
//          p -= lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
//   AdamW  as Adam with decoupled decay: p *= 1 - lr wd before the update.
//
// state() names every moment buffer ("<i>.momentum", "<i>.exp_avg", ...),
// each parameter's step count ("<i>.step") and the optimizer's ("step"), so a
// checkpoint can hold it and training can resume exactly (a checkpoint
// without "<i>.step", from before per-parameter counts, gives each parameter
// the optimizer's count).
#include <cstdint>
#include <vector>

#include "minkowski/nn/module.h"

namespace minkowski::nn {

class Optimizer {
 public:
  explicit Optimizer(std::vector<fk::Tensor> params, double lr);
  virtual ~Optimizer() = default;
  virtual void step() = 0;
  void zero_grad();
  double lr() const { return lr_; }
  void set_lr(double lr);  // finite, >= 0
  int64_t steps() const { return steps_; }
  // The steps parameter i took (those it had a gradient in).
  int64_t steps_of(size_t i) const { return param_steps_.at(i); }
  // Moment buffers (created on the first step) and the step counts: a
  // snapshot (copies), which later steps leave as it is.
  NamedTensors state();
  void load_state(const NamedTensors& state);

 protected:
  // The buffer `name` of parameter i (zeros of its shape, f64, made on first use).
  fk::Tensor& buffer(size_t i, const char* name);
  virtual std::vector<const char*> buffer_names() const = 0;

  std::vector<fk::Tensor> params_;
  double lr_;
  int64_t steps_ = 0;
  std::vector<int64_t> param_steps_;

 private:
  // state()'s entries, the buffers themselves (load_state copies into them).
  NamedTensors live_state();
  std::vector<std::vector<fk::Tensor>> buffers_;
};

struct SgdOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

class Sgd : public Optimizer {
 public:
  Sgd(std::vector<fk::Tensor> params, const SgdOptions& o);
  void step() override;

 private:
  std::vector<const char*> buffer_names() const override { return {"momentum"}; }
  SgdOptions o_;
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled = false;  // AdamW
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<fk::Tensor> params, const AdamOptions& o);
  void step() override;

 private:
  std::vector<const char*> buffer_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  AdamOptions o_;
};

// Scales every gradient by max_norm / total when the 2-norm of all gradients
// together exceeds max_norm; returns that total norm (before clipping).
// Device gradients are reduced on their device (one host read in all). A
// non-finite total (an inf or NaN gradient, or finite ones whose squares
// overflow) scales nothing (torch 1.13 zeroes every gradient or makes it
// NaN): the caller sees it returned, and only the bad gradients are bad.
double clip_grad_norm(const std::vector<fk::Tensor>& params, double max_norm);

}  // namespace minkowski::nn
