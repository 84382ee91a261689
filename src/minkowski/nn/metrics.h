#pragma once
// Segmentation metrics from a confusion matrix: per-class IoU = TP / (TP + FP
// + FN), mIoU over the classes that occur (in labels or predictions), and
// accuracy. Rows labelled ignore_index are not counted.
#include <cstdint>
#include <vector>

#include "fk/tensor.h"

namespace minkowski::nn {

class ConfusionMatrix {
 public:
  explicit ConfusionMatrix(int64_t classes);
  // predictions: N class ids, or N x C scores (argmax taken); labels: N.
  void add(const fk::Tensor& predictions, const fk::Tensor& labels, int64_t ignore_index = -100);
  int64_t count(int64_t label, int64_t predicted) const {
    return counts_[label * classes_ + predicted];
  }
  int64_t classes() const { return classes_; }
  // NaN for a class absent from labels and predictions.
  double iou(int64_t c) const;
  double miou() const;
  double accuracy() const;

 private:
  int64_t classes_;
  std::vector<int64_t> counts_;
};

}  // namespace minkowski::nn
