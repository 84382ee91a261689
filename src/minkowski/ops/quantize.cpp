#include "minkowski/ops/quantize.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/join.h"
#include "minkowski/coords/coordinate_map.h"
#include "minkowski/coords/kernel_region.h"

namespace minkowski {

namespace {
// N x D -> int32 rows, floor(c / size) for real inputs, the division in f32
// for f32 (and f16/bf16) coordinates as MinkowskiEngine's numpy and torch
// divisions are: points voxelized on a grid of that size (f32(k * 0.02)) land
// in voxel k there, where an f64 division put a third of them in k - 1.
std::vector<int32_t> floor_rows(const fk::Tensor& c, const std::vector<double>& size,
                                const char* where) {
  FK_CHECK(c.defined() && c.dim() == 2 && c.size(1) >= 1, where, "coordinates of shape N x D",
           c.defined() ? c.shape().str() : "undefined");
  FK_CHECK(c.device().is_cpu(), where, "CPU coordinates", c.device().str());
  FK_CHECK(!fk::is_complex(c.dtype()) && c.dtype() != fk::DType::Bool, where,
           "real or integer coordinates", fk::name(c.dtype()));
  int64_t n = c.size(0), d = c.size(1);
  FK_CHECK(size.size() == 1 || static_cast<int64_t>(size.size()) == d, where,
           "a quantization size of 1 or " + fk::to_text(d) + " values",
           fk::to_text(size.size()) + " values");
  for (double s : size)
    FK_CHECK(s > 0 && std::isfinite(s), where, "a positive finite quantization size",
             fk::to_text(s));
  const bool single = c.dtype() == fk::DType::F32 || fk::is_half(c.dtype());
  auto v = c.to_vector<double>();
  std::vector<int32_t> r(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t a = 0; a < d; ++a) {
      const double s = size[size.size() == 1 ? 0 : a];
      // A size f32 cannot hold (1e-46 is 0 there, 1e39 inf) divides in f64.
      const float sf = static_cast<float>(s);
      const double q = single && std::isnormal(sf)
                           ? std::floor(static_cast<double>(static_cast<float>(v[i * d + a]) / sf))
                           : std::floor(v[i * d + a] / s);
      FK_CHECK(q >= -2147483648.0 && q <= 2147483647.0, where, "quantized coordinates within int32",
               fk::to_text(q));
      r[i * d + a] = static_cast<int32_t>(q);
    }
  return r;
}

void check_labels(const fk::Tensor& labels, int64_t n, int64_t ignore_label, const char* where) {
  FK_CHECK(labels.dtype() == fk::DType::I32 || labels.dtype() == fk::DType::I64, where,
           "int32 or int64 labels", fk::name(labels.dtype()));
  FK_CHECK(labels.device().is_cpu(), where, "CPU labels", labels.device().str());
  FK_CHECK(labels.dim() == 1 && labels.size(0) == n, where,
           "labels of shape (" + fk::to_text(n) + "), one per coordinate row",
           labels.shape().str());
  if (labels.dtype() == fk::DType::I32)
    FK_CHECK(ignore_label >= INT32_MIN && ignore_label <= INT32_MAX, where,
             "an ignore label that fits the int32 labels", fk::to_text(ignore_label));
}

// One label per voxel: the points' common label, or ignore_label on conflict.
fk::Tensor quantize_labels(const fk::Tensor& labels, const std::vector<int64_t>& inverse, int64_t m,
                           int64_t ignore_label) {
  const int64_t n = static_cast<int64_t>(inverse.size());
  auto in = labels.to_vector<int64_t>();
  std::vector<int64_t> out(static_cast<size_t>(m));
  std::vector<bool> seen(static_cast<size_t>(m), false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t r = inverse[i];
    if (!seen[r]) {
      seen[r] = true;
      out[r] = in[i];
    } else if (out[r] != in[i]) {
      out[r] = ignore_label;
    }
  }
  return fk::from_vector(out, fk::Dims{m}).to(labels.dtype());
}
}  // namespace

Quantized sparse_quantize(const fk::Tensor& coordinates, const fk::Tensor& features,
                          const std::vector<double>& quantization_size, QuantizationMode mode,
                          const fk::Tensor& labels, int64_t ignore_label, uint64_t seed) {
  const char* where = "minkowski::sparse_quantize";
  auto rows = floor_rows(coordinates, quantization_size, where);
  int64_t n = coordinates.size(0), d = coordinates.size(1);
  if (features.defined())
    FK_CHECK(features.dim() == 2 && features.size(0) == n, where,
             "features of shape " + fk::to_text(n) + " x C", features.shape().str());
  if (labels.defined()) check_labels(labels, n, ignore_label, where);
  Quantized q;
  CoordinateMap map(rows.data(), n, static_cast<int>(d), std::vector<int32_t>(d, 1),
                    &q.unique_index, &q.inverse);
  q.coordinates = fk::from_blob_copy(map.coordinates().data(), {map.size(), d}, fk::DType::I32);
  if (mode == QuantizationMode::RandomSubsample)
    q.unique_index = subsample_rows(q.inverse, map.size(), seed);
  if (features.defined()) {
    q.features = quantize_features(features, q.unique_index, q.inverse, mode);
    // No two points shared a voxel: the features come back as given. A new
    // buffer, not the caller's (an edit of the result would reach the input).
    if (q.features.data_ptr() == features.data_ptr()) q.features = q.features.clone();
  }
  if (labels.defined()) q.labels = quantize_labels(labels, q.inverse, map.size(), ignore_label);
  return q;
}

fk::Tensor batched_coordinates(const std::vector<fk::Tensor>& coordinates) {
  const char* where = "minkowski::batched_coordinates";
  FK_CHECK(!coordinates.empty(), where, "at least one coordinate tensor", "none");
  int64_t d = coordinates[0].defined() && coordinates[0].dim() == 2 ? coordinates[0].size(1) : -1;
  std::vector<int32_t> out;
  for (size_t b = 0; b < coordinates.size(); ++b) {
    const fk::Tensor& c = coordinates[b];
    FK_CHECK(c.defined() && c.dim() == 2 && c.size(1) == d, where,
             "N_i x " + fk::to_text(d) + " coordinates",
             c.defined() ? c.shape().str() : "undefined");
    auto r = floor_rows(c, {1.0}, where);
    for (int64_t i = 0; i < c.size(0); ++i) {
      out.push_back(static_cast<int32_t>(b));
      out.insert(out.end(), r.begin() + i * d, r.begin() + (i + 1) * d);
    }
  }
  return fk::from_vector(out, fk::Dims{static_cast<int64_t>(out.size()) / (d + 1), d + 1});
}

Collated sparse_collate(const std::vector<fk::Tensor>& coordinates,
                        const std::vector<fk::Tensor>& features) {
  FK_CHECK(
      coordinates.size() == features.size(), "minkowski::sparse_collate",
      "as many feature tensors as coordinate tensors (" + fk::to_text(coordinates.size()) + ")",
      fk::to_text(features.size()));
  for (size_t b = 0; b < features.size(); ++b)
    FK_CHECK(features[b].dim() == 2 && features[b].size(0) == coordinates[b].size(0),
             "minkowski::sparse_collate",
             "features with one row per coordinate in sample " + fk::to_text(b),
             features[b].shape().str());
  return {batched_coordinates(coordinates), fk::cat(features, 0)};
}

}  // namespace minkowski
