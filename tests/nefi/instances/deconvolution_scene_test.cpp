#include "nefi/instances/deconvolution_scene.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "fk/error.h"

namespace {

using nefi::deconv::draw_scene;
using nefi::deconv::Primitive;
using nefi::deconv::Scene;

int count(const Scene& s, Primitive::Kind k) {
  int c = 0;
  for (const Primitive& q : s.parts) c += q.kind == k;
  return c;
}

// Parameters of the reference's scenes on [0, 1]^2, printed with NumPy 2.4.6
// by drawing in the reference's order from np.random.default_rng(seed)
// (background; disk count, per disk x, y, radius, value; rectangle count, per
// rectangle x, y, w, h, angle, value; blob count ...; dot count ...).
TEST(DeconvolutionScenes, PhantomDrawsTheReferenceParametersPerSeed) {
  const Scene s0 = draw_scene("phantom", 32, 1.0, 0.7, 0);
  EXPECT_DOUBLE_EQ(s0.background, 0.050956934985716344);
  EXPECT_EQ(count(s0, Primitive::kDisk), 3);
  EXPECT_EQ(count(s0, Primitive::kRect), 1);
  EXPECT_EQ(count(s0, Primitive::kGauss), 1 + 2);  // one soft blob, two dots
  ASSERT_EQ(s0.parts.size(), 7u);
  const Primitive& d = s0.parts[0];
  EXPECT_EQ(d.kind, Primitive::kDisk);
  EXPECT_DOUBLE_EQ(d.cx, 0.17868146675533628);
  EXPECT_DOUBLE_EQ(d.cy, 0.16156934486997035);
  EXPECT_DOUBLE_EQ(d.a, 0.13132702392002724);
  EXPECT_DOUBLE_EQ(d.value, 0.8476533463666331);
  const Primitive& r = s0.parts[3];
  EXPECT_EQ(r.kind, Primitive::kRect);
  EXPECT_DOUBLE_EQ(r.cx, 0.6607588125009608);
  EXPECT_DOUBLE_EQ(r.cy, 0.2729589344217913);
  EXPECT_DOUBLE_EQ(2 * r.a, 0.269899362916975);
  EXPECT_DOUBLE_EQ(2 * r.b, 0.16287763184732743);
  EXPECT_DOUBLE_EQ(r.theta, 0.9415726735057562);
  EXPECT_DOUBLE_EQ(r.value, 0.5381497769581267);
  const Primitive& dot = s0.parts.back();
  EXPECT_DOUBLE_EQ(dot.cx, 0.6558552669637836);
  EXPECT_DOUBLE_EQ(dot.cy, 0.6263857920649657);
  EXPECT_DOUBLE_EQ(dot.value, 0.84422336528547);
  EXPECT_DOUBLE_EQ(dot.a, 0.7 / 32);  // dot std: dot_cells native cells

  const Scene s1 = draw_scene("phantom", 32, 1.0, 0.7, 1);
  EXPECT_DOUBLE_EQ(s1.background, 0.040945729976020535);
  EXPECT_EQ(count(s1, Primitive::kDisk), 4);
  EXPECT_EQ(count(s1, Primitive::kRect), 3);
  EXPECT_EQ(count(s1, Primitive::kGauss), 1 + 2);
  EXPECT_DOUBLE_EQ(s1.parts[0].cy, 0.8140546129960707);
  EXPECT_DOUBLE_EQ(s1.parts[6].theta, 1.9258066672145242);
  EXPECT_DOUBLE_EQ(s1.parts.back().value, 0.7554444422332665);

  const Scene s2 = draw_scene("phantom", 32, 1.0, 0.7, 2);
  EXPECT_DOUBLE_EQ(s2.background, 0.02092897073994531);
  EXPECT_EQ(count(s2, Primitive::kDisk), 2);
  EXPECT_EQ(count(s2, Primitive::kRect), 1);
  EXPECT_EQ(count(s2, Primitive::kGauss), 2 + 5);
  EXPECT_DOUBLE_EQ(s2.parts[0].a, 0.1100100525965654);
  EXPECT_DOUBLE_EQ(s2.parts.back().cy, 0.8041791073224077);
}

// smooth: the wave vector is NumPy's uniform(-2, 2, size=2), two consecutive
// doubles, scaled by 2 pi / extent; sparse_dots: count then dots.
TEST(DeconvolutionScenes, SmoothAndSparseDotsDrawTheReferenceParameters) {
  const Scene s = draw_scene("smooth", 32, 1.0, 0.7, 0);
  EXPECT_DOUBLE_EQ(s.background, 0.06369616873214544);
  EXPECT_FALSE(s.clip);
  ASSERT_EQ(s.parts.size(), 5u + 1u);
  const Primitive& c = s.parts.back();
  EXPECT_EQ(c.kind, Primitive::kCosine);
  EXPECT_DOUBLE_EQ(c.a, -1.4596139799103551 * 2 * std::numbers::pi);
  EXPECT_DOUBLE_EQ(c.b, 0.8859533607763268 * 2 * std::numbers::pi);
  EXPECT_DOUBLE_EQ(c.theta, 3.3008985600427674);
  EXPECT_DOUBLE_EQ(c.value, 0.09653628133384336);

  const Scene d = draw_scene("sparse_dots", 32, 1.0, 0.7, 0);
  EXPECT_EQ(d.background, 0.0);
  ASSERT_EQ(d.parts.size(), 14u);
  EXPECT_DOUBLE_EQ(d.parts[0].cx, 0.31582937101109626);

  EXPECT_THROW(draw_scene("rings", 32, 1.0, 0.7, 0), fk::Error);
}

}  // namespace
