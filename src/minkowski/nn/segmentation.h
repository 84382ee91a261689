#pragma once
// One training step and one evaluation of a per-point (per-voxel) classifier:
// what `minkowski train`, `bench train` and the training test share.
#include <cstdint>

#include "minkowski/nn/metrics.h"
#include "minkowski/nn/module.h"
#include "minkowski/nn/optim.h"

namespace minkowski::nn {

struct StepOptions {
  int64_t ignore_index = -100;
  fk::Tensor class_weights;  // undefined: unweighted
  double clip_norm = 0.0;    // 0: no clipping
};

// zero_grad, forward, cross-entropy, backward, (clip), optimizer step; returns
// the loss. The module is put in train mode.
double train_step(SparseModule& net, Optimizer& optimizer, const SparseTensor& input,
                  const fk::Tensor& labels, const StepOptions& options = {});

// Eval-mode forward without autograd; adds the predictions to `confusion` and
// returns the logits.
fk::Tensor evaluate(SparseModule& net, const SparseTensor& input, const fk::Tensor& labels,
                    ConfusionMatrix& confusion, int64_t ignore_index = -100);

}  // namespace minkowski::nn
