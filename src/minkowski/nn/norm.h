#pragma once
// BatchNorm over the rows of the features (all points of all batch items, as
// the reference's BatchNorm1d on F): train mode normalizes with the batch
// mean and biased variance and updates running_mean / running_var (unbiased)
// by `momentum`; eval mode uses the running statistics. weight (C) starts at
// 1, bias (C) at 0; num_batches_tracked counts train-mode calls.
#include "minkowski/nn/module.h"

namespace minkowski::nn {

class BatchNorm : public SparseModule {
 public:
  explicit BatchNorm(int64_t channels, double eps = 1e-5, double momentum = 0.1,
                     fk::DType dtype = fk::DType::F32);
  SparseTensor forward(const SparseTensor& x) override;
  fk::Tensor forward_features(const fk::Tensor& f);
  const fk::Tensor& running_mean() const { return running_mean_; }
  const fk::Tensor& running_var() const { return running_var_; }

 private:
  void update_running(const fk::Tensor& mean, const fk::Tensor& var_biased, int64_t rows);
  int64_t channels_;
  double eps_, momentum_;
  fk::Tensor weight_, bias_, running_mean_, running_var_, batches_;
};

}  // namespace minkowski::nn
