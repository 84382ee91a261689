// Head::transform_rows (batch_invert's heads on (N, *shape)): row b of the
// result and its gradient equal transform on row b alone, for the heads that
// reduce over a field (zero_mean, support_masked, and both under affine) and
// for an elementwise head; gradcheck in f64; signatures name the constants.
#include <gtest/gtest.h>

#include <cmath>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "fk/testing.h"
#include "nefi/field/heads.h"

namespace {

// rho (softplus), then the head under test on a second raw channel.
std::vector<nefi::HeadPtr> with_support(nefi::HeadPtr h) {
  return {nefi::softplus_head("rho", 0.2), std::move(h)};
}

struct Case {
  std::string what;
  std::vector<nefi::HeadPtr> heads;
};

std::vector<Case> cases() {
  return {
      {"zero_mean", {nefi::zero_mean_head(nefi::bounded_head("x", -1.0, 1.0, 0.0))}},
      {"affine(zero_mean)",
       {nefi::affine_head(nefi::zero_mean_head(nefi::identity_head("x")), 2.0, 0.5)}},
      {"support_masked",
       with_support(nefi::support_masked_head(nefi::bounded_head("x", 1.0, 3.0, 2.0), "rho", 0.4))},
      {"support_masked fill",
       with_support(nefi::support_masked_head(nefi::identity_head("x"), "rho", 0.4, 0.25))},
      {"gated_softplus", {nefi::gated_softplus_head("x", 0.2, 0.8)}},
  };
}

int channels(const std::vector<nefi::HeadPtr>& heads) {
  int c = 0;
  for (const auto& h : heads) c += h->n_in();
  return c;
}

// Fields of N problems on a (5, 4) grid, raw channels last: (N 20, C).
TEST(NefiHeadRows, RowsAndGradientsEqualEachProblemAlone) {
  const int64_t n = 3;
  const fk::Dims shape{5, 4}, batch{n, 5, 4};
  for (const Case& k : cases()) {
    SCOPED_TRACE(k.what);
    const int c = channels(k.heads);
    fk::Generator gen(11);
    fk::Tensor raw = fk::uniform({n * 20, c}, -2.0, 2.0, {fk::DType::F32}, &gen);
    raw.set_requires_grad(true);
    const fk::Tensor w = fk::uniform(batch, -1.0, 1.0, {fk::DType::F32}, &gen);
    const std::string last = k.heads.back()->name();
    const nefi::FieldMap rows = nefi::apply_heads_rows(k.heads, raw, batch);
    fk::sum(fk::mul(rows.at(last), w)).backward();
    const fk::Tensor grad = raw.grad();
    for (int64_t b = 0; b < n; ++b) {
      fk::Tensor one = raw.detach().narrow(0, b * 20, 20).contiguous();
      one.set_requires_grad(true);
      const nefi::FieldMap alone = nefi::apply_heads(k.heads, one, shape);
      EXPECT_EQ(rows.at(last).select(0, b).to_vector<float>(), alone.at(last).to_vector<float>());
      fk::sum(fk::mul(alone.at(last), w.select(0, b))).backward();
      const std::vector<float> g = grad.narrow(0, b * 20, 20).to_vector<float>();
      const std::vector<float> g1 = one.grad().to_vector<float>();
      ASSERT_EQ(g.size(), g1.size());
      for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], g1[i], 1e-6) << i;
    }
  }
}

TEST(NefiHeadRows, Gradcheck) {
  const fk::Dims batch{2, 3, 3};
  for (const Case& k : cases()) {
    SCOPED_TRACE(k.what);
    fk::Generator gen(5);
    const fk::Tensor raw = fk::uniform({18, channels(k.heads)}, -1.5, 1.5, {fk::DType::F64}, &gen);
    const std::string last = k.heads.back()->name();
    const std::string err = fk::testing::gradcheck(
        [&](const std::vector<fk::Tensor>& in) {
          return nefi::apply_heads_rows(k.heads, in[0], batch).at(last);
        },
        {raw});
    EXPECT_EQ(err, "");
  }
}

// A problem whose rows mean differ keeps its own: row means are 0 one by one.
TEST(NefiHeadRows, ZeroMeanIsPerRow) {
  const auto h = nefi::zero_mean_head(nefi::identity_head("x"));
  const fk::Tensor raw = fk::from_vector(std::vector<double>{1, 2, 3, 10, 20, 30}, fk::Dims{6, 1});
  const fk::Tensor v = nefi::apply_heads_rows({h}, raw, fk::Dims{2, 3}).at("x");
  EXPECT_EQ(v.to_vector<double>(), (std::vector<double>{-1, 0, 1, -10, 0, 10}));
}

// The support threshold is tau max(rho) multiplied in f64 and rounded once to
// the field's dtype (the host computation the head made before it stayed on
// the device): cells one ulp either side of that value and at it are masked
// as the written-out comparison says, in one problem and per row.
template <typename T>
void expect_threshold_rounded_once(fk::DType dtype) {
  const double tau = 0.3;
  std::vector<T> rho, want;
  for (const T m : {T(0.7), T(1.9)}) {
    const T thr = static_cast<T>(tau * static_cast<double>(m));
    const std::vector<T> row{m, thr, std::nextafter(thr, T(2)), std::nextafter(thr, T(0)), T(0)};
    for (const T v : row) {
      rho.push_back(v);
      want.push_back(v > thr ? T(1) : T(0));
    }
  }
  const auto h = nefi::support_masked_head(nefi::identity_head("x"), "rho", tau);
  const fk::Tensor all = fk::from_vector(rho, fk::Dims{2, 5});
  ASSERT_EQ(all.dtype(), dtype);
  const fk::Tensor ones = fk::ones({2, 5}, {dtype});
  const fk::Tensor rows = h->transform_rows({ones}, {{"rho", all}});
  EXPECT_EQ(rows.to_vector<T>(), want);
  for (int64_t b = 0; b < 2; ++b) {
    const fk::Tensor one = h->transform({ones.select(0, b)}, {{"rho", all.select(0, b)}});
    EXPECT_EQ(one.to_vector<T>(), std::vector<T>(want.begin() + 5 * b, want.begin() + 5 * b + 5));
  }
}

TEST(NefiHeadRows, SupportThresholdRoundsOnceToTheFieldDtype) {
  expect_threshold_rounded_once<float>(fk::DType::F32);
  expect_threshold_rounded_once<double>(fk::DType::F64);
}

TEST(NefiHeadRows, SignaturesNameTheConstants) {
  const auto a = nefi::support_masked_head(nefi::identity_head("x"), "rho", 0.3);
  const auto b = nefi::support_masked_head(nefi::identity_head("x"), "rho", 0.4);
  const auto c = nefi::support_masked_head(nefi::identity_head("x"), "rho", 0.3);
  EXPECT_NE(a->signature(), b->signature());
  EXPECT_EQ(a->signature(), c->signature());
  EXPECT_NE(nefi::bounded_head("x", 0.0, 2.0, 1.0)->signature(),
            nefi::bounded_head("x", -1.0, 3.0, 1.0)->signature());
  EXPECT_NE(nefi::zero_mean_head(nefi::identity_head("x"))->signature(),
            nefi::identity_head("x")->signature());
}

}  // namespace
