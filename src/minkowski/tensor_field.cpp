#include "minkowski/tensor_field.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/index.h"
#include "fk/ops/join.h"
#include "minkowski/tensor_field_device.h"

namespace minkowski {

namespace {
// [-2^31, 2^31 - 1], the int32 values (a NaN is not within).
bool within_int32(double v) {
  return v >= -2147483648.0 && v <= 2147483647.0;
}

// Row i of the voxel rows from its field coordinates v (1 + D values):
// the batch index rounded to the nearest integer, half to even as
// torch.round (as the reference: a batch column that went through float
// arithmetic, 1 - 1e-7, is batch 1), each
// spatial coordinate voxelized and floored to a multiple of the stride
// (toward -inf); fk::Error naming row i when a value is not finite or leaves
// int32.
void voxel_row(const double* v, int64_t i, const std::vector<double>& voxel_size,
               const std::vector<int32_t>& ts, int32_t* row) {
  const char* where = "minkowski::TensorField::sparse";
  const double b = std::nearbyint(v[0]);
  FK_CHECK(within_int32(b), where,
           "a finite batch index within int32 in column 0 (row " + fk::to_text(i) + ")",
           fk::to_text(v[0]));
  row[0] = static_cast<int32_t>(b);
  for (size_t a = 0; a < ts.size(); ++a) {
    const double q = std::floor(v[1 + a] / voxel_size[voxel_size.size() == 1 ? 0 : a]);
    const double t = static_cast<double>(ts[a]);
    // The stored value is checked: flooring to the stride can step past a
    // voxel coordinate that is itself within int32.
    const double s = std::floor(q / t) * t;
    FK_CHECK(within_int32(s), where,
             "finite voxel coordinates within int32, after flooring to the tensor stride (row " +
                 fk::to_text(i) + ")",
             fk::to_text(s));
    row[1 + a] = static_cast<int32_t>(s);
  }
}

// The voxel rows of every point: on the host, or on the coordinates' CUDA
// device (tensor_field_device.h), where an invalid row is looked at again on
// the host for its error.
fk::Tensor voxel_rows(const fk::Tensor& coordinates, const std::vector<double>& voxel_size,
                      const std::vector<int32_t>& ts) {
  const int64_t n = coordinates.size(0), w = coordinates.size(1);
  std::vector<int32_t> row(static_cast<size_t>(w));
  if (coordinates.device().is_cuda()) {
    std::vector<double> sizes(ts.size());
    for (size_t a = 0; a < ts.size(); ++a) sizes[a] = voxel_size[voxel_size.size() == 1 ? 0 : a];
    DeviceVoxelRows d = device_voxel_rows(coordinates, sizes, ts);
    if (d.first_bad >= 0) {
      const auto v = coordinates.select(0, d.first_bad).to_vector<double>();
      voxel_row(v.data(), d.first_bad, voxel_size, ts, row.data());  // throws
      throw fk::Error("minkowski::TensorField::sparse",
                      "the host's and the device's voxelization to agree",
                      "row " + fk::to_text(d.first_bad) + " refused on the device only");
    }
    return d.rows;
  }
  const auto v = coordinates.to_vector<double>();
  std::vector<int32_t> rows(v.size());
  for (int64_t i = 0; i < n; ++i)
    voxel_row(v.data() + i * w, i, voxel_size, ts, rows.data() + i * w);
  return fk::from_vector(rows, fk::Dims{n, w});
}

}  // namespace

TensorField::TensorField(const fk::Tensor& features, const fk::Tensor& coordinates) {
  const char* where = "minkowski::TensorField";
  FK_CHECK(coordinates.defined() && coordinates.dim() == 2 && coordinates.size(1) >= 2, where,
           "coordinates of shape N x (1+D), D >= 1",
           coordinates.defined() ? coordinates.shape().str() : "undefined");
  FK_CHECK(coordinates.dtype() == fk::DType::F32 || coordinates.dtype() == fk::DType::F64, where,
           "f32 or f64 coordinates", fk::name(coordinates.dtype()));
  FK_CHECK(features.defined(), where, "a feature tensor", "an undefined tensor");
  FK_CHECK(fk::is_floating(features.dtype()), where, "f32, f64, f16 or bf16 features",
           fk::name(features.dtype()));
  FK_CHECK(features.dim() == 2, where, "2-D features (N x C)", features.shape().str());
  FK_CHECK(coordinates.device().is_cpu() || features.device() == coordinates.device(), where,
           "features on the coordinates' device " + coordinates.device().str(),
           "features on " + features.device().str());
  FK_CHECK(features.size(0) == coordinates.size(0), where,
           "as many feature rows as coordinate rows (" + fk::to_text(coordinates.size(0)) + ")",
           fk::to_text(features.size(0)));
  features_ = features;
  coordinates_ = coordinates;
}

SparseTensor TensorField::sparse(const std::vector<double>& voxel_size, QuantizationMode mode,
                                 std::shared_ptr<CoordinateManager> manager,
                                 const std::vector<int32_t>& tensor_stride, uint64_t seed) {
  const char* where = "minkowski::TensorField::sparse";
  FK_CHECK(defined(), where, "a constructed field", "an empty TensorField");
  const int64_t d = dimension();
  FK_CHECK(voxel_size.size() == 1 || static_cast<int64_t>(voxel_size.size()) == d, where,
           "a voxel size of 1 or " + fk::to_text(d) + " values",
           fk::to_text(voxel_size.size()) + " values");
  for (double s : voxel_size)
    FK_CHECK(std::isfinite(s) && s > 0, where, "a positive voxel size", fk::to_text(s));
  FK_CHECK(tensor_stride.size() == 1 || static_cast<int64_t>(tensor_stride.size()) == d, where,
           "a tensor stride of 1 or " + fk::to_text(d) + " values",
           fk::to_text(tensor_stride.size()) + " values");
  std::vector<int32_t> ts(static_cast<size_t>(d));
  for (int64_t a = 0; a < d; ++a) {
    ts[a] = tensor_stride[tensor_stride.size() == 1 ? 0 : a];
    FK_CHECK(ts[a] > 0, where, "a positive tensor stride", fk::to_text(ts[a]));
  }
  // SparseTensor's constructor inserts the voxels, deduplicates and reduces
  // the features (differentiably); the field only keeps the mapping.
  SparseTensor s(features_, voxel_rows(coordinates_, voxel_size, ts), ts, mode, std::move(manager),
                 seed);
  inverse_ = s.inverse_mapping();
  manager_ = s.manager();
  key_ = s.key();
  return s;
}

std::vector<int64_t> TensorField::inverse_mapping(const SparseTensor& s) const {
  const char* where = "minkowski::TensorField::slice";
  FK_CHECK(manager_ != nullptr, where, "a field quantized with sparse() first",
           "a field never quantized");
  FK_CHECK(s.defined(), where, "a sparse tensor", "an undefined SparseTensor");
  if (s.manager() == manager_ && s.key() == key_) return inverse_;
  const std::vector<int32_t>& mine = key_.tensor_stride;
  const std::vector<int32_t>& theirs = s.tensor_stride();
  const int d = dimension();
  bool multiple = s.dimension() == d && static_cast<int>(theirs.size()) == d;
  for (int a = 0; multiple && a < d; ++a) multiple = theirs[a] % mine[a] == 0;
  FK_CHECK(multiple, where,
           "a sparse tensor of dimension " + fk::to_text(d) +
               " whose tensor stride is a multiple of the field's " + key_.str(),
           s.key().str());
  // Each voxel of the field, floored to the other map's stride, looked up there.
  auto field_map = manager_->map(key_);
  auto other = s.manager()->map(s.key());
  const int64_t m = field_map->size();
  std::vector<int64_t> row_of(static_cast<size_t>(m));
  std::vector<int32_t> c(static_cast<size_t>(d) + 1);
  for (int64_t r = 0; r < m; ++r) {
    const int32_t* v = field_map->row(r);
    c[0] = v[0];
    for (int a = 0; a < d; ++a) {
      int64_t t = theirs[a], x = v[a + 1];
      c[a + 1] = static_cast<int32_t>(x - ((x % t) + t) % t);
    }
    row_of[r] = other->find(c.data());
    if (row_of[r] < 0) {
      // r is a voxel of the field's map; the message names a point in it.
      const auto point = std::find(inverse_.begin(), inverse_.end(), r) - inverse_.begin();
      std::string voxel;
      for (int32_t e : c) voxel += (voxel.empty() ? "" : ", ") + fk::to_text(e);
      throw fk::Error(where,
                      "a sparse tensor holding every voxel of the field (at its stride), e.g. "
                      "the field's quantized map " +
                          key_.str() + " or a map strided from it",
                      "the map " + s.key().str() + " with " + fk::to_text(s.size()) +
                          " rows, which lacks the voxel (" + voxel + ") of field point " +
                          fk::to_text(point));
    }
  }
  std::vector<int64_t> inv(inverse_.size());
  for (size_t i = 0; i < inverse_.size(); ++i) inv[i] = row_of[inverse_[i]];
  return inv;
}

fk::Tensor TensorField::slice(const SparseTensor& s) const {
  // The host-index form: checked on the host and uploaded, no read back.
  return fk::index_select(s.F(), 0, inverse_mapping(s));
}

TensorField TensorField::with_features(const fk::Tensor& features) const {
  TensorField f(features, coordinates_);
  f.inverse_ = inverse_;
  f.manager_ = manager_;
  f.key_ = key_;
  return f;
}

TensorField SparseTensor::slice(const TensorField& field) const {
  return field.with_features(field.slice(*this));
}

TensorField SparseTensor::cat_slice(const TensorField& field) const {
  fk::Tensor sliced = field.slice(*this);
  FK_CHECK(sliced.dtype() == field.F().dtype(), "minkowski::SparseTensor::cat_slice",
           "a field with the sparse tensor's feature dtype " + std::string(fk::name(F().dtype())),
           fk::name(field.F().dtype()));
  return field.with_features(fk::cat({sliced, field.F()}, 1));
}

}  // namespace minkowski
