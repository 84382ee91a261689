// LowRankField: its forward is the CP sum written out (1-, 2- and 3-D), it
// starts at the heads' initial value, a stage change resamples the factors,
// and a separable image is fitted exactly where a disc is not.
#include "nefi/field/low_rank_field.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/test_util.h"
#include "fk/thread_count.h"
#include "nefi/losses/data_losses.h"
#include "nefi/operators/pointwise.h"
#include "nefi/solve/metrics.h"
#include "nefi/solve/solver.h"

namespace {

std::vector<nefi::HeadPtr> one_head(double init = 0.0) {
  return {nefi::identity_head("x", init)};
}

TEST(NefiLowRankField, ForwardIsTheCpSum) {
  for (const fk::Dims& shape : {fk::Dims{5}, fk::Dims{4, 3}, fk::Dims{3, 2, 4}}) {
    nefi::LowRankField f(shape, one_head(), 2, 1);
    std::vector<std::vector<double>> fac;  // factor a: (1, 2, n_a)
    for (int a = 0; a < shape.size(); ++a) {
      fac.push_back(fk::test::random_values(2 * shape[a], -1, 1, 10 + a));
      fk::autograd::NoGradGuard ng;
      f.params().raw(a).copy_(fk::from_vector(fac[a], f.params().shape(a)).to(fk::DType::F32));
    }
    const auto x = f.forward(nefi::Domain(shape), 1.0).at("x").to_vector<double>();
    ASSERT_EQ(static_cast<int64_t>(x.size()), shape.numel());
    for (int64_t cell = 0; cell < shape.numel(); ++cell) {
      std::vector<int64_t> idx(shape.size());
      for (int a = shape.size() - 1, rest = static_cast<int>(cell); a >= 0; --a) {
        idx[a] = rest % shape[a];
        rest /= static_cast<int>(shape[a]);
      }
      double want = 0;
      for (int r = 0; r < 2; ++r) {
        double term = 1;
        for (int a = 0; a < shape.size(); ++a) term *= fac[a][r * shape[a] + idx[a]];
        want += term;
      }
      EXPECT_NEAR(x[cell], want, 1e-5) << shape.str() << " cell " << cell;
    }
  }
}

TEST(NefiLowRankField, StartsAtTheHeadsValueAndResamplesItsFactors) {
  nefi::LowRankField f({8, 6}, one_head(-0.7), 4, 3);
  const auto x = f.forward(nefi::Domain({8, 6}), 1.0).at("x").to_vector<double>();
  for (double v : x) EXPECT_NEAR(v, -0.7, 0.05);
  f.on_stage_start(nefi::Domain({4, 3}));
  EXPECT_EQ(f.params().shape(0), fk::Dims({1, 4, 4}));
  const auto c = f.forward(nefi::Domain({4, 3}), 1.0).at("x").to_vector<double>();
  for (double v : c) EXPECT_NEAR(v, -0.7, 0.05);
  EXPECT_NE(fk::test::error_of([] { nefi::LowRankField({4}, one_head(), 0); }).find("rank"),
            std::string::npos);
  // A head starting at 0: every term starts small, none at the saddle of all
  // factors zero (a rank-1 field stayed constant there).
  nefi::LowRankField z({8, 6}, one_head(0.0), 1, 3);
  for (int a = 0; a < 2; ++a) {
    const auto v = z.params().raw(a).to_vector<double>();
    EXPECT_GT(*std::max_element(v.begin(), v.end()), 0.0) << a;
    EXPECT_LT(*std::max_element(v.begin(), v.end()), 0.11) << a;
  }
}

// Rank 1 from a zero start learns the best separable image (it stayed at 0).
TEST(NefiLowRankField, RankOneFromZeroLearnsASeparableImage) {
  const int64_t n = 12;
  std::vector<double> img(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) img[i * n + j] = std::sin(0.4 * i + 0.3) * std::cos(0.3 * j);
  nefi::InverseProblem p;
  p.domain = nefi::Domain({n, n});
  p.op = std::make_shared<nefi::IdentityOperator>();
  p.field = std::make_shared<nefi::LowRankField>(fk::Dims{n, n}, one_head(0.0), 1, 0);
  p.losses.add(nefi::mse_loss(), 1.0);
  p.measurement.data = fk::from_vector(img, {n, n}).to(fk::DType::F32);
  const nefi::Result r = nefi::Solver(p, nefi::Curriculum::single({n, n}, 400, 2e-2)).run();
  EXPECT_GT(nefi::psnr(r.fields.at("x").to(fk::DType::F64), fk::from_vector(img, {n, n})), 30.0);
}

double fit_psnr(const std::vector<double>& img, int64_t n, int rank) {
  nefi::InverseProblem p;
  p.domain = nefi::Domain({n, n});
  p.op = std::make_shared<nefi::IdentityOperator>();
  p.field = std::make_shared<nefi::LowRankField>(fk::Dims{n, n}, one_head(0.5), rank, 0);
  p.losses.add(nefi::mse_loss(), 1.0);
  p.measurement.data = fk::from_vector(img, {n, n}).to(fk::DType::F32);
  const nefi::Result r = nefi::Solver(p, nefi::Curriculum::single({n, n}, 400, 2e-2)).run();
  return nefi::psnr(r.fields.at("x").to(fk::DType::F64), fk::from_vector(img, {n, n}));
}

TEST(NefiLowRankField, FitsASeparableImageAndNotADisc) {
  const fk::test::ThreadCount one(1);
  const int64_t n = 24;
  std::vector<double> sep(n * n), disc(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      sep[i * n + j] = (0.5 + 0.4 * std::sin(0.3 * i)) * (0.6 + 0.3 * std::cos(0.2 * j));
      disc[i * n + j] = std::hypot(i - 11.5, j - 11.5) < 7 ? 1.0 : 0.1;
    }
  const double separable = fit_psnr(sep, n, 2), round = fit_psnr(disc, n, 2);
  EXPECT_GT(separable, 40.0);
  EXPECT_LT(round, separable - 10);  // a disc needs more than rank 2
}

}  // namespace
