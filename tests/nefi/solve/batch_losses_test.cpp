// The batched forms (Loss::forward_rows) of the losses beyond MSE and TV:
// batch_invert in shared loss mode (every term evaluated once on the whole
// block, each problem's weights on its row) against sequential solves, per
// step to 1e-5; forward_rows against forward on each row, value and
// gradient, in f64; and weighted_rows' gradient against finite differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/random.h"
#include "fk/testing.h"
#include "nefi/instances/instance.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/regularizers.h"
#include "nefi/solve/batch.h"
#include "nefi/solve/solver.h"
#include "nefi/solve/weighted_rows.h"

namespace {

struct Named {
  std::string what;
  nefi::LossPtr data, reg;  // reg may be null
};

std::vector<Named> batched_losses() {
  return {{"l1", nefi::mse_loss(), nefi::l1_loss()},
          {"tikhonov", nefi::mse_loss(), nefi::tikhonov_loss()},
          {"laplacian", nefi::mse_loss(), nefi::laplacian_loss()},
          {"range", nefi::mse_loss(), nefi::range_penalty_loss(0.2, 0.6)},
          {"relative_mse", nefi::relative_mse_loss(), nullptr},
          {"huber", nefi::huber_loss(0.05), nullptr},
          {"poisson_nll", nefi::poisson_nll_loss(), nullptr}};
}

std::vector<nefi::InverseProblem> toy_problems(const nefi::Params& p, const Named& l,
                                               nefi::Curriculum* cur) {
  std::vector<nefi::InverseProblem> out;
  for (uint64_t seed : {0, 1, 2}) {
    auto su = nefi::find_instance("toy1d")->setup(p, "neural", seed);
    // Each problem's own weights (as from_forward gives them): one shared
    // set whose weights weigh each problem's row.
    nefi::LossSet ls;
    ls.add(l.data, 1.0 + 0.5 * static_cast<double>(seed));
    if (l.reg) ls.add(l.reg, 1e-2 * (1.0 + 2.0 * static_cast<double>(seed)));
    su->problem.losses = ls;
    out.push_back(su->problem);
    *cur = su->curriculum;
  }
  return out;
}

TEST(NefiBatchLosses, SharedModeEqualsSequentialPerStep) {
  nefi::Params p = nefi::find_instance("toy1d")->default_config();
  p.set("n", "64");
  p.set("hidden", "32");
  p.set("depth", "3");
  p.set_value("steps", std::vector<double>{6, 6});
  for (const Named& l : batched_losses()) {
    SCOPED_TRACE(l.what);
    nefi::Curriculum cur;
    auto ps = toy_problems(p, l, &cur);
    std::vector<nefi::Result> seq;
    for (uint64_t b = 0; b < ps.size(); ++b) {
      nefi::SolverOptions so;
      so.seed = b;
      seq.push_back(nefi::Solver(ps[b], cur, so).run());
    }
    nefi::BatchOptions bo;
    bo.seeds = {0, 1, 2};
    bo.loss_mode = "shared";        // throws unless every term has a batched form (any weights)
    bo.chunk_size = l.reg ? 2 : 0;  // blocks of rows 0-1 and 2, each with its problems' weights
    const auto bat = nefi::batch_invert(toy_problems(p, l, &cur), cur, bo);
    for (size_t b = 0; b < ps.size(); ++b) {
      ASSERT_EQ(seq[b].history.rows.size(), bat[b].history.rows.size());
      for (size_t r = 0; r < seq[b].history.rows.size(); ++r)
        for (size_t j = 0; j < seq[b].history.rows[r].size(); ++j) {
          const double x = seq[b].history.rows[r][j], y = bat[b].history.rows[r][j];
          EXPECT_NEAR(x, y, 1e-5 * std::max(1.0, std::abs(x))) << "problem " << b << " row " << r;
        }
    }
  }
}

TEST(NefiBatchLosses, RowsEqualEachRowsForwardAndGradient) {
  const nefi::Domain d({5, 4}, {1.0, 0.8});
  fk::Generator gen(7);
  const fk::Tensor x = fk::uniform({3, 5, 4}, 0.05, 1.0, {fk::DType::F64}, &gen);
  const fk::Tensor y = fk::uniform({3, 5, 4}, 0.05, 1.0, {fk::DType::F64}, &gen);
  const fk::Tensor mask =
      fk::lt(fk::uniform({3, 5, 4}, 0.0, 1.0, {fk::DType::F64}, &gen), fk::scalar_like(x, 0.7))
          .to(fk::DType::F64);
  for (bool masked : {false, true})
    for (const Named& l : batched_losses())
      for (const nefi::LossPtr& loss : {l.data, l.reg}) {
        if (!loss) continue;
        SCOPED_TRACE(l.what + (masked ? " masked" : ""));
        fk::Tensor xb = x.clone();
        xb.set_requires_grad(true);
        const nefi::FieldMap fb{{"x", xb}};
        nefi::BatchLossContext bc;
        bc.fields = &fb;
        bc.pred = xb;
        bc.obs = y;
        if (masked) bc.mask = mask;
        bc.noise_std = {0.1, 0.1, 0.1};
        bc.domain = &d;
        const fk::Tensor rows = loss->forward_rows(bc);
        ASSERT_TRUE(rows.defined());
        ASSERT_EQ(rows.shape(), (fk::Dims{3}));
        // Weights per row: the gradient of sum_b w_b L_b splits by rows.
        const std::vector<double> w{0.5, -1.0, 2.0};
        fk::autograd::backward({rows}, {fk::from_vector(w, fk::Dims{3})});
        const auto gb = xb.grad().to_vector<double>();
        const auto v = rows.to_vector<double>();
        for (int64_t b = 0; b < 3; ++b) {
          fk::Tensor xr = x.select(0, b).contiguous().clone();
          xr.set_requires_grad(true);
          const nefi::FieldMap fr{{"x", xr}};
          nefi::Measurement m;
          m.data = y.select(0, b).contiguous();
          if (masked) m.mask = mask.select(0, b).contiguous();
          m.noise_std = 0.1;
          nefi::LossContext c{&fr, xr, &m, &d, nullptr, 0, 0, 1.0};
          const fk::Tensor one = loss->forward(c);
          EXPECT_NEAR(v[b], one.item(), 1e-12 * std::max(1.0, std::abs(one.item())));
          fk::autograd::backward({one}, {fk::from_vector(std::vector<double>{w[b]}, fk::Dims{})});
          const auto g1 = xr.grad().to_vector<double>();
          for (size_t i = 0; i < g1.size(); ++i)
            EXPECT_NEAR(gb[b * g1.size() + i], g1[i], 1e-12) << "row " << b << " cell " << i;
        }
      }
}

// Term i's row b weighs w[i][b]; each term's gradient is its rows' weights.
TEST(NefiBatchLosses, WeightedRowsGradientIsFiniteDifferences) {
  fk::Generator gen(3);
  const std::vector<fk::Tensor> terms{
      fk::uniform({4}, -1.0, 1.0, {fk::DType::F64, fk::kCPU, true}, &gen),
      fk::uniform({4}, -1.0, 1.0, {fk::DType::F64, fk::kCPU, true}, &gen)};
  const std::vector<std::vector<double>> w{{1.0, 0.5, 2.0, -3.0}, {0.25, 4.0, 1.0, 0.0}};
  const fk::Tensor total = nefi::weighted_rows(terms, w);
  const auto t0 = terms[0].to_vector<double>(), t1 = terms[1].to_vector<double>();
  const auto v = total.to_vector<double>();
  for (size_t b = 0; b < 4; ++b) EXPECT_DOUBLE_EQ(v[b], w[0][b] * t0[b] + w[1][b] * t1[b]);
  EXPECT_EQ(
      fk::testing::gradcheck(
          [&](const std::vector<fk::Tensor>& in) { return nefi::weighted_rows(in, w); }, terms),
      "");
  try {
    nefi::weighted_rows(terms, {{1.0, 2.0}, {1.0, 2.0}});
    FAIL() << "two weights for four rows";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("4 values and weights per term"), std::string::npos)
        << e.what();
  }
  // A 0-d first term, or none, is named here (size(0) named Tensor::size).
  for (const std::vector<fk::Tensor>& bad :
       {std::vector<fk::Tensor>{fk::scalar_tensor(1.0)}, std::vector<fk::Tensor>{}}) {
    try {
      nefi::weighted_rows(bad, {});
      FAIL() << "no error";
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find("nefi::weighted_rows: expected a 1-D first term"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
