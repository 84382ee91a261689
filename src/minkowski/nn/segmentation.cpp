#include "minkowski/nn/segmentation.h"

#include "fk/autograd.h"
#include "minkowski/nn/autocast.h"
#include "minkowski/nn/loss.h"

namespace minkowski::nn {

StepResult train_step(SparseModule& net, Optimizer& optimizer, const SparseTensor& input,
                      const fk::Tensor& labels, const StepOptions& options) {
  net.train();
  optimizer.zero_grad();
  fk::Tensor loss;
  {
    const Precision autocast_scope(options.precision);
    loss =
        cross_entropy(net.forward(input).F(), labels, options.ignore_index, options.class_weights);
  }
  StepResult result{loss.item(), false};
  if (options.scaler == nullptr) {
    loss.backward();
  } else {
    options.scaler->scale(loss).backward();
    std::vector<fk::Tensor> grads;
    for (const fk::Tensor& p : net.parameters()) grads.push_back(p.grad());
    result.skipped = !options.scaler->unscale_and_check(grads);
    options.scaler->update(result.skipped);
    if (result.skipped) return result;
  }
  if (options.clip_norm > 0.0) clip_grad_norm(net.parameters(), options.clip_norm);
  optimizer.step();
  return result;
}

fk::Tensor evaluate(SparseModule& net, const SparseTensor& input, const fk::Tensor& labels,
                    ConfusionMatrix& confusion, int64_t ignore_index, fk::DType precision) {
  fk::autograd::NoGradGuard no_grad;
  net.eval();
  fk::Tensor logits;
  {
    const Precision autocast_scope(precision);
    logits = net.forward(input).F();
  }
  if (logits.dtype() == fk::DType::BF16 || logits.dtype() == fk::DType::F16)
    logits = logits.to(fk::DType::F32);
  if (labels.defined()) confusion.add(logits, labels, ignore_index);
  return logits;
}

}  // namespace minkowski::nn
