// ParametricField: its shapes are the written-out formulas (a rotated
// ellipse's axes land on q = 1, a star's edge on its harmonics, a polygon's
// straight between its vertices), gradients match finite differences in f64
// for every family and dimension, the field starts at the heads'
// value and keeps its parameters across grids, bad configurations are
// refused by name, and a scene of two ellipses is recovered from a sixth of
// its pixels where a grid cannot fill the rest.
#include "nefi/field/parametric_field.h"
#include "nefi/field/polygon_outline.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fk/autograd.h"
#include "fk/cuda/runtime.h"
#include "fk/device.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "fk/test_util.h"
#include "fk/testing.h"
#include "fk/thread_count.h"
#include "nefi/field/grid_field.h"
#include "nefi/losses/data_losses.h"
#include "nefi/operators/pointwise.h"
#include "nefi/solve/metrics.h"
#include "nefi/solve/solver.h"

namespace {

std::vector<nefi::HeadPtr> one_head(double init = 0.0) {
  return {nefi::identity_head("x", init)};
}

// One 2-D shape: asinh(amplitude), centre, M = R(theta) diag(1 / ra, 1 / rb),
// whose columns are the principal axes scaled by the radii.
std::vector<double> rotated(double amp, double cx, double cy, double ra, double rb, double theta) {
  const double c = std::cos(theta), s = std::sin(theta);
  return {std::asinh(amp), cx, cy, c / ra, -s / rb, s / ra, c / rb};
}

TEST(NefiParametricShapes, ARotatedShapesAxesLieOnItsUnitLevel) {
  const double ra = 0.5, rb = 0.2, th = 0.6, cx = 0.1, cy = -0.2;
  // Points: the centre, the ends of both axes, a far corner.
  const double ux = std::cos(th), uy = std::sin(th);
  const std::vector<double> pts = {cx,           cy,           cx + ra * ux, cy + ra * uy,
                                   cx - rb * uy, cy + rb * ux, 0.95,         0.95};
  std::vector<double> shapes = rotated(2.0, cx, cy, ra, rb, th);
  const std::vector<double> second = rotated(-1.0, -0.7, 0.7, 0.1, 0.1, 0.0);
  shapes.insert(shapes.end(), second.begin(), second.end());  // channel 0, K = 2
  const fk::Tensor coords = fk::from_vector(pts, {4, 2});
  const fk::Tensor s = fk::from_vector(shapes, {1, 2, 7});
  const fk::Tensor b = fk::from_vector(std::vector<double>{0.5}, {1});
  const auto blob = nefi::parametric_shapes(coords, s, b, "blobs", 0.1).to_vector<double>();
  auto second_at = [](double x, double y) {  // the second blob
    return -std::exp(-0.5 * (std::pow(x + 0.7, 2) + std::pow(y - 0.7, 2)) / 0.01);
  };
  EXPECT_NEAR(blob[0], 0.5 + 2.0 + second_at(cx, cy), 1e-12);
  EXPECT_NEAR(blob[1], 0.5 + 2.0 * std::exp(-0.5) + second_at(pts[2], pts[3]), 1e-12);
  EXPECT_NEAR(blob[2], 0.5 + 2.0 * std::exp(-0.5) + second_at(pts[4], pts[5]), 1e-12);
  const auto ell = nefi::parametric_shapes(coords, s, b, "ellipses", 0.05).to_vector<double>();
  const double inside = 1 / (1 + std::exp(-1 / 0.1));
  EXPECT_NEAR(ell[0], 0.5 + 2.0 * inside, 1e-9);
  EXPECT_NEAR(ell[1], 0.5 + 1.0, 1e-9);  // the boundary: sigmoid(0)
  EXPECT_NEAR(ell[2], 0.5 + 1.0, 1e-9);
  EXPECT_NEAR(ell[3], 0.5, 1e-9);  // outside both
}

TEST(NefiParametricShapes, GradientsMatchFiniteDifferences) {
  for (const std::string family : {"blobs", "ellipses", "stars", "polygons"})
    for (int d = family == "stars" || family == "polygons" ? 2 : 1;
         d <= (family == "polygons" ? 2 : 3); ++d) {
      fk::Generator gen(40 + d);
      // Stars: degrees 3..5 with their gates part open (their gradient is
      // scaled); polygons: 5 vertices, the outline's gate part open.
      const bool stars = family == "stars", polygons = family == "polygons";
      const std::vector<double> gates = stars      ? std::vector<double>{1.0, 0.6, 0.3}
                                        : polygons ? std::vector<double>{0.7}
                                                   : std::vector<double>{};
      const int P = nefi::parametric_shape_size(d, stars ? 5 : 0, polygons ? 5 : 0);  // L = 5
      const fk::Tensor coords = fk::uniform({6, d}, -1, 1, {fk::DType::F64}, &gen);
      std::vector<double> sv =
          fk::uniform({2, 2, P}, -0.6, 0.6, {fk::DType::F64}, &gen).to_vector<double>();
      for (int ck = 0; ck < 4; ++ck)  // M near 2 I: shapes of radius ~0.5
        for (int a = 0; a < d; ++a) sv[ck * P + 1 + d + a * d + a] += 2.0;
      fk::Tensor s = fk::from_vector(sv, {2, 2, P});
      fk::Tensor b = fk::from_vector(std::vector<double>{0.3, -0.2}, {2});
      s.set_requires_grad(true);
      b.set_requires_grad(true);
      const std::string err = fk::testing::gradcheck(
          [&](const std::vector<fk::Tensor>& in) {
            return nefi::parametric_shapes(coords, in[0], in[1], family, 0.2, gates);
          },
          {s, b});
      EXPECT_EQ(err, "") << family << " " << d << "-D";
    }
}

// Every family trains on a device, over a layered background too; a device
// this process cannot use is refused by name.
TEST(NefiParametricField, EveryFamilyHasADevicePath) {
  const fk::Dims shape{8, 8};
  for (const std::string family : {"blobs", "ellipses", "stars", "polygons"})
    for (const bool layered : {false, true}) {
      nefi::ParametricConfig c;
      c.family = family;
      c.count = 2;
      if (layered) c.layers = nefi::LayeredConfig{};
      nefi::ParametricField f(shape, one_head(), c);
      EXPECT_TRUE(f.has_device_path()) << f.kind();
      EXPECT_NO_THROW(f.to(fk::kCPU));
      // A device this process cannot use is refused, naming it.
      const fk::Device absent = fk::cuda_device(fk::cuda::device_count());
      const std::string e = fk::test::error_of([&] { f.to(absent); });
      EXPECT_NE(e.find(absent.str()), std::string::npos) << e;
    }
}

// A 2-D star of degree 5 with one harmonic, h = c sqrt(2) cos(3 theta):
// its edge (g = 1/2) lies at radius r exp(h) along every direction, and with
// its degrees shut it is the ellipse of the same M.
TEST(NefiParametricShapes, AStarsEdgeFollowsItsHarmonics) {
  const double r = 0.4, c = 0.15, cx = 0.1, cy = -0.05;
  std::vector<double> shape = {std::asinh(2.0), cx, cy, 1 / r, 0, 0, 1 / r};
  std::vector<double> h(2 * 3, 0.0);
  h[0] = c;  // degree 3, cos
  shape.insert(shape.end(), h.begin(), h.end());
  std::vector<double> pts;
  for (double th : {0.0, 0.5, 1.3, 2.9, 4.4}) {
    const double edge = r * std::exp(c * std::sqrt(2.0) * std::cos(3 * th));
    pts.push_back(cx + edge * std::cos(th));
    pts.push_back(cy + edge * std::sin(th));
  }
  const fk::Tensor coords = fk::from_vector(pts, {5, 2});
  const fk::Tensor s = fk::from_vector(shape, {1, 1, 13});
  const fk::Tensor b = fk::from_vector(std::vector<double>{0.5}, {1});
  for (double v :
       nefi::parametric_shapes(coords, s, b, "stars", 0.05, {1, 1, 1}).to_vector<double>())
    EXPECT_NEAR(v, 0.5 + 1.0, 1e-9);
  const auto shut =
      nefi::parametric_shapes(coords, s, b, "stars", 0.05, {0, 1, 1}).to_vector<double>();
  const auto ellipse =
      nefi::parametric_shapes(
          coords, fk::from_vector(std::vector<double>(shape.begin(), shape.begin() + 7), {1, 1, 7}),
          b, "ellipses", 0.05)
          .to_vector<double>();
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(shut[i], ellipse[i], 1e-14) << i;
}

// A polygon of 4 vertices at log radii c: its edge (g = 1/2) runs straight
// from vertex to vertex, at every point between them; with its gate shut it
// is the ellipse of the same M, and at a half-open gate its radius along a
// direction is the ellipse's times (the polygon's / the ellipse's)^(1/2).
TEST(NefiParametricShapes, APolygonsEdgeIsStraightBetweenItsVertices) {
  const double r = 0.4, cx = 0.1, cy = -0.05;
  const std::vector<double> c = {0.1, -0.2, 0.3, 0.0};
  std::vector<double> shape = {std::asinh(2.0), cx, cy, 1 / r, 0, 0, 1 / r};
  shape.insert(shape.end(), c.begin(), c.end());
  std::vector<double> pts, half_pts;
  for (int j = 0; j < 4; ++j) {
    const double a0 = j * M_PI / 2, a1 = (j + 1) * M_PI / 2;
    const double x0 = r * std::exp(c[j]) * std::cos(a0), y0 = r * std::exp(c[j]) * std::sin(a0);
    const double x1 = r * std::exp(c[(j + 1) % 4]) * std::cos(a1);
    const double y1 = r * std::exp(c[(j + 1) % 4]) * std::sin(a1);
    for (double t : {0.0, 0.3, 0.8}) {
      const double x = (1 - t) * x0 + t * x1, y = (1 - t) * y0 + t * y1;
      pts.push_back(cx + x);
      pts.push_back(cy + y);
      const double scale = std::pow(std::hypot(x, y) / r, 0.5);  // gate 1/2: exp(h / 2)
      half_pts.push_back(cx + r * scale * x / std::hypot(x, y));
      half_pts.push_back(cy + r * scale * y / std::hypot(x, y));
    }
  }
  const fk::Tensor s = fk::from_vector(shape, {1, 1, 11});
  const fk::Tensor b = fk::from_vector(std::vector<double>{0.5}, {1});
  const auto at = [&](const std::vector<double>& p, double gate) {
    return nefi::parametric_shapes(fk::from_vector(p, {12, 2}), s, b, "polygons", 0.05, {gate})
        .to_vector<double>();
  };
  for (double v : at(pts, 1.0)) EXPECT_NEAR(v, 0.5 + 1.0, 1e-9);
  for (double v : at(half_pts, 0.5)) EXPECT_NEAR(v, 0.5 + 1.0, 1e-9);
  const fk::Tensor ellipse_shape =
      fk::from_vector(std::vector<double>(shape.begin(), shape.begin() + 7), {1, 1, 7});
  const auto shut = at(pts, 0.0);
  const auto ellipse =
      nefi::parametric_shapes(fk::from_vector(pts, {12, 2}), ellipse_shape, b, "ellipses", 0.05)
          .to_vector<double>();
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(shut[i], ellipse[i], 1e-14) << i;
  // A diverged shape gives NaN, reading no sector.
  const double nan_u[2] = {std::nan(""), 0.5}, c4[4] = {0, 0, 0, 0};
  int vertex = -1;
  double dh_du[2], dh_dc[2];
  EXPECT_TRUE(std::isnan(nefi::polygon_log_radius(4, nan_u, c4, dh_du, &vertex, dh_dc)));
  EXPECT_EQ(vertex, 0);
  // The start: the regular polygon of the unit circle's area.
  for (int v : {3, 6, 16}) {
    const double r = std::exp(nefi::polygon_start_log_radius(v));
    EXPECT_NEAR(0.5 * v * r * r * std::sin(2 * M_PI / v), M_PI, 1e-12) << v;
  }
}

// Over several of its point chunks the backward (ellipses, stars) gives the same bits at one
// and at three threads, and one entry matches a central difference.
TEST(NefiParametricShapes, TheBackwardIsTheSameAtAnyThreadCount) {
  fk::Generator gen(3);
  const fk::Tensor coords = fk::uniform({5000, 2}, -1, 1, {fk::DType::F64}, &gen);
  std::vector<double> sv =
      fk::uniform({1, 3, 7}, -0.5, 0.5, {fk::DType::F64}, &gen).to_vector<double>();
  for (int k = 0; k < 3; ++k) sv[k * 7 + 3] = sv[k * 7 + 6] = 3.0;
  const fk::Tensor w = fk::uniform({5000, 1}, -1, 1, {fk::DType::F64}, &gen);
  auto loss = [&](const fk::Tensor& s) {
    const fk::Tensor b = fk::from_vector(std::vector<double>{0.1}, {1});
    return fk::sum(fk::mul(nefi::parametric_shapes(coords, s, b, "ellipses", 0.2), w));
  };
  auto grad_at = [&](int threads) {
    const fk::test::ThreadCount t(threads);
    fk::Tensor s = fk::from_vector(sv, {1, 3, 7});
    s.set_requires_grad(true);
    loss(s).backward();
    return s.grad().to_vector<double>();
  };
  const std::vector<double> one = grad_at(1), three = grad_at(3);
  EXPECT_EQ(one, three);
  const double h = 1e-6;
  std::vector<double> up = sv, down = sv;
  up[4] += h;  // M[0][0] of shape 0
  down[4] -= h;
  const double fd = (loss(fk::from_vector(up, {1, 3, 7})).to_vector<double>()[0] -
                     loss(fk::from_vector(down, {1, 3, 7})).to_vector<double>()[0]) /
                    (2 * h);
  EXPECT_NEAR(one[4], fd, 1e-6 * (1 + std::abs(fd)));
  // Stars of degree 4 (gates part open) and polygons of 4 vertices (each
  // point adding to two): their outline's coefficients too, 4 per shape.
  std::vector<double> st =
      fk::uniform({1, 3, 11}, -0.3, 0.3, {fk::DType::F64}, &gen).to_vector<double>();
  for (int k = 0; k < 3; ++k) st[k * 11 + 3] = st[k * 11 + 6] = 3.0;
  auto outline_grad_at = [&](const char* family, const std::vector<double>& gates, int threads) {
    const fk::test::ThreadCount t(threads);
    fk::Tensor s = fk::from_vector(st, {1, 3, 11});
    s.set_requires_grad(true);
    const fk::Tensor b = fk::from_vector(std::vector<double>{0.1}, {1});
    fk::sum(fk::mul(nefi::parametric_shapes(coords, s, b, family, 0.2, gates), w)).backward();
    return s.grad().to_vector<double>();
  };
  EXPECT_EQ(outline_grad_at("stars", {1.0, 0.5}, 1), outline_grad_at("stars", {1.0, 0.5}, 3));
  EXPECT_EQ(outline_grad_at("polygons", {0.8}, 1), outline_grad_at("polygons", {0.8}, 3));
}

TEST(NefiParametricField, StartsAtTheHeadsValueOnEveryGridAndKeepsItsShapes) {
  for (const char* family : {"blobs", "ellipses"}) {
    nefi::ParametricConfig cfg;
    cfg.family = family;
    cfg.count = 5;
    nefi::ParametricField f({16, 12}, one_head(-0.7), cfg, 3);
    EXPECT_EQ(f.n_parameters(), 1 * 5 * 7 + 1);
    EXPECT_EQ(f.kind(), family);
    for (double v : f.forward(nefi::Domain({16, 12}), 0.0).at("x").to_vector<double>())
      EXPECT_NEAR(v, -0.7, 1e-6);
    // Move the shapes off zero amplitude; a coarse grid sees the same
    // function at its own cell centres (the field has no grid).
    {
      fk::autograd::NoGradGuard ng;
      fk::Tensor s = f.params().raw(0);
      std::vector<float> v = s.to_vector<float>();
      for (int k = 0; k < 5; ++k) v[k * 7] = 0.3f * static_cast<float>(k + 1);  // alpha
      s.copy_(fk::from_vector(v, s.shape()));
    }
    const std::vector<float> before = f.params().flat().to_vector<float>();
    f.on_stage_start(nefi::Domain({8, 6}));
    EXPECT_EQ(f.params().flat().to_vector<float>(), before);
    const nefi::Domain coarse({8, 6});
    const auto got = f.forward(coarse, 0.5).at("x").to_vector<double>();
    const fk::Tensor pts = coarse.coords(fk::DType::F64).reshape({48, 2});
    const auto want =
        nefi::parametric_shapes(pts, f.params().raw(0).to(fk::DType::F64),
                                f.params().raw(1).to(fk::DType::F64), family, f.eps(0.5))
            .to_vector<double>();
    for (int i = 0; i < 48; ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << family << " " << i;
  }
  // The centres start in distinct lattice cells: no two shapes coincide.
  nefi::ParametricConfig cfg;
  cfg.count = 9;
  nefi::ParametricField f({10, 10}, one_head(), cfg, 1);
  const auto v = f.params().raw(0).to_vector<double>();
  for (int i = 0; i < 9; ++i)
    for (int j = 0; j < i; ++j)
      EXPECT_GT(std::hypot(v[i * 7 + 1] - v[j * 7 + 1], v[i * 7 + 2] - v[j * 7 + 2]), 0.3);
}

TEST(NefiParametricField, RefusesBadConfigurationsByName) {
  auto with = [](const char* family, int count, double eps_end, const fk::Dims& shape) {
    nefi::ParametricConfig cfg;
    cfg.family = family;
    cfg.count = count;
    cfg.eps_end = eps_end;
    return fk::test::error_of([&] { nefi::ParametricField(shape, one_head(), cfg); });
  };
  EXPECT_NE(with("squares", 4, 0.02, {8}).find("family blobs, ellipses, stars or polygons"),
            std::string::npos);
  EXPECT_NE(with("polygons", 4, 0.02, {8, 8, 8}).find("polygons on a 2-D domain"),
            std::string::npos);
  nefi::ParametricConfig two;
  two.family = "polygons";
  two.vertices = 2;
  EXPECT_NE(fk::test::error_of([&] {
              nefi::ParametricField({8, 8}, one_head(), two);
            }).find("polygons of 3 to 16 vertices, got 2"),
            std::string::npos);
  EXPECT_NE(with("stars", 4, 0.02, {8}).find("stars on a 2- or 3-D domain"), std::string::npos);
  nefi::ParametricConfig many;
  many.family = "stars";
  many.harmonics = 9;
  EXPECT_NE(fk::test::error_of([&] {
              nefi::ParametricField({8, 8}, one_head(), many);
            }).find("an outline of degree 3 to 8"),
            std::string::npos);
  const fk::Tensor pts = fk::zeros({3, 2}, {fk::DType::F64});
  const fk::Tensor b1 = fk::zeros({1}, {fk::DType::F64});
  EXPECT_NE(fk::test::error_of([&] {
              nefi::parametric_shapes(pts, fk::zeros({1, 1, 7}, {fk::DType::F64}), b1, "ellipses",
                                      0.1, {1.0});
            }).find("degree gates for stars and polygons only"),
            std::string::npos);
  // polygons: one gate, coordinates in 2-D.
  EXPECT_NE(fk::test::error_of([&] {
              nefi::parametric_shapes(pts, fk::zeros({1, 1, 12}, {fk::DType::F64}), b1, "polygons",
                                      0.1, {1.0, 1.0});
            }).find("polygons with one outline gate in [0, 1], got 2 gates"),
            std::string::npos);
  EXPECT_NE(fk::test::error_of([&] {
              nefi::parametric_shapes(fk::zeros({3, 3}, {fk::DType::F64}),
                                      fk::zeros({1, 1, 12}, {fk::DType::F64}), b1, "polygons", 0.1,
                                      {1.0});
            }).find("coordinates (N, 2) for polygons"),
            std::string::npos);
  EXPECT_NE(fk::test::error_of([&] {
              nefi::parametric_shapes(pts, fk::zeros({1, 1, 7}, {fk::DType::F64}), b1, "polygons",
                                      0.1, {1.0});
            }).find("polygons' shapes (C, K, 7 + V) with V in 3..16, got [1, 1, 7]"),
            std::string::npos);
  EXPECT_NE(fk::test::error_of([&] {
              nefi::parametric_shapes(pts, fk::zeros({1, 1, 7}, {fk::DType::F64}), b1, "stars", 0.1,
                                      {1.0});
            }).find("shapes (C, K, 9)"),
            std::string::npos);
  EXPECT_NE(fk::test::error_of([&] {
              nefi::parametric_shapes(pts, fk::zeros({1, 1, 9}, {fk::DType::F64}), b1, "stars", 0.1,
                                      {1.5});
            }).find("degree gates in [0, 1]"),
            std::string::npos);
  EXPECT_NE(with("blobs", 0, 0.02, {8}).find("shape count"), std::string::npos);
  EXPECT_NE(with("ellipses", 4, 0.0, {8}).find("eps > 0"), std::string::npos);
  EXPECT_NE(with("blobs", 4, 0.02, {2, 2, 2, 2}).find("1-, 2- or 3-D"), std::string::npos);
  nefi::ParametricField f({8, 8}, one_head(), {}, 0);
  EXPECT_NE(fk::test::error_of([&] { f.forward(nefi::Domain({8}), 1.0); }).find("2-D domain"),
            std::string::npos);
}

// A start map puts the shapes at its strongest local extrema of the
// strongest one's sign (and of the other sign at half its strength or more:
// the next test), each as wide as its extremum (r / 4 .. r); the rest go to
// distinct lattice cells at r / 4. A sparse map (one spike) is smoothed
// first, by an eighth of the axis here.
TEST(NefiParametricField, StartsItsShapesAtTheMapsStrongestExtrema) {
  const int64_t n = 32;
  std::vector<double> map(n * n, 0.0);
  auto bump = [&](double r0, double c0, double s, double amp) {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        map[i * n + j] +=
            amp * std::exp(-0.5 * (std::pow(i - r0, 2) + std::pow(j - c0, 2)) / (s * s));
  };
  bump(8, 22, 3.0, -1.0);   // the strongest: negative
  bump(22, 10, 2.0, -0.6);  // a second of its sign
  bump(24, 26, 2.0, 0.4);   // the other sign, under half the strongest: not a start
  nefi::ParametricConfig cfg;
  cfg.count = 4;  // a 2 x 2 lattice, r = 0.5
  nefi::ParametricField f({n, n}, one_head(), cfg, 0);
  f.start_at_extrema(0, fk::from_vector(map, {n, n}));
  const nefi::ParametricStart s = f.start_shapes(0, 0);
  ASSERT_EQ(s.centres.size(), 8u);
  auto at = [](int64_t i) { return (2.0 * i + 1) / 32 - 1; };
  EXPECT_DOUBLE_EQ(s.centres[0], at(8));
  EXPECT_DOUBLE_EQ(s.centres[1], at(22));
  EXPECT_DOUBLE_EQ(s.centres[2], at(22));
  EXPECT_DOUBLE_EQ(s.centres[3], at(10));
  // Half width at half value of a sigma-3 bump: 3.5 cells (sqrt(2 ln 2) 3 =
  // 3.53), 2 / 32 each; the sigma-2 one's: 2.5 cells (2.35).
  EXPECT_NEAR(s.radii[0], 3.5 * 2 / 32, 1e-12);
  EXPECT_NEAR(s.radii[2], 2.5 * 2 / 32, 1e-12);
  EXPECT_EQ(f.placed_from_map(0), 2);
  for (int k = 2; k < 4; ++k) {  // lattice cells at r / 4, distinct, r off the placed ones
    EXPECT_DOUBLE_EQ(s.radii[2 * k], 0.5 / 4);
    for (int j = 0; j < k; ++j)
      EXPECT_GT(std::hypot(s.centres[2 * k] - s.centres[2 * j],
                           s.centres[2 * k + 1] - s.centres[2 * j + 1]),
                j < 2 ? 0.5 : 0.2);
  }
  // The placement is the seed's to keep; the lattice's shapes are not.
  const nefi::ParametricStart other = f.start_shapes(0, 7);
  EXPECT_EQ(std::vector<double>(other.centres.begin(), other.centres.begin() + 4),
            std::vector<double>(s.centres.begin(), s.centres.begin() + 4));
  EXPECT_NE(other.centres, s.centres);
  // A map of another grid of the box: the same places.
  std::vector<double> coarse(16 * 16);
  for (int64_t i = 0; i < 16; ++i)
    for (int64_t j = 0; j < 16; ++j)
      coarse[i * 16 + j] = -std::exp(-0.5 * (std::pow(i - 4, 2) + std::pow(j - 11, 2)) / 2.25);
  f.start_at_extrema(0, fk::from_vector(coarse, {16, 16}));
  EXPECT_DOUBLE_EQ(f.start_shapes(0, 0).centres[0], (2.0 * 4 + 1) / 16 - 1);
  EXPECT_DOUBLE_EQ(f.start_shapes(0, 0).centres[1], (2.0 * 11 + 1) / 16 - 1);
  // Nothing known (all zero, or not finite): every shape on the lattice at r.
  std::vector<double> unknown(n * n, 0.0);
  unknown[3] = NAN;
  unknown[40] = INFINITY;
  f.start_at_extrema(0, fk::from_vector(unknown, {n, n}));
  EXPECT_EQ(f.placed_from_map(0), 0);
  for (double r : f.start_shapes(0, 0).radii) EXPECT_DOUBLE_EQ(r, 0.5);
  std::vector<double> spike(n * n, 0.0);
  spike[5 * n + 7] = 2.0;
  f.start_at_extrema(0, fk::from_vector(spike, {n, n}));
  // Smoothed by 4 cells: half value at 4.7, 4.5 cells.
  EXPECT_DOUBLE_EQ(f.start_shapes(0, 0).radii[0], 4.5 * 2 / 32);
  EXPECT_DOUBLE_EQ(f.start_shapes(0, 0).centres[0], at(5));
  f.start_at_extrema(0, fk::from_vector(map, {n, n}));
  f.reset_parameters(0);
  const auto v = f.params().raw(0).to_vector<double>();
  EXPECT_NEAR(v[1], at(8), 1e-6);
  EXPECT_NEAR(v[3], 1 / s.radii[0], 1e-4);
  EXPECT_NE(fk::test::error_of([&] {
              f.start_at_extrema(1, fk::from_vector(map, {n, n}));
            }).find("channel in [0, 1)"),
            std::string::npos);
  EXPECT_NE(
      fk::test::error_of([&] { f.start_at_extrema(0, fk::zeros({n})); }).find("2-D start map"),
      std::string::npos);
}

// Of the other sign, an object at half the strongest's pull or more starts
// a shape (a dark and a bright inclusion); a pull as strong that reaches
// the map's edge (the background's, which the constant start leaves on
// either side of the objects) does not.
TEST(NefiParametricField, AnObjectOfTheOtherSignStartsAShapeTheBackgroundDoesNot) {
  const int64_t n = 32;
  std::vector<double> map(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      auto bump = [&](double r0, double c0, double amp) {
        return amp * std::exp(-0.5 * (std::pow(i - r0, 2) + std::pow(j - c0, 2)) / 4.0);
      };
      map[i * n + j] = bump(8, 22, -1.0) + bump(22, 12, 0.7) +
                       0.8 * std::exp(-0.5 * std::pow(j / 3.0, 2));  // a band along j = 0
    }
  nefi::ParametricConfig cfg;
  cfg.count = 4;
  nefi::ParametricField f({n, n}, one_head(), cfg, 0);
  f.start_at_extrema(0, fk::from_vector(map, {n, n}));
  EXPECT_EQ(f.placed_from_map(0), 2);
  const nefi::ParametricStart s = f.start_shapes(0, 0);
  auto at = [](int64_t i) { return (2.0 * i + 1) / 32 - 1; };
  EXPECT_DOUBLE_EQ(s.centres[0], at(8));
  EXPECT_DOUBLE_EQ(s.centres[1], at(22));
  EXPECT_DOUBLE_EQ(s.centres[2], at(22));
  EXPECT_DOUBLE_EQ(s.centres[3], at(12));
}

// Inside a known support the background's pull ends at the support's rim,
// not the map's edge: a ring of it along the rim starts no shape when the
// support is given (and reads as an object when it is not).
TEST(NefiParametricField, TheBackgroundsPullEndsAtAKnownSupportsRim) {
  const int64_t n = 32;
  std::vector<double> map(n * n, 0.0), support(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double r = std::hypot(i - 15.5, j - 15.5);
      if (r > 13) continue;  // (a dense map: no smoothing)
      support[i * n + j] = 1;
      auto bump = [&](double r0, double c0, double amp) {
        return amp * std::exp(-0.5 * (std::pow(i - r0, 2) + std::pow(j - c0, 2)) / 4.0);
      };
      map[i * n + j] = bump(12, 19, -1.0) + bump(19, 12, 0.7) + (r >= 10 ? 0.6 : 0.0);
    }
  nefi::ParametricConfig cfg;
  cfg.count = 4;
  nefi::ParametricField f({n, n}, one_head(), cfg, 0);
  f.start_at_extrema(0, fk::from_vector(map, {n, n}), fk::from_vector(support, {n, n}));
  EXPECT_EQ(f.placed_from_map(0), 2);
  f.start_at_extrema(0, fk::from_vector(map, {n, n}));
  EXPECT_EQ(f.placed_from_map(0), 3);
  EXPECT_NE(fk::test::error_of([&] {
              f.start_at_extrema(0, fk::from_vector(map, {n, n}), fk::zeros({n, 2}));
            }).find("a support of the map's shape"),
            std::string::npos);
}

// One object, one start: two bumps joined by a shallow dip (the lobes of
// one inclusion) give one placed shape; the same bumps with a deep valley
// between them give two. A flat plateau (every cell a tie, as noise-free
// data of a constant object give) places one shape and, over a 48^3 map,
// floods each cell once (this took minutes when every extremum flooded
// afresh).
TEST(NefiParametricField, StartsOneShapePerObject) {
  const int64_t n = 40;
  auto placed = [&](double dip_width) {
    std::vector<double> map(n * n, 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        auto bump = [&](double c0, double s) {
          return std::exp(-0.5 * (std::pow(i - 20.0, 2) + std::pow(j - c0, 2)) / (s * s));
        };
        map[i * n + j] = std::max(bump(13, dip_width), bump(27, dip_width));
      }
    nefi::ParametricConfig cfg;
    cfg.count = 4;  // r = 0.5: both bumps lie outside a placed shape's radius
    nefi::ParametricField f({n, n}, one_head(), cfg, 0);
    f.start_at_extrema(0, fk::from_vector(map, {n, n}));
    return f.placed_from_map(0);
  };
  EXPECT_EQ(placed(12.0), 1);  // the dip between them keeps 0.84 of a peak
  EXPECT_EQ(placed(3.0), 2);   // the valley falls to 0.004 of a peak
  const int64_t m = 48;
  std::vector<double> plateau(m * m * m, 0.0);
  for (int64_t i = 0; i < m * m * m; ++i) {
    const int64_t a = i / (m * m), b = i / m % m, c = i % m;
    if (std::hypot(a - 24.0, b - 24.0, c - 24.0) < 20) plateau[i] = 1.0;
  }
  nefi::ParametricConfig cfg;
  cfg.family = "stars";
  nefi::ParametricField g({m, m, m}, one_head(), cfg, 0);
  g.start_at_extrema(0, fk::from_vector(plateau, {m, m, m}));
  EXPECT_EQ(g.placed_from_map(0), 1);
}

// Two ellipses on a background, observed at a sixth of the pixels (a fixed
// random mask): the parametric field fills the rest, a grid field cannot.
TEST(NefiParametricField, RecoversTwoEllipsesFromASixthOfThePixels) {
  const fk::test::ThreadCount one(1);
  const int64_t n = 32;
  const nefi::Domain dom({n, n});
  const std::vector<double> xy = dom.coords(fk::DType::F64).to_vector<double>();
  std::vector<double> truth(n * n), mask(n * n);
  fk::Generator gen(5);
  const std::vector<double> u = fk::rand({n * n}, {fk::DType::F64}, &gen).to_vector<double>();
  for (int64_t i = 0; i < n * n; ++i) {
    const double x = xy[2 * i], y = xy[2 * i + 1];
    const double xr = std::cos(0.5) * (x - 0.3) + std::sin(0.5) * (y + 0.2);
    const double yr = -std::sin(0.5) * (x - 0.3) + std::cos(0.5) * (y + 0.2);
    truth[i] = 0.2;
    if (std::pow(xr / 0.45, 2) + std::pow(yr / 0.25, 2) < 1) truth[i] += 1.0;
    if (std::pow((x + 0.5) / 0.2, 2) + std::pow((y - 0.5) / 0.3, 2) < 1) truth[i] += 0.6;
    mask[i] = u[i] < 1.0 / 6 ? 1.0 : 0.0;
  }
  // The share of cells within 0.1 of the truth (PSNR would mostly count
  // the few cells a boundary crosses).
  auto fit = [&](std::shared_ptr<nefi::Field> field, double lr, int steps) {
    nefi::InverseProblem p;
    p.domain = dom;
    p.op = std::make_shared<nefi::IdentityOperator>();
    p.field = std::move(field);
    p.losses.add(nefi::mse_loss(), 1.0);
    p.measurement.data = fk::from_vector(truth, {n, n}).to(fk::DType::F32);
    p.measurement.mask = fk::from_vector(mask, {n, n}).to(fk::DType::F32);
    nefi::Curriculum cur = nefi::Curriculum::single({n, n}, steps, lr);
    cur.stages[0].anneal_fraction = 0.5;
    const std::vector<double> x = nefi::Solver(p, cur).run().fields.at("x").to_vector<double>();
    int close = 0;
    for (int64_t i = 0; i < n * n; ++i) close += std::abs(x[i] - truth[i]) < 0.1;
    return static_cast<double>(close) / static_cast<double>(n * n);
  };
  nefi::ParametricConfig cfg;
  cfg.family = "ellipses";
  cfg.count = 4;
  const double shapes = fit(
      std::make_shared<nefi::ParametricField>(fk::Dims{n, n}, one_head(0.4), cfg, 0), 3e-2, 800);
  const double grid =
      fit(std::make_shared<nefi::GridField>(fk::Dims{n, n}, one_head(0.4)), 1e-1, 800);
  // (a grid leaves the unobserved cells at its start, 0.2 or more off)
  EXPECT_GT(shapes, 0.9);
  EXPECT_GT(shapes, grid + 0.5);
}

}  // namespace
