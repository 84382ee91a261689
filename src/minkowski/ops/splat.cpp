#include "minkowski/ops/splat.h"

#include <string>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "minkowski/coords/kernel_region.h"
#include "minkowski/ops/multilinear_corners.h"

namespace minkowski {

namespace {

constexpr const char* kWhere = "minkowski::splat";

void check_features(const SplatMap& map, const fk::Tensor& features) {
  FK_CHECK(features.defined() && features.dim() == 2 && features.size(0) == map.list.k, kWhere,
           "features of shape N x C with N = " + fk::to_text(map.list.k) + " points",
           features.defined() ? features.shape().str() : "undefined");
  FK_CHECK(fk::is_floating(features.dtype()), kWhere, "f64, f32, f16 or bf16 features",
           fk::name(features.dtype()));
}

// The weights in the dtype spmm computes in for these features, on their device.
fk::Tensor weights_for(const SplatMap& map, const fk::Tensor& features) {
  return (features.dtype() == fk::DType::F64 ? map.weight : map.weight.to(fk::DType::F32))
      .to(features.device());
}

}  // namespace

SplatMap splat_map(const fk::Tensor& points, const std::vector<int32_t>& tensor_stride,
                   std::shared_ptr<CoordinateManager> manager) {
  FK_CHECK(points.defined() && points.dim() == 2 && points.size(1) >= 2, kWhere,
           "points of shape N x (1+D), D >= 1 (batch, x_1..x_D)",
           points.defined() ? points.shape().str() : "undefined");
  const int d = static_cast<int>(points.size(1)) - 1;
  FK_CHECK(d <= multilinear::kMaxDim, kWhere, "at most 16 spatial dimensions (2^D corners)",
           fk::to_text(d));
  FK_CHECK(points.dtype() == fk::DType::F32 || points.dtype() == fk::DType::F64, kWhere,
           "f32 or f64 points", fk::name(points.dtype()));
  if (!manager) manager = std::make_shared<CoordinateManager>(d);
  FK_CHECK(manager->dimension() == d, kWhere,
           "a coordinate manager of dimension " + fk::to_text(d) + " (the points')",
           "dimension " + fk::to_text(manager->dimension()));
  const auto ts = expand_axes(tensor_stride, d, kWhere, "tensor stride");
  const int64_t n = points.size(0), corners = int64_t{1} << d, w = d + 1;
  auto pv = points.to_vector<double>();
  for (int64_t i = 0; i < n; ++i) multilinear::check_point(pv.data() + i * w, ts, i, kWhere);

  // Every corner of every point (row i * 2^D + bits), then their map.
  std::vector<int32_t> at(static_cast<size_t>(n * corners * w));
  std::vector<double> weight(static_cast<size_t>(n * corners));
  fk::parallel_for(0, n, 1024, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const auto c = multilinear::corners_of(pv.data() + i * w, ts);
      for (int64_t b = 0; b < corners; ++b) {
        const int64_t e = i * corners + b;
        weight[e] = multilinear::corner(c, ts, static_cast<uint32_t>(b), at.data() + e * w).weight;
      }
    }
  });
  auto inserted =
      manager->insert(fk::from_vector(at, fk::Dims{n * corners, w}), ts, /*tag=*/"splat");

  std::vector<int64_t> rows, cols;
  std::vector<double> kept;
  for (int64_t e = 0; e < n * corners; ++e) {
    if (weight[e] == 0) continue;
    rows.push_back(inserted.inverse[e]);
    cols.push_back(e / corners);
    kept.push_back(weight[e]);
  }
  SplatMap m;
  m.manager = std::move(manager);
  m.key = inserted.key;
  const int64_t size = static_cast<int64_t>(inserted.unique_rows.size());
  m.list = coo_list(std::move(rows), std::move(cols), {size, n});
  m.weight = fk::from_vector(kept, fk::Dims{static_cast<int64_t>(kept.size())});
  return m;
}

fk::Tensor splat_forward(const SplatMap& map, const fk::Tensor& features) {
  check_features(map, features);
  return spmm_forward(map.list, weights_for(map, features), features);
}

fk::Tensor splat_backward(const fk::Tensor& grad, const SplatMap& map, const fk::Tensor& features) {
  check_features(map, features);
  FK_CHECK(grad.defined() && grad.dim() == 2 && grad.size(0) == map.list.m &&
               grad.size(1) == features.size(1),
           kWhere,
           "a gradient of shape " + fk::to_text(map.list.m) + " x " + fk::to_text(features.size(1)),
           grad.defined() ? grad.shape().str() : "undefined");
  return spmm_backward(grad, map.list, weights_for(map, features), features, false, true).dense;
}

SparseTensor splat(const TensorField& field, const std::vector<int32_t>& tensor_stride,
                   std::shared_ptr<CoordinateManager> manager) {
  fk::profile::OpScope scope("minkowski.splat");
  FK_CHECK(field.defined(), kWhere, "a field", "an empty TensorField");
  SplatMap m = splat_map(field.C(), tensor_stride, std::move(manager));
  check_features(m, field.F());
  fk::Tensor out = spmm(m.list, weights_for(m, field.F()), field.F());
  return SparseTensor(out, m.key, m.manager);
}

}  // namespace minkowski
