#include "minkowski/sparse_tensor.h"

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/index.h"

namespace minkowski {

namespace {
void check_features(const fk::Tensor& f, const char* where) {
  FK_CHECK(f.defined(), where, "a feature tensor", "an undefined tensor");
  FK_CHECK(f.device().is_cpu(), where,
           "CPU features (CUDA kernels for minkowski are not built yet)", f.device().str());
  FK_CHECK(fk::is_floating(f.dtype()), where, "f32, f64, f16 or bf16 features",
           fk::name(f.dtype()));
  FK_CHECK(f.dim() == 2, where, "2-D features (N x C)", f.shape().str());
}

fk::Tensor index_tensor(const std::vector<int64_t>& v) {
  return fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size())});
}
}  // namespace

fk::Tensor quantize_features(const fk::Tensor& features, const std::vector<int64_t>& unique_rows,
                             const std::vector<int64_t>& inverse, QuantizationMode mode) {
  int64_t m = static_cast<int64_t>(unique_rows.size()), n = features.size(0), c = features.size(1);
  if (m == n) return features;  // no duplicates: rows are already in order
  switch (mode) {
    case QuantizationMode::RandomSubsample:
      return fk::index_select(features, 0, index_tensor(unique_rows));
    case QuantizationMode::UnweightedSum:
    case QuantizationMode::UnweightedAverage: {
      fk::Tensor s =
          fk::index_add(fk::zeros({m, c}, {features.dtype()}), 0, index_tensor(inverse), features);
      if (mode == QuantizationMode::UnweightedSum) return s;
      std::vector<double> count(m, 0.0);
      for (int64_t r : inverse) count[r] += 1;
      return fk::div(s, fk::from_vector(count, fk::Dims{m, 1}).to(features.dtype()));
    }
    case QuantizationMode::MaxPool: {
      // The row holding each channel's max (first one on ties), then a gather,
      // which carries the gradient to that row only.
      fk::Tensor f = features.to(fk::DType::F64).contiguous();
      const double* fp = f.data<double>();
      std::vector<int64_t> arg(m * c, -1);
      for (int64_t i = 0; i < n; ++i) {
        int64_t r = inverse[i];
        for (int64_t x = 0; x < c; ++x) {
          int64_t& a = arg[r * c + x];
          if (a < 0 || fp[i * c + x] > fp[a * c + x]) a = i;
        }
      }
      return fk::gather(features, 0, fk::from_vector(arg, fk::Dims{m, c}));
    }
  }
  return features;
}

SparseTensor::SparseTensor(const fk::Tensor& features, const fk::Tensor& coordinates,
                           const std::vector<int32_t>& tensor_stride, QuantizationMode mode,
                           std::shared_ptr<CoordinateManager> manager) {
  const char* where = "minkowski::SparseTensor";
  check_features(features, where);
  FK_CHECK(coordinates.defined() && coordinates.dim() == 2 && coordinates.size(1) >= 2, where,
           "coordinates of shape N x (1+D), D >= 1",
           coordinates.defined() ? coordinates.shape().str() : "undefined");
  FK_CHECK(coordinates.size(0) == features.size(0), where,
           "as many coordinate rows as feature rows (" + std::to_string(features.size(0)) + ")",
           std::to_string(coordinates.size(0)));
  if (!manager) {
    manager = std::make_shared<CoordinateManager>(static_cast<int>(coordinates.size(1)) - 1);
  }
  auto ins = manager->insert(coordinates, tensor_stride);
  features_ = quantize_features(features, ins.unique_rows, ins.inverse, mode);
  manager_ = std::move(manager);
  key_ = ins.key;
  unique_index_ = std::move(ins.unique_rows);
  inverse_ = std::move(ins.inverse);
}

SparseTensor::SparseTensor(const fk::Tensor& features, const MapKey& key,
                           std::shared_ptr<CoordinateManager> manager)
    : features_(features), manager_(std::move(manager)), key_(key) {
  const char* where = "minkowski::SparseTensor";
  check_features(features, where);
  FK_CHECK(manager_ != nullptr, where, "a coordinate manager", "null");
  int64_t n = manager_->size(key);
  FK_CHECK(features.size(0) == n, where,
           std::to_string(n) + " feature rows (the map " + key.str() + ")",
           std::to_string(features.size(0)));
}

void check_same_manager(const SparseTensor& a, const SparseTensor& b, const char* where) {
  FK_CHECK(a.manager() == b.manager(), where, "tensors of the same coordinate manager",
           "tensors of different managers");
}

}  // namespace minkowski
