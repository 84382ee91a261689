// RadonOperator on a 3-D domain (rotation about z): the 2-D map per slice,
// its exact adjoint, and its accuracy against exact and plain-loop line
// integrals of analytic 3-D scenes (ct3d_data.h); FBP per slice.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "fk/factory.h"
#include "fk/random.h"
#include "fk/testing.h"
#include "nefi/baselines/fbp.h"
#include "nefi/instances/ct3d_data.h"
#include "nefi/operators/operator_checks.h"
#include "nefi/operators/radon.h"
#include "nefi/solve/metrics.h"

namespace {

using nefi::test::dot;
using nefi::test::rnd;

// Slice k of the 3-D projection is the 2-D operator applied to slice k.
TEST(NefiRadon3d, EachSliceIsThe2DProjection) {
  const nefi::RadonGeometry g{5, 2.5, 2, 2};
  nefi::RadonOperator op3(nefi::Domain({9, 9, 4}, {1.3, 1.3, 0.7}), g);
  nefi::RadonOperator op2(nefi::Domain({9, 9}, {1.3, 1.3}), g);
  EXPECT_EQ(op3.kind(), "radon3d");
  EXPECT_EQ(op3.output_shape({9, 9, 4}), fk::Dims({5, 18, 4}));
  const fk::Tensor x = rnd({9, 9, 4}, 1);
  const auto y = op3.apply(x).to_vector<double>();
  for (int64_t k = 0; k < 4; ++k) {
    const auto yk = op2.apply(x.select(2, k).contiguous()).to_vector<double>();
    for (size_t r = 0; r < yk.size(); ++r) EXPECT_NEAR(y[r * 4 + k], yk[r], 1e-14);
  }
}

TEST(NefiRadon3d, AdjointGradcheckBatchAndBadShapes) {
  nefi::RadonOperator op(nefi::Domain({7, 7, 5}, {1.5, 1.5, 2.0}), {4, std::numbers::pi, 1, 2});
  const fk::Tensor x = rnd({7, 7, 5}, 2), y = rnd(op.output_shape({7, 7, 5}), 3);
  const double lhs = dot(op.apply(x), y), rhs = dot(x, op.vjp(x, y));
  EXPECT_NEAR(lhs, rhs, 1e-13 * (1 + std::abs(lhs)));
  nefi::RadonOperator small(nefi::Domain({4, 4, 3}), {3, std::numbers::pi, 1, 1});
  fk::Tensor a = rnd({4, 4, 3}, 4);
  a.set_requires_grad(true);
  auto fn = [&](const std::vector<fk::Tensor>& in) { return small.apply(in[0]); };
  EXPECT_EQ(fk::testing::gradcheck(fn, {a}), "");
  const fk::Tensor xb = rnd({2, 4, 4, 3}, 5);
  const auto yb = small.apply(xb).to_vector<double>();
  for (int64_t b = 0; b < 2; ++b) {
    const auto yi = small.apply(xb.select(0, b).contiguous()).to_vector<double>();
    for (size_t p = 0; p < yi.size(); ++p) EXPECT_NEAR(yb[b * yi.size() + p], yi[p], 1e-15);
  }
  const auto coarse = small.at_resolution({2, 2, 2});
  EXPECT_EQ(coarse->output_shape({2, 2, 2}), fk::Dims({3, 2, 2}));
  EXPECT_THROW(small.apply(rnd({4, 4, 2}, 1)), fk::Error);
  EXPECT_THROW(small.apply(rnd({4, 4}, 1)), fk::Error);
  EXPECT_THROW(nefi::RadonOperator(nefi::Domain({4, 5, 3}), {}), fk::Error);
  EXPECT_THROW(nefi::RadonOperator(nefi::Domain({4, 4, 4, 4}), {}), fk::Error);
}

// The generator's closed-form line integral of a plane cut against a plain
// loop: midpoint sums of the 3-D scene's value along the ray.
TEST(NefiRadon3d, ExactLineIntegralsMatchAPlainLoop) {
  const nefi::ct3d::Scene sc = nefi::ct3d::draw_scene("ellipsoids", 1.0, 0.8, 0);
  for (double th : {0.0, 0.4, 2.0})
    for (double s : {-0.31, 0.0, 0.17})
      for (double z : {0.27, 0.4, 0.61}) {
        const double e0 = std::cos(th), e1 = std::sin(th);
        const int m = 20000;
        double loop = 0;
        for (int k = 0; k < m; ++k) {
          const double t = (k + 0.5) / m * 1.5 - 0.75;
          loop += sc.at({0.5 + s * e0 - t * e1, 0.5 + s * e1 + t * e0, z}) * 1.5 / m;
        }
        EXPECT_NEAR(sc.slice(z).line_integral(th, s, 1.0), loop, 2e-3)
            << th << " " << s << " " << z;
      }
  EXPECT_THROW(nefi::ct3d::draw_scene("cubes", 1.0, 1.0, 0), fk::Error);
}

// The discrete projection of a smooth object's cell averages approaches the
// exact bin- and row-averaged line integrals.
TEST(NefiRadon3d, ProjectsASmoothObjectLikeTheExactLineIntegrals) {
  nefi::ct3d::Scene sc;
  sc.blobs.push_back({1.0, {0.45, 0.55, 0.5}, 0.09});
  const int64_t n = 48, nz = 12, views = 6;
  nefi::RadonOperator op(nefi::Domain({n, n, nz}, {1.0, 1.0, 1.0}),
                         {views, std::numbers::pi, 1, 1});
  const auto vol = nefi::ct3d::render(sc, n, nz, 3, 1.0, 1.0);
  const auto y = op.apply(fk::from_vector(vol, {n, n, nz})).to_vector<double>();
  const auto exact = nefi::ct3d::sinogram(sc, views, std::numbers::pi, n, 4, nz, 4, 1.0, 1.0);
  double err = 0, scale = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    err = std::max(err, std::abs(y[i] - exact[i]));
    scale = std::max(scale, exact[i]);
  }
  EXPECT_LT(err, 0.01 * scale);
}

// FBP per slice inverts dense views of a smooth object and equals the 2-D
// FBP of each slice's sinogram.
TEST(NefiRadon3d, FilteredBackProjectionPerSlice) {
  nefi::ct3d::Scene sc;
  sc.blobs.push_back({0.8, {0.4, 0.55, 0.5}, 0.1});
  sc.blobs.push_back({0.5, {0.6, 0.4, 0.4}, 0.07});
  const int64_t n = 40, nz = 6, views = 80;
  const auto y = nefi::ct3d::sinogram(sc, views, std::numbers::pi, n, 2, nz, 2, 1.0, 1.0);
  const auto x = nefi::filtered_back_projection_slices(y, views, n, nz, std::numbers::pi, n, 1.0);
  const auto gt = nefi::ct3d::render(sc, n, nz, 2, 1.0, 1.0);
  EXPECT_GT(nefi::psnr(fk::from_vector(x, {n, n, nz}), fk::from_vector(gt, {n, n, nz})), 30.0);
  std::vector<double> plane(views * n);
  for (size_t r = 0; r < plane.size(); ++r) plane[r] = y[r * nz + 2];
  const auto x2 = nefi::filtered_back_projection(plane, views, n, std::numbers::pi, n, 1.0);
  for (int64_t p = 0; p < n * n; ++p) EXPECT_NEAR(x[p * nz + 2], x2[p], 1e-14);
  EXPECT_THROW(nefi::filtered_back_projection_slices(y, views, n, nz + 1, 1.0, n, 1.0), fk::Error);
}

}  // namespace
