#include "minkowski/tensor_field.h"

#include <cmath>
#include <string>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/index.h"

namespace minkowski {

namespace {
constexpr double kInt32Limit = 2147483647.0;
}  // namespace

TensorField::TensorField(const fk::Tensor& features, const fk::Tensor& coordinates) {
  const char* where = "minkowski::TensorField";
  FK_CHECK(coordinates.defined() && coordinates.dim() == 2 && coordinates.size(1) >= 2, where,
           "coordinates of shape N x (1+D), D >= 1",
           coordinates.defined() ? coordinates.shape().str() : "undefined");
  FK_CHECK(coordinates.device().is_cpu(), where,
           "CPU coordinates (CUDA kernels for minkowski are not built yet)",
           coordinates.device().str());
  FK_CHECK(coordinates.dtype() == fk::DType::F32 || coordinates.dtype() == fk::DType::F64, where,
           "f32 or f64 coordinates", fk::name(coordinates.dtype()));
  FK_CHECK(features.defined(), where, "a feature tensor", "an undefined tensor");
  FK_CHECK(features.device().is_cpu(), where,
           "CPU features (CUDA kernels for minkowski are not built yet)", features.device().str());
  FK_CHECK(fk::is_floating(features.dtype()), where, "f32, f64, f16 or bf16 features",
           fk::name(features.dtype()));
  FK_CHECK(features.dim() == 2, where, "2-D features (N x C)", features.shape().str());
  FK_CHECK(features.size(0) == coordinates.size(0), where,
           "as many feature rows as coordinate rows (" + std::to_string(coordinates.size(0)) + ")",
           std::to_string(features.size(0)));
  features_ = features;
  coordinates_ = coordinates;
}

SparseTensor TensorField::sparse(const std::vector<double>& voxel_size, QuantizationMode mode,
                                 std::shared_ptr<CoordinateManager> manager) {
  const char* where = "minkowski::TensorField::sparse";
  FK_CHECK(defined(), where, "a constructed field", "an empty TensorField");
  const int64_t n = size(), d = dimension(), w = d + 1;
  FK_CHECK(voxel_size.size() == 1 || static_cast<int64_t>(voxel_size.size()) == d, where,
           "a voxel size of 1 or " + std::to_string(d) + " values",
           std::to_string(voxel_size.size()) + " values");
  for (double s : voxel_size)
    FK_CHECK(std::isfinite(s) && s > 0, where, "a positive voxel size", std::to_string(s));
  auto v = coordinates_.to_vector<double>();
  std::vector<int32_t> rows(v.size());
  for (int64_t i = 0; i < n; ++i) {
    double b = v[i * w];
    FK_CHECK(std::isfinite(b) && std::floor(b) == b && std::abs(b) < kInt32Limit, where,
             "an integer batch index in column 0 (row " + std::to_string(i) + ")",
             std::to_string(b));
    rows[i * w] = static_cast<int32_t>(b);
    for (int64_t a = 0; a < d; ++a) {
      double q = std::floor(v[i * w + 1 + a] / voxel_size[voxel_size.size() == 1 ? 0 : a]);
      FK_CHECK(std::isfinite(q) && std::abs(q) < kInt32Limit, where,
               "finite voxel coordinates within int32 (row " + std::to_string(i) + ")",
               std::to_string(q));
      rows[i * w + 1 + a] = static_cast<int32_t>(q);
    }
  }
  // SparseTensor's constructor inserts the voxels, deduplicates and reduces
  // the features (differentiably); the field only keeps the mapping.
  SparseTensor s(features_, fk::from_vector(rows, fk::Dims{n, w}),
                 std::vector<int32_t>(static_cast<size_t>(d), 1), mode, std::move(manager));
  inverse_ = s.inverse_mapping();
  manager_ = s.manager();
  key_ = s.key();
  return s;
}

fk::Tensor TensorField::slice(const SparseTensor& s) const {
  const char* where = "minkowski::TensorField::slice";
  FK_CHECK(manager_ != nullptr, where, "a field quantized with sparse() first",
           "a field never quantized");
  FK_CHECK(s.defined(), where, "a sparse tensor", "an undefined SparseTensor");
  bool same_map = s.manager() == manager_ && s.key() == key_;
  if (!same_map) {
    // Another map is accepted only if it holds exactly the field's voxels in
    // the same row order, since rows are what the inverse mapping indexes.
    fk::Tensor mine = manager_->coordinates(key_), theirs = s.C();
    same_map =
        mine.shape() == theirs.shape() && mine.to_vector<int32_t>() == theirs.to_vector<int32_t>();
    FK_CHECK(same_map, where,
             "a sparse tensor on the field's quantized map " + key_.str() + " (" +
                 std::to_string(manager_->size(key_)) +
                 " rows) or on a map with identical coordinates",
             "the map " + s.key().str() + " with " + std::to_string(s.size()) +
                 " rows and different coordinates");
  }
  return fk::index_select(
      s.F(), 0, fk::from_vector(inverse_, fk::Dims{static_cast<int64_t>(inverse_.size())}));
}

}  // namespace minkowski
