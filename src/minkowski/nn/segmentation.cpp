#include "minkowski/nn/segmentation.h"

#include "fk/autograd.h"
#include "minkowski/nn/loss.h"

namespace minkowski::nn {

double train_step(SparseModule& net, Optimizer& optimizer, const SparseTensor& input,
                  const fk::Tensor& labels, const StepOptions& options) {
  net.train();
  optimizer.zero_grad();
  const fk::Tensor logits = net.forward(input).F();
  const fk::Tensor loss =
      cross_entropy(logits, labels, options.ignore_index, options.class_weights);
  loss.backward();
  if (options.clip_norm > 0.0) clip_grad_norm(net.parameters(), options.clip_norm);
  optimizer.step();
  return loss.item();
}

fk::Tensor evaluate(SparseModule& net, const SparseTensor& input, const fk::Tensor& labels,
                    ConfusionMatrix& confusion, int64_t ignore_index) {
  fk::autograd::NoGradGuard no_grad;
  net.eval();
  const fk::Tensor logits = net.forward(input).F();
  if (labels.defined()) confusion.add(logits, labels, ignore_index);
  return logits;
}

}  // namespace minkowski::nn
