#include "minkowski/ops/interpolation.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "minkowski/ops/multilinear_corners.h"

namespace minkowski {

namespace {

constexpr const char* kWhere = "minkowski::interpolate";
// Points per block of the weight construction: blocks run in parallel and are
// concatenated in order, so the list does not depend on the thread count.
constexpr int64_t kBlockPoints = 2048;

using multilinear::Corners;
using multilinear::kMaxDim;

// A present corner of one point: its row, weight and squared distance (in strides).
struct Found {
  int64_t row;
  double weight, dist2;
};

void present_corners(const CoordinateMap& map, const Corners& c, const std::vector<int32_t>& ts,
                     std::vector<Found>& found) {
  found.clear();
  std::array<int32_t, kMaxDim + 1> at;
  for (uint32_t bits = 0; bits < (1u << ts.size()); ++bits) {
    const multilinear::Corner k = multilinear::corner(c, ts, bits, at.data());
    const int64_t row = map.find(at.data());
    if (row >= 0) found.push_back({row, k.weight, k.dist2});
  }
}

struct Entries {
  std::vector<int64_t> rows, cols;
  std::vector<double> weight;
};

// The entries of point i from its present corners.
void add_entries(int64_t i, const std::vector<Found>& found, size_t corners, InterpolationMode mode,
                 Entries& e) {
  if (mode == InterpolationMode::Nearest) {
    const Found* best = nullptr;
    for (const auto& f : found)
      if (!best || f.dist2 < best->dist2) best = &f;
    if (best) {
      e.rows.push_back(i);
      e.cols.push_back(best->row);
      e.weight.push_back(1.0);
    }
    return;
  }
  double sum = 0;
  for (const auto& f : found) sum += f.weight;
  if (sum <= 0) return;
  const bool partial = found.size() < corners;
  for (const auto& f : found) {
    if (f.weight == 0) continue;
    e.rows.push_back(i);
    e.cols.push_back(f.row);
    e.weight.push_back(partial ? f.weight / sum : f.weight);
  }
}

}  // namespace

InterpolationWeights interpolation_weights(const SparseTensor& x, const fk::Tensor& points,
                                           InterpolationMode mode) {
  FK_CHECK(x.defined(), kWhere, "a sparse tensor", "an empty handle");
  const int d = x.dimension();
  FK_CHECK(d <= kMaxDim, kWhere, "at most 16 spatial dimensions (2^D corners)", fk::to_text(d));
  FK_CHECK(points.defined() && points.dim() == 2 && points.size(1) == d + 1, kWhere,
           "points of shape Q x " + fk::to_text(d + 1) + " (batch, x_1..x_" + fk::to_text(d) + ")",
           points.defined() ? points.shape().str() : "undefined");
  FK_CHECK(points.dtype() == fk::DType::F32 || points.dtype() == fk::DType::F64, kWhere,
           "f32 or f64 points", fk::name(points.dtype()));
  auto map = x.manager()->map(x.key());
  const auto& ts = x.tensor_stride();
  const int64_t q = points.size(0);
  auto pv = points.to_vector<double>();
  for (int64_t i = 0; i < q; ++i) multilinear::check_point(pv.data() + i * (d + 1), ts, i, kWhere);
  const int64_t blocks = (q + kBlockPoints - 1) / kBlockPoints;
  std::vector<Entries> part(static_cast<size_t>(blocks));
  fk::parallel_for(0, blocks, 1, [&](int64_t lo, int64_t hi) {
    std::vector<Found> found;
    for (int64_t b = lo; b < hi; ++b)
      for (int64_t i = b * kBlockPoints; i < std::min(q, (b + 1) * kBlockPoints); ++i) {
        present_corners(*map, multilinear::corners_of(pv.data() + i * (d + 1), ts), ts, found);
        add_entries(i, found, size_t{1} << d, mode, part[b]);
      }
  });
  Entries all;
  for (auto& e : part) {
    all.rows.insert(all.rows.end(), e.rows.begin(), e.rows.end());
    all.cols.insert(all.cols.end(), e.cols.begin(), e.cols.end());
    all.weight.insert(all.weight.end(), e.weight.begin(), e.weight.end());
  }
  InterpolationWeights r;
  r.weight = std::move(all.weight);
  r.list = coo_list(std::move(all.rows), std::move(all.cols), {q, x.size()});
  return r;
}

fk::Tensor interpolate(const SparseTensor& x, const fk::Tensor& points, InterpolationMode mode) {
  fk::profile::OpScope scope("minkowski.interpolate");
  InterpolationWeights w = interpolation_weights(x, points, mode);
  const fk::DType vd = x.F().dtype() == fk::DType::F64 ? fk::DType::F64 : fk::DType::F32;
  // the weights go to the features' device (spmm runs there)
  fk::Tensor v =
      fk::from_vector(w.weight, fk::Dims{static_cast<int64_t>(w.weight.size())}, x.F().device())
          .to(vd);
  return spmm(w.list, v, x.F());
}

TensorField interpolate(const SparseTensor& x, const TensorField& field, InterpolationMode mode) {
  FK_CHECK(field.defined(), kWhere, "a field", "an empty TensorField");
  return field.with_features(interpolate(x, field.C(), mode));
}

}  // namespace minkowski
