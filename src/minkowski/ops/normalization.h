#pragma once
// Normalization of sparse features: BatchNorm over all points, InstanceNorm
// over the points of each batch item.
//
// Both are one op, "segment normalization": the rows are split into S
// segments (BatchNorm: one; InstanceNorm: one per batch index present in the
// map), and per (segment s, channel c)
//   mean = sum x / n_s,  var = sum (x - mean)^2 / n_s  (biased, as torch),
//   y = (x - mean) / sqrt(var + eps) * weight[c] + bias[c].
// With given statistics (BatchNorm in eval mode) mean and var are constants
// (S = 1) and the op is an affine map of x.
//
// Shapes: x N x C; weight, bias (C) or undefined (no affine: 1 and 0).
// Dtypes: f64, f32, f16, bf16 features; weight and bias of the features'
// dtype. f16/bf16 (and f32) are computed in f32 with statistics accumulated
// in f64; f64 in f64. Statistics are kept in f64.
// Determinism: statistics are summed over fixed blocks of rows combined in
// block order, so results are bit-identical for any thread count.
// Devices: features on a CUDA device (weight and bias on the same device) are
// summed and normalized there (normalization_device.h), the same values, with
// nothing read back to the host: the statistics stay on the device
// (NormStats::moments), and so do running statistics kept there (BatchNorm
// after Module::to). Mixed devices are an fk::Error.
// Memory: a contiguous compute-dtype copy of x (and of the gradient) when it
// is not one already, the output, 4 x S x C doubles of statistics and, while
// summing, 2 x S x C doubles per block of 1024 rows.
// Differentiable w.r.t. x, weight and bias (NormalizeBackward calls
// normalize_backward).
#include <cstdint>
#include <optional>
#include <vector>

#include "fk/tensor.h"
#include "minkowski/sparse_tensor.h"
#include "minkowski/tensor_field.h"

namespace minkowski {

// Which segment each row belongs to: of_row has one entry per row, in
// [0, count), or none when count is 1 (every row in segment 0:
// single_segment, BatchNorm's case, costs no vector of zeros; `rows` is then
// the row count it is for, -1: any).
struct Segments {
  std::vector<int32_t> of_row;
  int64_t count = 1;
  int64_t rows = -1;
  // of_row on the features' CUDA device, uploaded once by normalize for its
  // statistics, forward and backward (undefined otherwise).
  fk::Tensor device_rows;
  int32_t of(int64_t row) const { return of_row.empty() ? 0 : of_row[static_cast<size_t>(row)]; }
};
// One segment holding every one of `rows` rows.
Segments single_segment(int64_t rows);
// One segment per batch index present in x's map (a field's column 0), in
// increasing batch order.
Segments batch_segments(const SparseTensor& x);
Segments batch_segments(const TensorField& x);

struct NormStats {
  std::vector<double> mean, var;  // S x C, var biased
  std::vector<double> invstd;     // 1 / sqrt(var + eps)
  std::vector<int64_t> rows;      // n_s
  // Statistics of features on a CUDA device stay there: a (4, S x C) f64
  // tensor of rows mean, var, invstd and n_s (normalization_device.h), the
  // host vectors above then empty (rows apart).
  fk::Tensor moments;
  // These statistics with the host vectors filled (read from the device).
  NormStats host() const;
};

// The pure functions.
NormStats normalize_statistics(const fk::Tensor& x, const Segments& seg, double eps);
// Statistics given from outside (e.g. running mean/var, C values each) as S = 1.
NormStats fixed_statistics(const fk::Tensor& mean, const fk::Tensor& var, double eps);
fk::Tensor normalize_forward(const fk::Tensor& x, const Segments& seg, const NormStats& stats,
                             const fk::Tensor& weight, const fk::Tensor& bias);
struct NormGrads {
  fk::Tensor x, weight, bias;  // undefined where not asked for
};
// batch_stats: whether `stats` were computed from x (their gradient flows
// through mean and var) or are constants.
NormGrads normalize_backward(const fk::Tensor& grad, const fk::Tensor& x, const Segments& seg,
                             const NormStats& stats, const fk::Tensor& weight, bool batch_stats,
                             bool need_x, bool need_weight, bool need_bias);

// Forward + autograd node. With stats == nullptr they are computed from x.
fk::Tensor normalize(const fk::Tensor& x, const Segments& seg, double eps, const fk::Tensor& weight,
                     const fk::Tensor& bias, const NormStats* fixed = nullptr,
                     NormStats* computed = nullptr);

// torch.nn.BatchNorm1d applied to the features of every point.
// Training: batch statistics (at least 2 rows), and with track_running_stats
//   running = (1 - m) * running + m * batch with m = momentum (no momentum:
//   m = 1 / batches tracked, the cumulative average), where the running
//   var takes the unbiased batch var (n / (n - 1)), as torch does.
// Eval with track_running_stats: the running statistics. Eval without: the
//   batch statistics, as torch.
// weight (ones) and bias (zeros) are leaves that require grad when affine;
// running_mean (zeros) and running_var (ones) have the module's dtype except
// that f16/bf16 modules keep them in f32.
class BatchNorm {
 public:
  explicit BatchNorm(int64_t channels, double eps = 1e-5, std::optional<double> momentum = 0.1,
                     bool affine = true, bool track_running_stats = true,
                     fk::DType dtype = fk::DType::F32);
  fk::Tensor forward(const fk::Tensor& features);
  SparseTensor forward(const SparseTensor& x) { return x.with_features(forward(x.F())); }
  TensorField forward(const TensorField& x) { return x.with_features(forward(x.F())); }
  void train(bool on = true) { training_ = on; }
  void eval() { training_ = false; }
  bool training() const { return training_; }
  int64_t channels() const { return channels_; }

  fk::Tensor weight, bias, running_mean, running_var;
  int64_t num_batches_tracked = 0;

 private:
  int64_t channels_;
  double eps_;
  std::optional<double> momentum_;
  bool track_;
  bool training_ = true;
};

// Normalizes each batch item of a SparseTensor or TensorField on its own (statistics over
// that item's points), then the affine map. eps defaults to torch's 1e-5 (ME
// hard-codes 1e-8). An item of one point normalizes to its bias.
class InstanceNorm {
 public:
  explicit InstanceNorm(int64_t channels, double eps = 1e-5, bool affine = true,
                        fk::DType dtype = fk::DType::F32);
  SparseTensor forward(const SparseTensor& x) const;
  TensorField forward(const TensorField& x) const;
  int64_t channels() const { return channels_; }

  fk::Tensor weight, bias;

 private:
  fk::Tensor normalize_items(const fk::Tensor& features, const Segments& seg) const;
  int64_t channels_;
  double eps_;
};

}  // namespace minkowski
