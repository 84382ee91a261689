#pragma once
// Normalization layers as modules over minkowski/ops/normalization.h (one
// fused op with a hand-written backward):
//   BatchNorm     over the rows of the features (all points of all batch
//                 items, as the reference's BatchNorm1d on F): train mode uses
//                 the batch statistics (at least 2 rows) and updates
//                 running_mean / running_var (unbiased) by `momentum`; eval
//                 mode uses the running statistics.
//   InstanceNorm  over the points of each batch item.
// weight (C) starts at 1, bias (C) at 0; BatchNorm's buffers are running_mean,
// running_var and num_batches_tracked. Under autocast (autocast.h) both
// normalize in their parameters' dtype and return the autocast dtype.
#include "minkowski/nn/module.h"
#include "minkowski/ops/normalization.h"

namespace minkowski::nn {

class BatchNorm : public SparseModule {
 public:
  explicit BatchNorm(int64_t channels, double eps = 1e-5, double momentum = 0.1,
                     fk::DType dtype = fk::DType::F32);
  SparseTensor forward(const SparseTensor& x) override;
  fk::Tensor forward_features(const fk::Tensor& f);
  const fk::Tensor& running_mean() const { return op_.running_mean; }
  const fk::Tensor& running_var() const { return op_.running_var; }

 private:
  minkowski::BatchNorm op_;
  fk::Tensor batches_;
  // The count this layer last wrote into batches_, with the storage and
  // version it left: while they are unchanged the count is known without
  // reading the buffer (a host read waits for the device).
  struct Written {
    const void* storage = nullptr;
    uint32_t version = 0;
    int64_t count = 0;
  } written_;
};

class InstanceNorm : public SparseModule {
 public:
  explicit InstanceNorm(int64_t channels, double eps = 1e-5, fk::DType dtype = fk::DType::F32);
  SparseTensor forward(const SparseTensor& x) override;

 private:
  minkowski::InstanceNorm op_;
};

}  // namespace minkowski::nn
