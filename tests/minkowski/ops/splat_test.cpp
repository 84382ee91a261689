// Splatting: a 1-D case pinned by hand, the map and features against a plain
// loop over every point and corner (3-D, negative coordinates, two batch
// items, tensor stride 2), the adjoint dot test with interpolation, gradients,
// the pure pair, dtypes, thread invariance and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "minkowski/ops/feature_ops_util.h"

namespace minkowski {
namespace {

fk::Tensor pts(const std::vector<double>& v, int w) {
  return fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size()) / w, w});
}

TEST(MinkowskiSplat, OneDimensionByHand) {
  // Batch 0: 0.25 (f 4) -> voxel 0 gets 3, voxel 1 gets 1; -1.5 (f 2) ->
  // voxels -2 and -1 get 1 each; 1.0 (f 8) sits on voxel 1 (weight 1) and
  // still adds voxel 2 (weight 0). Batch 1: 0.5 (f 6) -> voxels 0 and 1 get 3.
  fk::Tensor q = pts({0, 0.25, 0, -1.5, 0, 1.0, 1, 0.5}, 2);
  fk::Tensor f = fk::from_vector(std::vector<double>{4, 2, 8, 6}, fk::Dims{4, 1});
  SparseTensor s = splat(TensorField(f, q));
  EXPECT_EQ(s.C().to_vector<int32_t>(),
            (std::vector<int32_t>{0, 0, 0, 1, 0, -2, 0, -1, 0, 2, 1, 0, 1, 1}));
  fk::test::expect_close(s.F(), {3, 1 + 8, 1, 1, 0, 3, 3}, 1e-15);
  EXPECT_EQ(s.tensor_stride(), (std::vector<int32_t>{1}));
}

// Plain loop: every corner of every point, accumulated per coordinate; the
// corners in order of first occurrence.
struct Reference {
  std::vector<std::vector<int32_t>> order;
  std::map<std::vector<int32_t>, std::vector<double>> value;
};
Reference reference(const std::vector<double>& q, const std::vector<double>& f, int d, int c,
                    int ts) {
  Reference r;
  const size_t n = q.size() / (d + 1);
  for (size_t i = 0; i < n; ++i)
    for (int bits = 0; bits < (1 << d); ++bits) {
      std::vector<int32_t> at{static_cast<int32_t>(q[i * (d + 1)])};
      double w = 1;
      for (int a = 0; a < d; ++a) {
        const double x = q[i * (d + 1) + 1 + a];
        const double lo = std::floor(x / ts) * ts, corner = lo + ((bits >> a) & 1) * ts;
        at.push_back(static_cast<int32_t>(corner));
        w *= 1 - std::abs(x - corner) / ts;
      }
      auto [it, fresh] = r.value.try_emplace(at, std::vector<double>(c, 0.0));
      if (fresh) r.order.push_back(at);
      for (int k = 0; k < c; ++k) it->second[k] += w * f[i * c + k];
    }
  return r;
}

std::vector<double> random_points(int d, int n, double span, unsigned seed) {
  auto u = fk::test::random_values(static_cast<int64_t>(n) * d, -span, span, seed);
  std::vector<double> q;
  for (int i = 0; i < n; ++i) {
    q.push_back(i % 2);
    for (int a = 0; a < d; ++a) q.push_back(i % 7 == 0 ? std::round(u[i * d + a]) : u[i * d + a]);
  }
  return q;
}

TEST(MinkowskiSplat, MatchesPlainLoopIn3D) {
  const int d = 3, c = 2, n = 150, ts = 2;
  auto q = random_points(d, n, 5.0, 3);
  auto f = fk::test::random_values(n * c, -1, 1, 4);
  Reference want = reference(q, f, d, c, ts);
  SparseTensor s = splat(TensorField(fk::from_vector(f, fk::Dims{n, c}), pts(q, d + 1)), {ts});
  ASSERT_EQ(s.size(), static_cast<int64_t>(want.order.size()));
  auto coords = s.C().to_vector<int32_t>();
  auto got = s.F().to_vector<double>();
  for (int64_t r = 0; r < s.size(); ++r) {
    std::vector<int32_t> at(coords.begin() + r * (d + 1), coords.begin() + (r + 1) * (d + 1));
    ASSERT_EQ(at, want.order[r]) << "row " << r;
    for (int k = 0; k < c; ++k) EXPECT_NEAR(got[r * c + k], want.value[at][k], 1e-12);
  }
  EXPECT_EQ(s.tensor_stride(), (std::vector<int32_t>{ts, ts, ts}));
  // In an existing manager, next to a map of the same stride.
  auto mgr = std::make_shared<CoordinateManager>(d);
  SparseTensor first =
      splat(TensorField(fk::from_vector(f, fk::Dims{n, c}), pts(q, d + 1)), {ts}, mgr);
  SparseTensor second =
      splat(TensorField(fk::from_vector(f, fk::Dims{n, c}), pts(q, d + 1)), {ts}, mgr);
  EXPECT_NE(first.key(), second.key());
  EXPECT_EQ(mgr->num_maps(), 2);
  EXPECT_TRUE(feature_ops::same_bits(first.F(), second.F()));
}

// Splat is interpolation's transpose on the splat map: <interp(x), y> =
// <x, splat(y)> for x on that map and y on the points.
TEST(MinkowskiSplat, AdjointOfInterpolation) {
  for (int ts : {1, 2}) {
    const int d = 2, c = 3, n = 80;
    fk::Tensor q = pts(random_points(d, n, 4.0, 5), d + 1);
    fk::Tensor y = fk::test::random_tensor({n, c}, fk::DType::F64, -1, 1, 6);
    SparseTensor sy = splat(TensorField(y, q), {ts});
    fk::Tensor x = fk::test::random_tensor({sy.size(), c}, fk::DType::F64, -1, 1, 7);
    fk::Tensor ix = interpolate(sy.with_features(x), q);
    const double lhs = fk::sum(fk::mul(ix, y)).item();
    const double rhs = fk::sum(fk::mul(x, sy.F())).item();
    EXPECT_NEAR(lhs, rhs, 1e-12 * std::abs(lhs)) << "ts " << ts;
  }
}

TEST(MinkowskiSplat, GradcheckAndThePurePair) {
  const int d = 2, c = 2, n = 15;
  fk::Tensor q = pts(random_points(d, n, 2.5, 8), d + 1);
  fk::Tensor f = fk::test::random_tensor({n, c}, fk::DType::F64, -1, 1, 9);
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) { return splat(TensorField(in[0], q), {2}).F(); },
      (std::vector<fk::Tensor>{f}));
  // The pair gives what the autograd node gives.
  fk::Tensor fg = f.detach().set_requires_grad(true);
  SparseTensor s = splat(TensorField(fg, q));
  fk::Tensor g = fk::test::random_tensor({s.size(), c}, fk::DType::F64, -1, 1, 10);
  fk::sum(fk::mul(s.F(), g)).backward();
  SplatMap m = splat_map(q);
  EXPECT_TRUE(feature_ops::same_bits(splat_forward(m, f), s.F()));
  EXPECT_TRUE(feature_ops::same_bits(splat_backward(g, m, f), fg.grad()));
}

TEST(MinkowskiSplat, Dtypes) {
  const int d = 3, c = 4, n = 60;
  fk::Tensor q = pts(random_points(d, n, 3.0, 11), d + 1);
  fk::Tensor f = fk::test::random_tensor({n, c}, fk::DType::F64, -1, 1, 12);
  SparseTensor want = splat(TensorField(f, q));
  for (fk::DType t : {fk::DType::F32, fk::DType::F16, fk::DType::BF16}) {
    SparseTensor s = splat(TensorField(f.to(t), q.to(fk::DType::F32)));
    EXPECT_EQ(s.F().dtype(), t);
    // |out| <= 8 rows' worth of weights summing to at most 8 here.
    fk::test::expect_close(s.F(), want.F().to_vector<double>(), 4 * feature_ops::tolerance(t));
  }
}

TEST(MinkowskiSplat, ThreadInvariant) {
  const int d = 3, c = 4, n = 6000;
  fk::Tensor q = pts(random_points(d, n, 8.0, 13), d + 1);
  fk::Tensor f0 = fk::test::random_tensor({n, c}, fk::DType::F32, -1, 1, 14);
  feature_ops::expect_thread_invariant([&] {
    fk::Tensor f = f0.detach().set_requires_grad(true);
    SparseTensor s = splat(TensorField(f, q));
    fk::sum(fk::mul(s.F(), s.F())).backward();
    return std::vector<fk::Tensor>{s.F(), s.C(), f.grad()};
  });
}

TEST(MinkowskiSplat, BadInput) {
  fk::Tensor q = pts({0, 0.5, 1, 1.5}, 2);
  fk::Tensor f = fk::ones({2, 1}, {fk::DType::F64});
  feature_ops::expect_error([&] { splat_map(fk::ones({3}, {fk::DType::F64})); },
                            {"points of shape N x (1+D)", "[3]"});
  feature_ops::expect_error(
      [&] {
        splat_map(fk::from_vector(std::vector<int32_t>{0, 1}, fk::Dims{1, 2}));
      },
      {"f32 or f64 points", "i32"});
  feature_ops::expect_error(
      [&] {
        splat_map(pts({INFINITY, 1}, 2));
      },
      {"finite batch index", "point 0"});
  feature_ops::expect_error(
      [&] {
        splat_map(pts({0, 1, 0, INFINITY}, 2));
      },
      {"finite coordinates", "point 1"});
  feature_ops::expect_error([&] { splat_map(q, {1}, std::make_shared<CoordinateManager>(3)); },
                            {"coordinate manager of dimension 1", "dimension 3"});
  feature_ops::expect_error([&] { splat_map(q, {0}); }, {"tensor stride"});
  SplatMap m = splat_map(q);
  feature_ops::expect_error(
      [&] {
        splat_forward(m, fk::ones({3, 1}, {fk::DType::F64}));
      },
      {"N x C with N = 2 points", "[3, 1]"});
  feature_ops::expect_error(
      [&] {
        splat_forward(m, fk::from_vector(std::vector<int32_t>{1, 2}, fk::Dims{2, 1}));
      },
      {"f64, f32, f16 or bf16 features", "i32"});
  feature_ops::expect_error(
      [&] {
        splat_backward(fk::ones({1, 1}, {fk::DType::F64}), m, f);
      },
      {"a gradient of shape 4 x 1", "[1, 1]"});
}

}  // namespace
}  // namespace minkowski
