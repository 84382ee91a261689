#include "minkowski/nn/metrics.h"

#include <cmath>
#include <limits>

#include "fk/error.h"
#include "fk/ops/reduce.h"

namespace minkowski::nn {

ConfusionMatrix::ConfusionMatrix(int64_t classes)
    : classes_(classes), counts_(static_cast<size_t>(classes * classes), 0) {
  FK_CHECK(classes > 0, "ConfusionMatrix", "a positive class count", fk::to_text(classes));
}

void ConfusionMatrix::add(const fk::Tensor& predictions, const fk::Tensor& labels,
                          int64_t ignore_index) {
  const fk::Tensor ids = predictions.dim() == 2 ? fk::argmax(predictions.detach(), 1) : predictions;
  const auto p = ids.to_vector<int64_t>();
  const auto y = labels.to_vector<int64_t>();
  FK_CHECK(p.size() == y.size(), "ConfusionMatrix::add",
           fk::to_text(p.size()) + " labels (one per prediction)", fk::to_text(y.size()));
  for (size_t i = 0; i < y.size(); ++i) {
    if (y[i] == ignore_index) continue;
    FK_CHECK(y[i] >= 0 && y[i] < classes_ && p[i] >= 0 && p[i] < classes_,
             "ConfusionMatrix::add row " + fk::to_text(i),
             "labels and predictions in [0, " + fk::to_text(classes_) + ")",
             fk::to_text(y[i]) + ", " + fk::to_text(p[i]));
    ++counts_[y[i] * classes_ + p[i]];
  }
}

double ConfusionMatrix::iou(int64_t c) const {
  int64_t tp = count(c, c), fp = 0, fn = 0;
  for (int64_t k = 0; k < classes_; ++k) {
    if (k == c) continue;
    fp += count(k, c);
    fn += count(c, k);
  }
  const int64_t uni = tp + fp + fn;
  return uni == 0 ? std::numeric_limits<double>::quiet_NaN()
                  : static_cast<double>(tp) / static_cast<double>(uni);
}

double ConfusionMatrix::miou() const {
  double sum = 0;
  int64_t n = 0;
  for (int64_t c = 0; c < classes_; ++c) {
    const double v = iou(c);
    if (std::isnan(v)) continue;
    sum += v;
    ++n;
  }
  return n == 0 ? std::numeric_limits<double>::quiet_NaN() : sum / static_cast<double>(n);
}

double ConfusionMatrix::accuracy() const {
  int64_t right = 0, all = 0;
  for (int64_t c = 0; c < classes_; ++c) {
    right += count(c, c);
    for (int64_t k = 0; k < classes_; ++k) all += count(c, k);
  }
  return all == 0 ? std::numeric_limits<double>::quiet_NaN()
                  : static_cast<double>(right) / static_cast<double>(all);
}

}  // namespace minkowski::nn
