// Interpolation at continuous points: the renormalized edge of the occupied
// region pinned by hand, multilinear and nearest against a plain loop over
// every row (negative coordinates, two batch items, tensor stride 2),
// gradients, dtypes, thread invariance and bad points.
#include <gtest/gtest.h>

#include <cmath>

#include "minkowski/ops/feature_ops_util.h"

namespace minkowski {
namespace {

using feature_ops::random_sparse;

// 1-D, batch 0: voxels -2, -1, 0 with features 10, 20, 40; batch 1: voxel 0 = 7.
SparseTensor line() {
  std::vector<int32_t> c{0, -2, 0, -1, 0, 0, 1, 0};
  std::vector<double> f{10, 20, 40, 7};
  return SparseTensor(fk::from_vector(f, fk::Dims{4, 1}), fk::from_vector(c, fk::Dims{4, 2}));
}

fk::Tensor pts(const std::vector<double>& v, int w) {
  return fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size()) / w, w});
}

TEST(MinkowskiInterpolation, EdgeOfTheOccupiedRegionIsRenormalized) {
  SparseTensor x = line();
  // -1.5: both corners present, 0.5 * 20 + 0.5 * 10.
  // 0.25: corner 0 (weight 0.75) present, corner 1 absent: the value of voxel
  //       0, 40 (MinkowskiEngine before the fix returned 0.75 * 40 = 30).
  // -2.5: corner -3 absent, -2 present (0.5): 10, not 5.
  // 0.0: exactly on voxel 0: 40. 1.0: on absent voxel 1, its lower corner 1
  //       absent and upper 2 absent: 0. 5.5: far away: 0.
  // batch 1 at 0.9: corner 0 (weight 0.1) alone: 7.
  fk::Tensor q = pts({0, -1.5, 0, 0.25, 0, -2.5, 0, 0.0, 0, 1.0, 0, 5.5, 1, 0.9}, 2);
  fk::test::expect_close(interpolate(x, q), {15, 40, 10, 40, 0, 0, 7}, 1e-12);
  // Nearest: -1.5 is a tie between -2 and -1: the lower corner.
  fk::test::expect_close(interpolate(x, q, InterpolationMode::Nearest), {10, 40, 10, 40, 0, 0, 7},
                         0);
  // The weights that produced them, renormalized.
  auto w = interpolation_weights(x, q, InterpolationMode::Multilinear);
  EXPECT_EQ(w.list.rows, (std::vector<int64_t>{0, 0, 1, 2, 3, 6}));
  EXPECT_EQ(w.list.cols, (std::vector<int64_t>{0, 1, 2, 0, 2, 3}));
  EXPECT_EQ(w.weight, (std::vector<double>{0.5, 0.5, 1, 1, 1, 1}));
}

// Plain loop over every row of x: the rows whose coordinate c satisfies
// -ts <= q - c < ts on every axis are q's corners.
std::vector<double> reference(const feature_ops::Sparse& s, int c, const std::vector<double>& q,
                              int d, int ts, bool nearest) {
  const size_t n = q.size() / (d + 1);
  std::vector<double> out(n * c, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const double* p = q.data() + i * (d + 1);
    double wsum = 0, best = 1e300;
    int corners = 0;
    std::vector<double> acc(c, 0.0);
    for (size_t r = 0; r < s.rows.size(); ++r) {
      if (s.rows[r][0] != p[0]) continue;
      double w = 1, d2 = 0;
      bool corner = true;
      for (int a = 0; a < d; ++a) {
        double u = (p[a + 1] - s.rows[r][a + 1]) / ts;
        corner = corner && u >= -1 && u < 1;
        w *= 1 - std::abs(u);
        d2 += u * u;
      }
      if (!corner) continue;
      ++corners;
      if (nearest) {
        if (d2 < best) {
          best = d2;
          for (int x = 0; x < c; ++x) out[i * c + x] = s.f[r * c + x];
        }
        continue;
      }
      wsum += w;
      for (int x = 0; x < c; ++x) acc[x] += w * s.f[r * c + x];
    }
    if (nearest || wsum <= 0) continue;
    const double norm = corners < (1 << d) ? wsum : 1.0;
    for (int x = 0; x < c; ++x) out[i * c + x] = acc[x] / norm;
  }
  return out;
}

// Points in [-2.5, 2.5] * ts * range plus some exactly on voxels.
std::vector<double> random_points(const feature_ops::Sparse& s, int d, int n, double span,
                                  unsigned seed) {
  auto u = fk::test::random_values(static_cast<int64_t>(n) * d, -span, span, seed);
  std::vector<double> q;
  for (int i = 0; i < n; ++i) {
    q.push_back(i % 2);
    for (int a = 0; a < d; ++a) q.push_back(u[i * d + a]);
  }
  for (size_t r = 0; r < s.rows.size(); r += 3)
    for (int a = 0; a <= d; ++a) q.push_back(s.rows[r][a]);
  return q;
}

TEST(MinkowskiInterpolation, MatchesPlainLoopIn3D) {
  const int d = 3, ts = 2, c = 2;
  auto s = random_sparse(d, 60, c, 1, fk::DType::F64, nullptr, 2, ts);
  auto q = random_points(s, d, 200, 6.0, 2);
  fk::Tensor qt = pts(q, d + 1);
  auto want = reference(s, c, q, d, ts, false);
  fk::test::expect_close(interpolate(s.x, qt), want, 1e-12);
  fk::test::expect_close(interpolate(s.x, qt.to(fk::DType::F32)),
                         reference(s, c, qt.to(fk::DType::F32).to_vector<double>(), d, ts, false),
                         1e-6);
  fk::test::expect_close(interpolate(s.x, qt, InterpolationMode::Nearest),
                         reference(s, c, q, d, ts, true), 0);
  // Some points have every corner, some only part, some none.
  auto w = interpolation_weights(s.x, qt, InterpolationMode::Multilinear);
  EXPECT_GT(w.list.rows.size(), 200u);
  for (fk::DType t : {fk::DType::F32, fk::DType::F16, fk::DType::BF16}) {
    fk::Tensor o = interpolate(s.x.with_features(s.x.F().to(t)), qt);
    EXPECT_EQ(o.dtype(), t);
    fk::test::expect_close(o, want, feature_ops::tolerance(t));
  }
  // On a field's points: a field on those points.
  TensorField field(fk::zeros({qt.size(0), 1}, {fk::DType::F64}), qt);
  TensorField at = interpolate(s.x, field);
  EXPECT_TRUE(at.C().is_same(qt));
  fk::test::expect_close(at.F(), want, 1e-12);
}

TEST(MinkowskiInterpolation, FullNeighbourhoodsAreNotRenormalized) {
  // Every site of [-2, 2]^2 in both batch items: inside, all 4 corners exist.
  auto s = random_sparse(2, 50, 3, 7, fk::DType::F64, nullptr, 2);
  auto q = random_points(s, 2, 100, 2.0, 8);
  auto w = interpolation_weights(s.x, pts(q, 3), InterpolationMode::Multilinear);
  size_t full = 0;
  for (size_t p = 0; p < w.list.rows.size();) {
    size_t e = p;
    while (e < w.list.rows.size() && w.list.rows[e] == w.list.rows[p]) ++e;
    full += e - p == 4;
    p = e;
  }
  EXPECT_GT(full, 50u);
  fk::test::expect_close(interpolate(s.x, pts(q, 3)), reference(s, 3, q, 2, 1, false), 1e-12);
}

TEST(MinkowskiInterpolation, Gradcheck) {
  auto s = random_sparse(2, 12, 2, 3, fk::DType::F64, nullptr, 2);
  fk::Tensor q = pts(random_points(s, 2, 20, 2.5, 4), 3);
  for (auto mode : {InterpolationMode::Multilinear, InterpolationMode::Nearest}) {
    EXPECT_GRADCHECK(
        [&](const std::vector<fk::Tensor>& in) {
          return interpolate(s.x.with_features(in[0]), q, mode);
        },
        (std::vector<fk::Tensor>{s.x.F()}));
  }
}

TEST(MinkowskiInterpolation, ThreadInvariant) {
  auto s = random_sparse(3, 3000, 4, 5, fk::DType::F32, nullptr, 10);
  fk::Tensor q = pts(random_points(s, 3, 5000, 10, 6), 4);
  feature_ops::expect_thread_invariant([&] {
    fk::Tensor f = s.x.F().detach().set_requires_grad(true);
    fk::Tensor o = interpolate(s.x.with_features(f), q);
    fk::sum(fk::mul(o, o)).backward();
    return std::vector<fk::Tensor>{o, f.grad()};
  });
}

TEST(MinkowskiInterpolation, BadPoints) {
  SparseTensor x = line();
  feature_ops::expect_error(
      [&] {
        interpolate(x, pts({0, 1, 2}, 3));
      },
      {"points of shape Q x 2", "[1, 3]"});
  feature_ops::expect_error(
      [&] {
        interpolate(x, fk::from_vector(std::vector<int32_t>{0, 1}, fk::Dims{1, 2}));
      },
      {"f32 or f64 points", "i32"});
  feature_ops::expect_error(
      [&] {
        interpolate(x, pts({NAN, 1}, 2));
      },
      {"finite batch index", "point 0"});
  feature_ops::expect_error(
      [&] {
        interpolate(x, pts({0, 1, 0, NAN}, 2));
      },
      {"finite coordinates", "point 1"});
  feature_ops::expect_error(
      [&] {
        interpolate(SparseTensor(), pts({0, 1}, 2));
      },
      {"a sparse tensor", "empty handle"});
  feature_ops::expect_error(
      [&] {
        interpolate(x, pts({2147483648.0, 0}, 2));
      },
      {"finite batch index within int32", "point 0"});
}

// Any int32 batch index is a batch, the largest too (a strict bound refused
// 2^31 - 1, which the tensor itself holds).
TEST(MinkowskiInterpolation, TheLargestInt32BatchIndexIsABatch) {
  SparseTensor x(fk::from_vector(std::vector<double>{5}, fk::Dims{1, 1}),
                 fk::from_vector(std::vector<int32_t>{2147483647, 3}, fk::Dims{1, 2}));
  fk::test::expect_close(interpolate(x, pts({2147483647.0, 3, 0, 3}, 2)), {5, 0}, 0);
}

}  // namespace
}  // namespace minkowski
