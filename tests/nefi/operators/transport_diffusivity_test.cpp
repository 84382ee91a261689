// AdvectionDiffusionOperator with the diffusivity map as the unknown: a
// uniform map gives the bits of the scalar-D operator (both schemes, a
// per-cell flow, sensors, a source release), the gradient in D matches f64
// finite differences (a varied map, Lax-Wendroff split and upwind, open,
// closed and periodic axes), a wall of cells with D = 0 blocks the tracer,
// and bad input is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/test_util.h"
#include "fk/testing.h"
#include "nefi/operators/advection_diffusion.h"
#include "nefi/operators/operator_checks.h"

namespace {

using nefi::AdvectionDiffusionOperator;
using nefi::AdvectionDiffusionOptions;
using nefi::TransportBoundary;
using nefi::TransportUnknown;

// A puff at (0.4, 0.6) on a grid of `shape`.
fk::Tensor puff(const fk::Dims& shape) {
  std::vector<double> c(shape.numel());
  for (int64_t i = 0; i < shape[0]; ++i)
    for (int64_t j = 0; j < shape[1]; ++j)
      c[i * shape[1] + j] = std::exp(-30 * (std::pow((i + 0.5) / shape[0] - 0.4, 2) +
                                            std::pow((j + 0.5) / shape[1] - 0.6, 2)));
  return fk::from_vector(c, shape);
}

// A flow varying per cell, across both axes.
std::vector<fk::Tensor> shear(const fk::Dims& shape) {
  std::vector<double> u(shape.numel()), w(shape.numel());
  for (int64_t i = 0; i < shape[0]; ++i)
    for (int64_t j = 0; j < shape[1]; ++j) {
      u[i * shape[1] + j] = 0.3 + 0.4 * ((j + 0.5) / shape[1] - 0.5);
      w[i * shape[1] + j] = -0.2 + 0.3 * ((i + 0.5) / shape[0] - 0.5);
    }
  return {fk::from_vector(u, shape), fk::from_vector(w, shape)};
}

// D varying smoothly between 2e-3 and 8e-3.
fk::Tensor varied(const fk::Dims& shape) {
  std::vector<double> d(shape.numel());
  for (int64_t i = 0; i < shape.numel(); ++i) d[i] = 5e-3 + 3e-3 * std::sin(0.7 * i);
  return fk::from_vector(d, shape);
}

TEST(NefiTransportDiffusivity, AUniformMapGivesTheScalarOperatorsBits) {
  const fk::Dims shape{10, 8};
  fk::Tensor sensors = fk::zeros(shape, {fk::DType::F64});
  for (int64_t i : {5, 22, 41, 63, 77}) sensors.data<double>()[i] = 1;
  for (int variant = 0; variant < 3; ++variant) {  // Lax-Wendroff, + sensors and a source, upwind
    AdvectionDiffusionOptions scalar_o;
    scalar_o.velocity = shear(shape);
    scalar_o.times = {0.1, 0.25};
    scalar_o.boundary = {TransportBoundary::kClosed, TransportBoundary::kPeriodic};
    if (variant == 1) {
      scalar_o.sensors = sensors;
      scalar_o.unknown = TransportUnknown::kSource;
    }
    if (variant == 2) scalar_o.scheme = nefi::TransportScheme::kUpwind;
    AdvectionDiffusionOptions map_o = scalar_o;
    map_o.unknown = TransportUnknown::kDiffusivity;
    map_o.release = puff(shape);
    map_o.release_is_source = variant == 1;
    scalar_o.diffusivity = 4e-3;
    const nefi::Domain domain(shape, {1.0, 0.8});
    const AdvectionDiffusionOperator by_scalar(domain, scalar_o), by_map(domain, map_o);
    EXPECT_EQ(by_map.homogeneity(), std::nullopt);
    EXPECT_FALSE(by_map.batchable());
    const auto want = by_scalar.apply(puff(shape)).to_vector<double>();
    const auto got = by_map.apply(fk::full(shape, 4e-3, {fk::DType::F64})).to_vector<double>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << variant << " " << i;
  }
}

TEST(NefiTransportDiffusivity, GradientMatchesFiniteDifferences) {
  const fk::Dims shape{7, 6};
  // Lax-Wendroff split, upwind, a source; the last with D 40 x larger over
  // longer times: about 11 and 6 substeps an interval (tau <= 0.9 h^2 /
  // (2 D_max) along axis 0), recomputed in runs of ceil(sqrt(S)) = 4 and 3.
  for (int variant = 0; variant < 4; ++variant) {
    AdvectionDiffusionOptions o;
    o.velocity = shear(shape);
    o.times = {0.05, 0.15};
    o.boundary = {TransportBoundary::kOpen, TransportBoundary::kPeriodic};
    o.unknown = TransportUnknown::kDiffusivity;
    o.release = puff(shape);
    if (variant == 1) o.scheme = nefi::TransportScheme::kUpwind;
    if (variant == 2) {
      o.release_is_source = true;
      o.boundary = {TransportBoundary::kClosed};
    }
    if (variant == 3) o.times = {0.3, 0.45};
    const AdvectionDiffusionOperator op(nefi::Domain(shape, {1.0, 1.2}), o);
    fk::Tensor D = variant == 3 ? fk::mul(varied(shape), 40.0) : varied(shape);
    D.set_requires_grad(true);
    auto fn = [&](const std::vector<fk::Tensor>& in) { return op.apply(in[0]); };
    EXPECT_EQ(fk::testing::gradcheck(fn, {D}), "") << variant;
  }
}

// 1-D (periodic) and 3-D (a periodic axis of two cells, whose two faces join
// the same pair of cells), with equal neighbours in D (the harmonic mean's
// a == b branch).
TEST(NefiTransportDiffusivity, GradientMatchesFiniteDifferencesIn1DAnd3D) {
  for (const fk::Dims& shape : {fk::Dims{11}, fk::Dims{4, 3, 2}}) {
    const int nd = shape.size();
    AdvectionDiffusionOptions o;
    for (int a = 0; a < nd; ++a)
      o.velocity.push_back(fk::full({1}, 0.2 - 0.15 * a, {fk::DType::F64}));
    o.times = {0.1, 0.25};
    o.unknown = TransportUnknown::kDiffusivity;
    o.boundary = nd == 1 ? std::vector<TransportBoundary>{TransportBoundary::kPeriodic}
                         : std::vector<TransportBoundary>{TransportBoundary::kOpen,
                                                          TransportBoundary::kClosed,
                                                          TransportBoundary::kPeriodic};
    o.release = varied({shape.numel()}).view(shape);
    const AdvectionDiffusionOperator op(nefi::Domain(shape, std::vector<double>(nd, 0.2)), o);
    std::vector<double> d = varied({shape.numel()}).to_vector<double>();
    d[3] = d[2];  // neighbours along the last axis
    fk::Tensor D = fk::from_vector(d, shape);
    D.set_requires_grad(true);
    auto fn = [&](const std::vector<fk::Tensor>& in) { return op.apply(in[0]); };
    EXPECT_EQ(fk::testing::gradcheck(fn, {D}), "") << shape.str();
  }
}

// A wall of cells with D = 0 across a closed box without flow: the tracer
// released left of it never reaches the right, and the total is kept.
TEST(NefiTransportDiffusivity, AWallOfZeroDiffusivityBlocksTheTracer) {
  const fk::Dims shape{12, 6};
  std::vector<double> c(shape.numel(), 0.0), d(shape.numel(), 0.01);
  for (int64_t j = 0; j < 6; ++j) {
    c[2 * 6 + j] = 1.0;
    d[6 * 6 + j] = 0.0;  // row 6
  }
  AdvectionDiffusionOptions o;
  o.times = {0.5, 1.0};
  o.unknown = TransportUnknown::kDiffusivity;
  o.release = fk::from_vector(c, shape);
  const AdvectionDiffusionOperator op(nefi::Domain(shape, {1.0, 0.5}), o);
  const auto y = op.apply(fk::from_vector(d, shape)).to_vector<double>();
  double left = 0, right = 0;
  for (int64_t i = 0; i < shape.numel(); ++i) (i < 6 * 6 ? left : right) += y[72 + i];
  EXPECT_EQ(right, 0.0);
  EXPECT_NEAR(left, 6.0, 1e-12);
  EXPECT_GT(y[72 + 5 * 6], 0.05);  // it spread up to the wall (0.069)
}

TEST(NefiTransportDiffusivity, BadInputIsRefusedByName) {
  const fk::Dims shape{6, 5};
  const nefi::Domain domain(shape);
  auto error = [&](const AdvectionDiffusionOptions& o) {
    return fk::test::error_of([&] { AdvectionDiffusionOperator(domain, o); });
  };
  AdvectionDiffusionOptions o;
  o.unknown = TransportUnknown::kDiffusivity;
  EXPECT_NE(error(o).find("a real release of the grid's shape [6, 5] (the unknown is D), got none"),
            std::string::npos);
  o.release = fk::zeros({5, 6}, {fk::DType::F64});
  EXPECT_NE(error(o).find("got [5, 6]"), std::string::npos);
  o.release = puff(shape);
  o.diffusivity = 1e-3;
  EXPECT_NE(error(o).find("no diffusivity option with the unknown diffusivity"), std::string::npos);
  AdvectionDiffusionOptions initial;
  initial.release = puff(shape);
  EXPECT_NE(error(initial).find("no release"), std::string::npos);
  initial.release = {};
  initial.release_is_source = true;
  EXPECT_NE(error(initial).find("got release_is_source"), std::string::npos);
  o.diffusivity = 0;
  const AdvectionDiffusionOperator op(domain, o);
  EXPECT_NE(fk::test::error_of([&] {
              op.apply(fk::full(shape, -1e-3, {fk::DType::F64}));
            }).find("a diffusivity >= 0 in every cell"),
            std::string::npos);
  EXPECT_NE(fk::test::error_of([&] {
              op.apply(fk::full({2, 6, 5}, 1e-3, {fk::DType::F64}));
            }).find("(no batch)"),
            std::string::npos);
  EXPECT_NE(fk::test::error_of([&] {
              (void)op.forward_rows(std::vector<double>(30), 1);
            }).find("a release unknown"),
            std::string::npos);
  EXPECT_NE(fk::test::error_of([&] {
              (void)op.at_resolution({12, 10});
            }).find("release"),
            std::string::npos);
  EXPECT_EQ(nefi::parse_transport_unknown("diffusivity"), TransportUnknown::kDiffusivity);
}

}  // namespace
