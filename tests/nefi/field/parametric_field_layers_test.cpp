// Shapes over a layered background (ParametricConfig::layers, from_forward's
// layers+blobs and layers+ellipses): the field is the shapes on their
// background plus a LayeredField's steps with the same interfaces, it
// starts at the heads' value, holds the background's interfaces as a
// LayeredField does, counts its parameters and refuses a bad layer
// configuration by name (from_forward's fit of an inclusion in strata:
// auto_problem_test.cpp).
#include "nefi/field/parametric_field.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary/binary.h"
#include "fk/ops/reduce/sum.h"
#include "fk/random.h"
#include "fk/test_util.h"
#include "nefi/field/layered_field.h"

namespace {

std::vector<nefi::HeadPtr> one_head(double init = 0.0) {
  return {nefi::identity_head("x", init)};
}

nefi::ParametricConfig over_layers(const std::string& family) {
  nefi::ParametricConfig c;
  c.family = family;
  c.count = 2;
  c.layers.emplace();
  c.layers->layers = 3;
  c.layers->axis = 1;
  c.layers->modes = 2;
  return c;
}

TEST(NefiParametricFieldLayers, AreTheShapesPlusTheLayersSteps) {
  const fk::Dims shape{7, 6};
  const nefi::Domain d(shape);
  nefi::ParametricField both(shape, one_head(), over_layers("ellipses"), 3);
  EXPECT_EQ(both.kind(), "layers+ellipses");
  // Every parameter off its start, then the same numbers in a plain
  // ParametricField (the shapes and b) and a LayeredField (base 0).
  std::vector<double> p = both.params().flat().to_vector<double>();
  {
    std::normal_distribution<double> nd(0, 0.2);
    std::mt19937_64 rng(5);
    for (double& v : p) v += nd(rng);
    fk::autograd::NoGradGuard ng;
    both.params().flat().copy_(
        fk::from_vector(p, {static_cast<int64_t>(p.size())}).to(fk::DType::F32));
  }
  nefi::ParametricConfig plain_cfg = over_layers("ellipses");
  plain_cfg.layers.reset();
  nefi::ParametricField plain(shape, one_head(), plain_cfg, 3);
  nefi::LayeredField layers(shape, one_head(), *over_layers("ellipses").layers);
  const int64_t n_plain = plain.n_parameters();
  ASSERT_EQ(both.n_parameters(), n_plain + layers.n_parameters() - 1);  // one base: b
  {
    fk::autograd::NoGradGuard ng;
    plain.params().flat().copy_(
        fk::from_vector(std::vector<double>(p.begin(), p.begin() + n_plain), {n_plain})
            .to(fk::DType::F32));
    std::vector<double> lp{0.0};
    lp.insert(lp.end(), p.begin() + n_plain, p.end());
    layers.params().flat().copy_(
        fk::from_vector(lp, {static_cast<int64_t>(lp.size())}).to(fk::DType::F32));
  }
  for (double progress : {0.05, 0.6}) {
    const auto got = both.forward(d, progress).at("x").to_vector<double>();
    const auto a = plain.forward(d, progress).at("x").to_vector<double>();
    const auto b = layers.forward(d, progress).at("x").to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], a[i] + b[i], 1e-5) << i;
  }
  // The background's interfaces are held before progress 0.1, as a
  // LayeredField's: no gradient reaches the depths and modes then, while the
  // jumps and the shapes get theirs.
  const auto& params = both.params();
  ASSERT_EQ(params.name(2), "jumps");
  ASSERT_EQ(params.name(3), "depths");
  const size_t jumps = params.offset(2), depths = params.offset(3);
  fk::Generator g(5);
  for (double progress : {0.05, 0.6}) {
    fk::Tensor flat = both.params().flat();
    flat.set_grad(fk::Tensor());
    fk::sum(fk::mul(both.forward(d, progress).at("x"), fk::randn(shape, {}, &g))).backward();
    const auto grad = flat.grad().to_vector<double>();
    auto moved = [&](size_t from, size_t to) {
      double s = 0;
      for (size_t i = from; i < to; ++i) s += std::abs(grad[i]);
      return s;
    };
    EXPECT_GT(moved(0, jumps), 0.0) << progress;  // the shapes and b
    EXPECT_GT(moved(jumps, depths), 0.0) << progress;
    if (progress < 0.1)
      EXPECT_EQ(moved(depths, grad.size()), 0.0);
    else
      EXPECT_GT(moved(depths, grad.size()), 0.0);
  }
}

TEST(NefiParametricFieldLayers, StartAtTheHeadsValueAndRefuseABadLayering) {
  const fk::Dims shape{8, 5, 4};
  nefi::ParametricConfig c = over_layers("blobs");
  c.layers->axis = 2;
  nefi::ParametricField f(shape, one_head(0.7), c, 1);
  EXPECT_EQ(f.kind(), "layers+blobs");
  for (double v : f.forward(nefi::Domain(shape), 0.0).at("x").to_vector<double>())
    EXPECT_NEAR(v, 0.7, 1e-6);
  c.layers->axis = 3;
  EXPECT_NE(fk::test::error_of([&] {
              nefi::ParametricField(shape, one_head(), c);
            }).find("a layer axis in [0, 3)"),
            std::string::npos);
  c.layers->axis = 0;
  c.layers->layers = 1;
  EXPECT_NE(fk::test::error_of([&] {
              nefi::ParametricField(shape, one_head(), c);
            }).find("a layer count in [2, 64]"),
            std::string::npos);
}

}  // namespace
