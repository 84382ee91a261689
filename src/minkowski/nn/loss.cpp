#include "minkowski/nn/loss.h"

#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/index.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"

namespace minkowski::nn {

namespace {

// 16-bit logits (an autocast network's output) are promoted: log-softmax and
// the mean over many rows need f32's range and precision.
fk::Tensor promoted(const fk::Tensor& t) {
  return t.defined() && fk::is_half(t.dtype()) ? t.to(fk::DType::F32) : t;
}

}  // namespace

fk::Tensor cross_entropy(const fk::Tensor& logits_in, const fk::Tensor& labels,
                         int64_t ignore_index, const fk::Tensor& class_weights) {
  const fk::Tensor logits = promoted(logits_in);
  FK_CHECK(logits.dim() == 2 && fk::is_floating(logits.dtype()), "cross_entropy",
           "N x C floating logits", logits.shape().str() + " " + fk::name(logits.dtype()));
  const int64_t n = logits.size(0), classes = logits.size(1);
  FK_CHECK(labels.dim() == 1 && labels.size(0) == n && fk::is_integral(labels.dtype()),
           "cross_entropy", fk::to_text(n) + " integer labels",
           labels.shape().str() + " " + fk::name(labels.dtype()));
  FK_CHECK(!class_weights.defined() || class_weights.shape() == fk::Dims{classes}, "cross_entropy",
           fk::to_text(classes) + " class weights", class_weights.shape().str());
  const auto y = labels.to_vector<int64_t>();
  std::vector<int64_t> rows, kept;
  for (int64_t i = 0; i < n; ++i) {
    if (y[i] == ignore_index) continue;
    FK_CHECK(y[i] >= 0 && y[i] < classes, "cross_entropy row " + fk::to_text(i),
             "a label in [0, " + fk::to_text(classes) + ") or " + fk::to_text(ignore_index),
             fk::to_text(y[i]));
    rows.push_back(i);
    kept.push_back(y[i]);
  }
  if (rows.empty()) return fk::mul(fk::sum(logits), 0.0);
  const auto m = static_cast<int64_t>(rows.size());
  // The kept rows and their labels (checked above) index the logits where
  // they live through index_select's host-index form: uploaded, never read
  // back for a range check. picked[i] = log_p[i, kept[i]], flat.
  std::vector<int64_t> at(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) at[i] = i * classes + kept[i];
  const fk::Tensor log_p = fk::log_softmax(fk::index_select(logits, 0, rows), 1);
  const fk::Tensor picked = fk::index_select(log_p.reshape({m * classes}), 0, at);
  if (!class_weights.defined()) return fk::neg(fk::mean(picked));
  const fk::Tensor w =
      fk::index_select(class_weights.to(logits.dtype()).to(logits.device()).detach(), 0, kept);
  return fk::neg(fk::div(fk::sum(fk::mul(picked, w)), fk::sum(w)));
}

fk::Tensor binary_cross_entropy_with_logits(const fk::Tensor& logits_in,
                                            const fk::Tensor& targets) {
  const fk::Tensor logits = promoted(logits_in);
  FK_CHECK(logits.shape() == targets.shape(), "binary_cross_entropy_with_logits",
           "targets of the logits' shape " + logits.shape().str(), targets.shape().str());
  const fk::Tensor t = targets.to(logits.dtype()).to(logits.device());
  // max(x, 0) - x t + log(1 + e^-|x|), torch's stable form. max, not relu:
  // at x = 0 a tie splits its slope (1/2, the sigmoid's), where relu's 0 and
  // |x|'s 0 lost it (the gradient read -t, not 1/2 - t).
  const fk::Tensor zero = fk::zeros({}, {logits.dtype(), logits.device()});
  const fk::Tensor per = fk::add(fk::sub(fk::maximum(logits, zero), fk::mul(logits, t)),
                                 fk::log1p(fk::exp(fk::neg(fk::abs(logits)))));
  return fk::mean(per);
}

fk::Tensor mse(const fk::Tensor& a, const fk::Tensor& b) {
  FK_CHECK(a.shape() == b.shape(), "mse", "operands of one shape " + a.shape().str(),
           b.shape().str());
  return fk::mean(fk::square(fk::sub(promoted(a), promoted(b))));
}

}  // namespace minkowski::nn
