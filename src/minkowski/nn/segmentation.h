#pragma once
// One training step and one evaluation of a classifier whose output rows are
// matched with labels: per point (MinkUNet, one row per voxel) or per batch
// item (ResNet, one row per item). What `minkowski train`, `bench train` and
// the training tests share.
#include <cstdint>

#include "fk/amp.h"
#include "minkowski/nn/metrics.h"
#include "minkowski/nn/module.h"
#include "minkowski/nn/optim.h"

namespace minkowski::nn {

struct StepOptions {
  int64_t ignore_index = -100;
  fk::Tensor class_weights;  // undefined: unweighted
  double clip_norm = 0.0;    // 0: no clipping
  // BF16 or F16: the forward and the loss run under autocast (autocast.h);
  // the parameters, their gradients and the optimizer stay f32.
  fk::DType precision = fk::DType::F32;
  // Dynamic loss scaling (what F16 needs, whose small gradients underflow):
  // backward runs on loss * scale, the gradients are unscaled before clipping,
  // and a step whose gradients hold inf or nan is skipped (the scaler backs
  // off; after its growth interval of clean steps it grows).
  fk::amp::GradScaler* scaler = nullptr;
};

struct StepResult {
  double loss = 0.0;     // unscaled
  bool skipped = false;  // the scaler found inf/nan gradients: no update
};

// zero_grad, forward, cross-entropy, backward, (unscale, clip), optimizer
// step. The module is put in train mode.
StepResult train_step(SparseModule& net, Optimizer& optimizer, const SparseTensor& input,
                      const fk::Tensor& labels, const StepOptions& options = {});

// Eval-mode forward without autograd; adds the predictions to `confusion` and
// returns the logits. `precision` BF16 or F16 runs the forward under autocast
// (as train_step's); 16-bit logits are returned as f32.
fk::Tensor evaluate(SparseModule& net, const SparseTensor& input, const fk::Tensor& labels,
                    ConfusionMatrix& confusion, int64_t ignore_index = -100,
                    fk::DType precision = fk::DType::F32);

}  // namespace minkowski::nn
