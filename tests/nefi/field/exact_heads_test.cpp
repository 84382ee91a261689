// The heads behind the prior DSL's two-phase and exact terms: LevelSet
// sharpens with progress, Masked is its fill outside the support,
// MassNormalized sums to its total and Symmetric equals its mirror images,
// whatever the raw output; each one's rows equal each problem alone, and
// gradcheck in f64 (one problem and rows).
#include <gtest/gtest.h>

#include <cmath>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/index.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "fk/test_util.h"
#include "fk/testing.h"
#include "nefi/field/heads.h"

namespace {

const fk::Dims kShape{4, 5};

fk::Tensor support_mask() {
  std::vector<double> m(20, 0.0);
  for (int i = 0; i < 20; ++i) m[i] = i % 5 == 0 ? 0.0 : (i % 7 == 3 ? 0.5 : 1.0);
  return fk::from_vector(m, kShape);
}

fk::Tensor raw_values(uint64_t seed, fk::DType dtype = fk::DType::F64) {
  fk::Generator g(seed);
  return fk::uniform(kShape, -2.0, 2.0, {dtype}, &g);
}

TEST(NefiExactHeads, LevelSetSharpensAsProgressGoesOn) {
  const auto h = nefi::level_set_head("x", 1.0, 3.0, 1.5, 1.0, 0.05);
  EXPECT_TRUE(h->reads_progress());
  EXPECT_FALSE(nefi::bounded_head("x", 1.0, 3.0, 1.5)->reads_progress());
  EXPECT_TRUE(nefi::heads_read_progress({nefi::identity_head("a"), nefi::affine_head(h, 2, 0)}));
  // The start value at progress 0 from the output bias.
  const double b = h->init_bias()[0];
  const fk::Tensor at_bias = fk::full({1}, b, {fk::DType::F64});
  EXPECT_NEAR(h->transform({at_bias}, {}, 0.0).item(), 1.5, 1e-12);
  // phi = +-0.2: soft at the start (eps 1), the two values at the end (eps 0.05).
  const fk::Tensor phi = fk::from_vector(std::vector<double>{-0.2, 0.2});
  const auto soft = h->transform({phi}, {}, 0.0).to_vector<double>();
  const auto sharp = h->transform({phi}, {}, 1.0).to_vector<double>();
  EXPECT_NEAR(soft[0], 1.0 + 2.0 / (1.0 + std::exp(0.2)), 1e-12);
  EXPECT_NEAR(sharp[0], 1.0 + 2.0 / (1.0 + std::exp(4.0)), 1e-12);
  EXPECT_NEAR(sharp[1], 1.0 + 2.0 / (1.0 + std::exp(-4.0)), 1e-12);
  // eps is geometric in progress: at 0.5 it is sqrt(1 x 0.05).
  const double mid = h->transform({phi}, {}, 0.5).to_vector<double>()[1];
  EXPECT_NEAR(mid, 1.0 + 2.0 / (1.0 + std::exp(-0.2 / std::sqrt(0.05))), 1e-12);
  // Past 1 it stays at eps_end.
  EXPECT_EQ(h->transform({phi}, {}, 2.0).to_vector<double>(), sharp);
  EXPECT_THROW(nefi::level_set_head("x", 1.0, 3.0, 3.0), fk::Error);
  EXPECT_THROW(nefi::level_set_head("x", 1.0, 3.0, 2.0, 0.0), fk::Error);
}

// The leak changes no value; it adds leak / eps to the slope, so a cell
// saturated in f32 (slope exactly 0) still gets a gradient.
TEST(NefiExactHeads, LevelSetLeakKeepsValuesAndFloorsTheSlope) {
  const auto plain = nefi::level_set_head("x", 0.0, 2.0, 1.0, 0.5, 0.5);
  const auto leaky = nefi::level_set_head("x", 0.0, 2.0, 1.0, 0.5, 0.5, 0.01);
  EXPECT_NE(plain->signature(), leaky->signature());
  fk::Tensor raw = fk::from_vector(std::vector<float>{-60.f, 0.3f, 60.f});
  raw.set_requires_grad(true);
  const fk::Tensor v = leaky->transform({raw}, {});
  EXPECT_EQ(v.to_vector<float>(), plain->transform({raw.detach()}, {}).to_vector<float>());
  fk::sum(v).backward();
  const auto g = raw.grad().to_vector<float>();
  const double z = 0.3 / 0.5, s = 1.0 / (1.0 + std::exp(-z));
  EXPECT_NEAR(g[0], 2.0 * 0.01 / 0.5, 1e-7);  // saturated: the leak alone
  EXPECT_NEAR(g[1], 2.0 * (s * (1 - s) + 0.01) / 0.5, 1e-6);
  EXPECT_NEAR(g[2], 2.0 * 0.01 / 0.5, 1e-7);
}

TEST(NefiExactHeads, ModifiersHoldWhateverTheRawOutput) {
  const fk::Tensor m = support_mask();
  const std::vector<double> mv = m.to_vector<double>();
  for (uint64_t seed : {1, 2, 3}) {
    const fk::Tensor raw = raw_values(seed);
    // Masked: inner inside, fill outside, the blend on the soft cells.
    const auto masked = nefi::masked_head(nefi::identity_head("x"), m, 0.25);
    const auto mvals = masked->transform({raw}, {}).to_vector<double>();
    const auto rv = raw.to_vector<double>();
    for (size_t i = 0; i < 20; ++i) EXPECT_DOUBLE_EQ(mvals[i], rv[i] * mv[i] + 0.25 * (1 - mv[i]));
    // MassNormalized: the sum is the total.
    const auto mass = nefi::mass_normalized_head(nefi::softplus_head("x", 1.0), 7.5);
    EXPECT_NEAR(fk::sum(mass->transform({raw}, {})).item(), 7.5, 1e-12);
    // Symmetric about both axes: equal to each mirror image.
    const auto sym = nefi::symmetric_head(nefi::identity_head("x"), {0, 1});
    const fk::Tensor s = sym->transform({raw}, {});
    for (int64_t a : {0, 1}) {
      std::vector<int64_t> rev;
      for (int64_t i = kShape[a] - 1; i >= 0; --i) rev.push_back(i);
      EXPECT_EQ(fk::index_select(s, a, rev).to_vector<double>(), s.to_vector<double>());
    }
    // The projection keeps a field that is already symmetric.
    EXPECT_EQ(sym->transform({s}, {}).to_vector<double>(), s.to_vector<double>());
  }
}

TEST(NefiExactHeads, ErrorsNameWhatIsWrong) {
  auto err = [](auto f) { return fk::test::error_of(f); };
  const auto id = nefi::identity_head("x");
  EXPECT_NE(err([&] { (void)nefi::masked_head(id, fk::full(kShape, 1.5)); }).find("[0, 1]"),
            std::string::npos);
  EXPECT_NE(err([&] { (void)nefi::masked_head(id, fk::zeros(kShape)); }).find("all-zero mask"),
            std::string::npos);
  const auto m = nefi::masked_head(id, support_mask());
  EXPECT_NE(err([&] {
              (void)m->transform({fk::zeros({5, 4})}, {});
            }).find("field's shape"),
            std::string::npos);
  EXPECT_NE(err([&] { (void)nefi::mass_normalized_head(id, 0.0); }).find("total mass > 0"),
            std::string::npos);
  EXPECT_NE(err([&] {
              (void)nefi::symmetric_head(id, {1, 1});
            }).find("each axis once"),
            std::string::npos);
  const auto s = nefi::symmetric_head(id, {2});
  EXPECT_NE(err([&] { (void)s->transform({fk::zeros(kShape)}, {}); }).find("axis 2"),
            std::string::npos);
}

std::vector<std::pair<std::string, nefi::HeadPtr>> exact_heads() {
  return {
      {"level_set", nefi::level_set_head("x", -1.0, 2.0, 0.5, 1.0, 0.2)},
      {"masked(bounded)",
       nefi::masked_head(nefi::bounded_head("x", 0.5, 2.0, 1.0), support_mask())},
      {"masked fill", nefi::masked_head(nefi::identity_head("x"), support_mask(), -0.5)},
      {"mass(masked(softplus))",
       nefi::mass_normalized_head(nefi::masked_head(nefi::softplus_head("x", 1.0), support_mask()),
                                  3.0)},
      {"symmetric(affine)",
       nefi::symmetric_head(nefi::affine_head(nefi::identity_head("x"), 2, 1), {1, 0})},
      {"level_set under symmetric",
       nefi::symmetric_head(nefi::level_set_head("x", 0.0, 1.0, 0.3), {0})},
  };
}

// Row b of three problems and its gradient equal the head on problem b alone,
// at a progress where the level set is between its ends.
TEST(NefiExactHeads, RowsEqualEachProblemAlone) {
  const int64_t n = 3;
  const fk::Dims batch{n, 4, 5};
  for (const auto& [what, h] : exact_heads()) {
    SCOPED_TRACE(what);
    fk::Generator gen(7);
    fk::Tensor raw = fk::uniform({n * 20, 1}, -2.0, 2.0, {fk::DType::F64}, &gen);
    raw.set_requires_grad(true);
    const fk::Tensor w = fk::uniform(batch, -1.0, 1.0, {fk::DType::F64}, &gen);
    const fk::Tensor rows = nefi::apply_heads_rows({h}, raw, batch, 0.4).at("x");
    fk::sum(fk::mul(rows, w)).backward();
    for (int64_t b = 0; b < n; ++b) {
      fk::Tensor one = raw.detach().narrow(0, b * 20, 20).contiguous();
      one.set_requires_grad(true);
      const fk::Tensor alone = nefi::apply_heads({h}, one, kShape, 0.4).at("x");
      const auto r = rows.select(0, b).to_vector<double>(), a = alone.to_vector<double>();
      for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(r[i], a[i], 1e-14) << i;
      fk::sum(fk::mul(alone, w.select(0, b))).backward();
      const auto g = raw.grad().narrow(0, b * 20, 20).to_vector<double>();
      const auto g1 = one.grad().to_vector<double>();
      for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], g1[i], 1e-14) << i;
    }
  }
}

TEST(NefiExactHeads, Gradcheck) {
  for (const auto& [what, h] : exact_heads()) {
    SCOPED_TRACE(what);
    fk::Generator gen(3);
    const fk::Tensor raw = fk::uniform({20, 1}, -1.5, 1.5, {fk::DType::F64}, &gen);
    EXPECT_EQ(fk::testing::gradcheck(
                  [&](const std::vector<fk::Tensor>& in) {
                    return nefi::apply_heads({h}, in[0], kShape, 0.6).at("x");
                  },
                  {raw}),
              "");
    const fk::Tensor raw2 = fk::uniform({40, 1}, -1.5, 1.5, {fk::DType::F64}, &gen);
    EXPECT_EQ(fk::testing::gradcheck(
                  [&](const std::vector<fk::Tensor>& in) {
                    return nefi::apply_heads_rows({h}, in[0], fk::Dims{2, 4, 5}, 0.6).at("x");
                  },
                  {raw2}),
              "");
  }
}

}  // namespace
