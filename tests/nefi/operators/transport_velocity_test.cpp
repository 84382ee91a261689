// AdvectionDiffusionOperator with the velocity as the unknown: a flow given
// as the field gives the bits of the same flow given as the option (with the
// release then the unknown), over both schemes, boundaries, sensors and a
// source; the gradient in v matches f64 finite differences (1-D, 2-D and
// 3-D, Lax-Wendroff and upwind, open faces' outflow, periodic axes); and bad
// input is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/test_util.h"
#include "fk/testing.h"
#include "nefi/operators/advection_diffusion.h"

namespace {

using nefi::AdvectionDiffusionOperator;
using nefi::AdvectionDiffusionOptions;
using nefi::TransportBoundary;
using nefi::TransportScheme;
using nefi::TransportUnknown;

// A smooth release over the grid (positive everywhere).
fk::Tensor release_on(const fk::Dims& shape) {
  std::vector<double> c(shape.numel());
  for (int64_t i = 0; i < shape.numel(); ++i)
    c[i] = 0.3 +
           std::exp(-0.05 * static_cast<double>((i - shape.numel() / 2) * (i - shape.numel() / 2)));
  return fk::from_vector(c, shape);
}

// One component per axis, each per cell, bounded away from zero on every
// face (an upwind flux has no derivative where its face's velocity is 0):
// component a is (0.25 + 0.1 sin) times a sign per axis.
fk::Tensor flow_on(const fk::Dims& shape) {
  const int nd = shape.size();
  const int64_t n = shape.numel();
  std::vector<double> v(nd * n);
  for (int a = 0; a < nd; ++a)
    for (int64_t i = 0; i < n; ++i)
      v[a * n + i] = (a % 2 == 0 ? 1.0 : -1.0) * (0.25 + 0.1 * std::sin(1.3 * i + a));
  fk::Dims s{nd};
  for (int64_t d : shape) s.push_back(d);
  return fk::from_vector(v, s);
}

AdvectionDiffusionOptions by_velocity(const fk::Dims& shape, bool lw, bool source) {
  AdvectionDiffusionOptions o;
  o.unknown = TransportUnknown::kVelocity;
  o.release = release_on(shape);
  o.release_is_source = source;
  o.diffusivity = 2e-3;
  o.times = {0.1, 0.25};
  o.scheme = lw ? TransportScheme::kLaxWendroff : TransportScheme::kUpwind;
  return o;
}

TEST(NefiTransportVelocity, AFlowAsTheFieldGivesTheKnownFlowsBits) {
  const fk::Dims shape{7, 6};
  const fk::Tensor v = flow_on(shape);
  fk::Tensor sensors = fk::zeros(shape, {fk::DType::F64});
  for (int64_t i : {3, 17, 30, 41}) sensors.data<double>()[i] = 1;
  for (int variant = 0; variant < 4; ++variant) {  // Lax-Wendroff, upwind, + source, + sensors
    AdvectionDiffusionOptions o = by_velocity(shape, variant != 1, variant == 2);
    o.boundary = {TransportBoundary::kOpen, TransportBoundary::kPeriodic};
    if (variant == 3) o.sensors = sensors;
    AdvectionDiffusionOptions known = o;
    known.unknown = variant == 2 ? TransportUnknown::kSource : TransportUnknown::kInitial;
    known.release = fk::Tensor();
    known.release_is_source = false;
    known.velocity = {v.select(0, 0).contiguous(), v.select(0, 1).contiguous()};
    const nefi::Domain domain(shape, {1.0, 1.2});
    const AdvectionDiffusionOperator unknown_v(domain, o), unknown_release(domain, known);
    EXPECT_EQ(unknown_v.apply(v).to_vector<double>(),
              unknown_release.apply(o.release).to_vector<double>())
        << variant;
    EXPECT_EQ(unknown_v.output_shape(unknown_v.field_shape()), unknown_release.output_shape(shape));
    EXPECT_FALSE(unknown_v.graph_capturable());
    EXPECT_FALSE(unknown_v.homogeneity().has_value());
  }
}

TEST(NefiTransportVelocity, GradientMatchesFiniteDifferences) {
  struct Case {
    fk::Dims shape;
    bool lw, source;
    std::vector<TransportBoundary> boundary;
  };
  const std::vector<Case> cases{
      {{9}, true, false, {TransportBoundary::kOpen}},
      {{9}, false, true, {TransportBoundary::kPeriodic}},
      {{6, 5}, true, false, {TransportBoundary::kOpen, TransportBoundary::kPeriodic}},
      {{6, 5}, false, false, {TransportBoundary::kClosed, TransportBoundary::kOpen}},
      {{4, 3, 3},
       false,
       true,
       {TransportBoundary::kPeriodic, TransportBoundary::kOpen, TransportBoundary::kClosed}},
      {{4, 3, 2}, true, false, {TransportBoundary::kOpen}},
      // a periodic axis of two cells (both faces join one pair) and one of one
      {{5, 2}, false, false, {TransportBoundary::kOpen, TransportBoundary::kPeriodic}},
      {{5, 2}, true, true, {TransportBoundary::kClosed, TransportBoundary::kPeriodic}},
      {{1, 6}, false, false, {TransportBoundary::kOpen, TransportBoundary::kClosed}},
      {{4, 1}, true, false, {TransportBoundary::kPeriodic, TransportBoundary::kOpen}},
  };
  for (const Case& c : cases) {
    AdvectionDiffusionOptions o = by_velocity(c.shape, c.lw, c.source);
    o.boundary = c.boundary;
    std::vector<double> extent;
    for (int a = 0; a < c.shape.size(); ++a) extent.push_back(0.2 * (1 + 0.3 * a) * c.shape[a]);
    const AdvectionDiffusionOperator op(nefi::Domain(c.shape, extent), o);
    fk::Tensor v = flow_on(c.shape);
    v.set_requires_grad(true);
    auto fn = [&](const std::vector<fk::Tensor>& in) { return op.apply(in[0]); };
    EXPECT_EQ(fk::testing::gradcheck(fn, {v}), "") << c.shape.str() << (c.lw ? " lw" : " upwind");
  }
}

// Upwind at rest: every face's flux, and the open faces' outflow, has no
// derivative at v = 0; the gradient is the mean of the one-sided ones, which
// is what central differences measure there. So a fit can start from rest.
TEST(NefiTransportVelocity, AtRestTheGradientIsTheMeanOfTheOneSidedOnes) {
  for (const fk::Dims& shape : {fk::Dims{12}, fk::Dims{5, 4}}) {
    AdvectionDiffusionOptions o = by_velocity(shape, false, false);
    o.boundary = {TransportBoundary::kOpen};
    const AdvectionDiffusionOperator op(nefi::Domain(shape), o);
    fk::Tensor v = fk::zeros(op.field_shape(), {fk::DType::F64});
    v.set_requires_grad(true);
    auto fn = [&](const std::vector<fk::Tensor>& in) { return op.apply(in[0]); };
    EXPECT_EQ(fk::testing::gradcheck(fn, {v}), "") << shape.str();
  }
}

TEST(NefiTransportVelocity, BadInputIsRefusedByName) {
  const fk::Dims shape{6, 5};
  const nefi::Domain domain(shape);
  auto error = [&](const AdvectionDiffusionOptions& o) {
    return fk::test::error_of([&] { AdvectionDiffusionOperator(domain, o); });
  };
  AdvectionDiffusionOptions o = by_velocity(shape, true, false);
  o.release = fk::Tensor();
  EXPECT_NE(error(o).find("a real release of the grid's shape [6, 5] (the unknown is v), got none"),
            std::string::npos);
  o = by_velocity(shape, true, false);
  o.velocity = {fk::full({1}, 0.1, {fk::DType::F64}), fk::full({1}, 0.1, {fk::DType::F64})};
  EXPECT_NE(error(o).find("no velocity option with the unknown velocity"), std::string::npos);
  const AdvectionDiffusionOperator op(domain, by_velocity(shape, true, false));
  EXPECT_EQ(op.field_shape(), (fk::Dims{2, 6, 5}));
  const std::string shape_error =
      fk::test::error_of([&] { op.apply(fk::zeros(shape, {fk::DType::F64})); });
  EXPECT_NE(shape_error.find("the velocity of shape [2, 6, 5]"), std::string::npos) << shape_error;
  fk::Tensor v = flow_on(shape);
  v.data<double>()[37] = std::nan("");
  const std::string nan_error = fk::test::error_of([&] { op.apply(v); });
  EXPECT_NE(nan_error.find("a finite velocity in every cell"), std::string::npos) << nan_error;
  EXPECT_NE(nan_error.find("in component 1 at cell 7"), std::string::npos) << nan_error;
  EXPECT_NE(fk::test::error_of([&] {
              nefi::parse_transport_unknown("flow");
            }).find("an unknown initial, source, diffusivity or velocity"),
            std::string::npos);
}

}  // namespace
