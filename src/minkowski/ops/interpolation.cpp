#include "minkowski/ops/interpolation.h"

#include <cmath>
#include <string>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"

namespace minkowski {

namespace {

constexpr const char* kWhere = "minkowski::interpolate";
constexpr double kInt32Limit = 2147483647.0;

struct Corners {
  std::vector<int32_t> base;  // batch, floor(q / ts) * ts per axis
  std::vector<double> frac;   // (q - base) / ts per axis, in [0, 1)
};

Corners corners_of(const double* q, const std::vector<int32_t>& ts, int64_t i) {
  const int d = static_cast<int>(ts.size());
  Corners c{std::vector<int32_t>(static_cast<size_t>(d) + 1), std::vector<double>(d)};
  FK_CHECK(std::isfinite(q[0]) && std::floor(q[0]) == q[0] && std::abs(q[0]) < kInt32Limit, kWhere,
           "an integer batch index in column 0 (point " + std::to_string(i) + ")",
           std::to_string(q[0]));
  c.base[0] = static_cast<int32_t>(q[0]);
  for (int a = 0; a < d; ++a) {
    const double t = ts[a], cell = std::floor(q[a + 1] / t);
    // both corners, cell * t and (cell + 1) * t, within int32
    FK_CHECK(std::isfinite(cell) && std::abs(cell * t) < kInt32Limit &&
                 std::abs((cell + 1) * t) < kInt32Limit,
             kWhere, "finite coordinates within int32 (point " + std::to_string(i) + ")",
             std::to_string(q[a + 1]));
    c.base[a + 1] = static_cast<int32_t>(cell * t);
    c.frac[a] = (q[a + 1] - cell * t) / t;
  }
  return c;
}

// Present corners of one point: (row, weight, squared distance).
struct Found {
  int64_t row;
  double weight, dist2;
};

std::vector<Found> present_corners(const CoordinateMap& map, const Corners& c,
                                   const std::vector<int32_t>& ts) {
  const int d = static_cast<int>(ts.size());
  std::vector<Found> found;
  std::vector<int32_t> at(c.base.size());
  for (uint32_t bits = 0; bits < (1u << d); ++bits) {
    at[0] = c.base[0];
    double w = 1, d2 = 0;
    for (int a = 0; a < d; ++a) {
      const bool up = (bits >> a) & 1u;
      at[a + 1] = c.base[a + 1] + (up ? ts[a] : 0);
      const double dist = up ? 1 - c.frac[a] : c.frac[a];
      w *= 1 - dist;
      d2 += dist * dist;
    }
    const int64_t row = map.find(at.data());
    if (row >= 0) found.push_back({row, w, d2});
  }
  return found;
}

}  // namespace

InterpolationWeights interpolation_weights(const SparseTensor& x, const fk::Tensor& points,
                                           InterpolationMode mode) {
  FK_CHECK(x.defined(), kWhere, "a sparse tensor", "an empty handle");
  const int d = x.dimension();
  FK_CHECK(d <= 16, kWhere, "at most 16 spatial dimensions (2^D corners)", std::to_string(d));
  FK_CHECK(
      points.defined() && points.dim() == 2 && points.size(1) == d + 1, kWhere,
      "points of shape Q x " + std::to_string(d + 1) + " (batch, x_1..x_" + std::to_string(d) + ")",
      points.defined() ? points.shape().str() : "undefined");
  FK_CHECK(points.dtype() == fk::DType::F32 || points.dtype() == fk::DType::F64, kWhere,
           "f32 or f64 points", fk::name(points.dtype()));
  FK_CHECK(points.device().is_cpu(), kWhere, "CPU points", points.device().str());
  auto map = x.manager()->map(x.key());
  const auto& ts = x.tensor_stride();
  const int64_t q = points.size(0);
  auto pv = points.to_vector<double>();
  std::vector<int64_t> rows, cols;
  InterpolationWeights r;
  for (int64_t i = 0; i < q; ++i) {
    Corners c = corners_of(pv.data() + i * (d + 1), ts, i);
    std::vector<Found> found = present_corners(*map, c, ts);
    if (mode == InterpolationMode::Nearest) {
      const Found* best = nullptr;
      for (const auto& f : found)
        if (!best || f.dist2 < best->dist2) best = &f;
      if (best) {
        rows.push_back(i);
        cols.push_back(best->row);
        r.weight.push_back(1.0);
      }
      continue;
    }
    double sum = 0;
    for (const auto& f : found) sum += f.weight;
    const bool partial = found.size() < (size_t{1} << d);
    if (sum <= 0) continue;
    for (const auto& f : found) {
      if (f.weight == 0) continue;
      rows.push_back(i);
      cols.push_back(f.row);
      r.weight.push_back(partial ? f.weight / sum : f.weight);
    }
  }
  r.list = coo_list(std::move(rows), std::move(cols), {q, x.size()});
  return r;
}

fk::Tensor interpolate(const SparseTensor& x, const fk::Tensor& points, InterpolationMode mode) {
  fk::profile::OpScope scope("minkowski.interpolate");
  InterpolationWeights w = interpolation_weights(x, points, mode);
  const fk::DType vd = x.F().dtype() == fk::DType::F64 ? fk::DType::F64 : fk::DType::F32;
  fk::Tensor v = fk::from_vector(w.weight, fk::Dims{static_cast<int64_t>(w.weight.size())}).to(vd);
  return spmm(w.list, v, x.F());
}

TensorField interpolate(const SparseTensor& x, const TensorField& field, InterpolationMode mode) {
  FK_CHECK(field.defined(), kWhere, "a field", "an empty TensorField");
  return field.with_features(interpolate(x, field.C(), mode));
}

}  // namespace minkowski
