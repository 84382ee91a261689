// autotune_fit: a bring-your-own problem's learning rate and penalty
// strengths chosen by pilot solves. On undersampled MRI of a piecewise-
// constant phantom (the default tv strength is too weak there) the tuned
// problem beats the default by decibels; the decisions follow the level's
// factors and rules; noise-free data keep their strengths; the model's own
// parameters come back as given; several fields get one decision each; and
// an L-BFGS fit keeps its learning rate.
#include "nefi/tune/fit_autotune.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/thread_count.h"
#include "nefi/byop/byop_test_models.h"
#include "nefi/operators/sampling.h"
#include "nefi/solve/metrics.h"

namespace nefi::tune {
namespace {

// 32 x 32 shapes seen at 30 % of k-space (every frequency within 0.15 of DC,
// the rest at random), complex noise 0.01.
struct Mri {
  fk::Tensor gt = test::shapes_phantom(32);
  OperatorPtr op;
  Measurement y;
  Mri() {
    op = std::make_shared<FourierSamplingOperator>(test::variable_density_mask(32, 0.15, 0.25, 3));
    y.data = test::with_noise(op->apply(gt), 0.01, 4);
  }
};

double solved_psnr(const OperatorPtr& op, const Measurement& y, const AutoOptions& o,
                   const fk::Tensor& gt) {
  const Result r = auto_problem(op, gt.shape(), y, o).solve();
  return psnr(r.fields.at("x").to(fk::DType::F64), gt);
}

const Decision& decision(const FitTuneReport& r, const std::string& key) {
  for (const Decision& d : r.decisions)
    if (d.key == key) return d;
  throw std::runtime_error("no decision " + key);
}

TEST(NefiFitAutotune, MriGetsTheStrengthItsDataAllowAndGainsDecibels) {
  const fk::test::ThreadCount one(1);
  const Mri m;
  AutoOptions o;
  o.prior = "nonnegative + tv";
  o.representation = "grid";
  const FitTuneReport r = autotune_fit(m.op, {32, 32}, m.y, o, level_plan("quick"), m.gt);
  ASSERT_EQ(r.decisions.size(), 2u);
  EXPECT_EQ(r.decisions[0].key, "lr");
  EXPECT_EQ(r.decisions[1].key, "tv");
  for (const Decision& d : r.decisions) {
    ASSERT_EQ(d.pilots.size(), 3u) << d.key;  // quick: x {1/3, 1, 3} and x {0.1, 1, 10}
    bool found = false;
    for (const Pilot& p : d.pilots) {
      EXPECT_TRUE(p.error.empty()) << p.error;
      EXPECT_LE(p.steps, r.pilot_steps);
      EXPECT_TRUE(p.oracle.count("psnr"));
      found |= p.value == d.chosen;
    }
    EXPECT_TRUE(found) << d.key << " chose " << d.chosen;
  }
  EXPECT_EQ(decision(r, "tv").pilots[0].value, "0.1");
  EXPECT_EQ(r.pilot_steps, static_cast<int>(std::lround(0.25 * r.total_steps)));
  // The strongest strength whose pilot met the discrepancy rule.
  EXPECT_GT(std::stod(decision(r, "tv").chosen), 1.0);
  EXPECT_EQ(r.tuned.prior, "nonnegative + tv(" + decision(r, "tv").chosen + ")");
  EXPECT_DOUBLE_EQ(*r.tuned.lr, std::stod(decision(r, "lr").chosen));
  const double before = solved_psnr(m.op, m.y, o, m.gt);
  const double after = solved_psnr(m.op, m.y, r.tuned, m.gt);
  EXPECT_GT(after, before + 2.0) << r.tuned.prior;
  const std::string md = fit_autotune_md(r);
  EXPECT_NE(md.find("## tv: 1 -> " + decision(r, "tv").chosen), std::string::npos) << md;
}

TEST(NefiFitAutotune, StandardTunesTheBudgetAndNoiseFreeDataKeepTheirStrengths) {
  const fk::test::ThreadCount one(1);
  const Mri m;
  AutoOptions o;
  o.prior = "nonnegative + tv(2) + smooth(0.5)";
  o.representation = "grid";
  o.noise_std = 0.0;  // declared noise-free: no discrepancy to aim at
  o.budget = "200";
  LevelPlan plan = level_plan("standard");
  plan.lr_factors = {1};  // the rules under test are the strengths' and the budget's
  const FitTuneReport r = autotune_fit(m.op, {32, 32}, m.y, o, plan);
  ASSERT_EQ(r.decisions.size(), 4u);
  for (const std::string key : {"tv", "smooth"}) {
    const Decision& d = decision(r, key);
    EXPECT_TRUE(d.pilots.empty());
    EXPECT_EQ(d.chosen, d.before);
    EXPECT_NE(d.reason.find("noise-free"), std::string::npos) << d.reason;
  }
  EXPECT_EQ(r.tuned.prior, "nonnegative + tv(2) + smooth(0.5)");
  const Decision& steps = decision(r, "steps");
  ASSERT_EQ(steps.pilots.size(), 4u);  // x {1/8, 1/4, 1/2, 1} of 200
  for (auto [i, v] : {std::pair{0, "25"}, {1, "50"}, {2, "100"}, {3, "200"}})
    EXPECT_EQ(steps.pilots[i].value, v);
  EXPECT_EQ(r.tuned.budget, steps.chosen);
}

// A spectral field's L-BFGS sets its steps by line search: no learning-rate
// pilots (they would all stop at the noise floor and differ by noise).
TEST(NefiFitAutotune, AnLbfgsFitKeepsItsLearningRate) {
  const fk::test::ThreadCount one(1);
  const Mri m;
  AutoOptions o;
  o.prior = "nonnegative";
  o.representation = "spectral";
  o.budget = "40";
  const FitTuneReport r = autotune_fit(m.op, {32, 32}, m.y, o, level_plan("quick"));
  const Decision& d = decision(r, "lr");
  EXPECT_TRUE(d.pilots.empty());
  EXPECT_EQ(std::stod(d.before), 1.0);
  EXPECT_EQ(d.chosen, d.before);
  EXPECT_NE(d.reason.find("line search sets the steps"), std::string::npos) << d.reason;
  EXPECT_FALSE(r.tuned.lr.has_value());
}

// y = x + b with a trainable background b: each pilot trains b, and the
// tuner puts it back.
TEST(NefiFitAutotune, TheModelsOwnParametersComeBackAsGiven) {
  const fk::test::ThreadCount one(1);
  const int64_t n = 24;
  ForwardModel f;
  f.forward = [](const std::vector<fk::Tensor>& xs) {
    const auto x = xs[0].to_vector<double>();
    const double b = xs[1].to_vector<double>()[0];
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] + b;
    return fk::from_vector(y, fk::Dims{static_cast<int64_t>(x.size())});
  };
  f.vjp = [](const std::vector<fk::Tensor>&, const fk::Tensor& g) {
    const auto gv = g.to_vector<double>();
    double s = 0;
    for (double v : gv) s += v;
    return std::vector<fk::Tensor>{g, fk::from_vector(std::vector<double>{s}, fk::Dims{1})};
  };
  const fk::Tensor b0 = fk::from_vector(std::vector<double>{0.1}, fk::Dims{1});
  auto op = std::make_shared<FunctionOperator>(fk::Dims{n}, fk::Dims{n}, f, std::nullopt, "shifted",
                                               std::vector<std::string>{"x"},
                                               std::vector<fk::Tensor>{b0});
  std::vector<double> y(n);
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5 + 0.3 * std::sin(0.4 * i) + 0.4;
  Measurement m;
  m.data = test::with_noise(fk::from_vector(y, {n}), 0.01, 6);
  AutoOptions o;
  o.prior = "nonnegative + smooth";
  o.budget = "40";
  const FitTuneReport r = autotune_fit(op, {n}, m, o, level_plan("quick"));
  EXPECT_EQ(r.decisions.size(), 2u);
  EXPECT_FLOAT_EQ(op->parameters().at(0).to_vector<float>()[0], 0.1f);  // f32 leaves
}

// A thorough budget keeps its early stop when the tuner sets a step count,
// and is kept as "thorough" when the decided count wins.
TEST(NefiFitAutotune, AThoroughBudgetKeepsItsEarlyStop) {
  const fk::test::ThreadCount one(1);
  const int64_t n = 32;
  const auto a = test::blur_matrix(n, 2.0);
  auto op = std::make_shared<FunctionOperator>(fk::Dims{n}, fk::Dims{n},
                                               test::matrix_model(a, n, n), 1.0, "blur");
  std::vector<double> x(n), y(n, 0.0);
  for (int64_t i = 0; i < n; ++i) x[i] = i > 10 && i < 20 ? 1.0 : 0.0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) y[i] += a[i * n + j] * x[j];
  Measurement m;
  m.data = test::with_noise(fk::from_vector(y, {n}), 0.01, 8);
  AutoOptions o;
  o.prior = "nonnegative";
  o.representation = "grid";
  o.budget = "thorough";
  LevelPlan plan = level_plan("standard");
  plan.lr_factors = {1};
  const FitTuneReport r = autotune_fit(op, {n}, m, o, plan);
  const Decision& steps = decision(r, "steps");
  EXPECT_EQ(steps.before, "5000");
  if (steps.chosen == steps.before) {
    EXPECT_EQ(r.tuned.budget, "thorough");
  } else {
    EXPECT_EQ(r.tuned.budget, steps.chosen);
    EXPECT_EQ(r.tuned.early_stop_patience, 500);
  }
  EXPECT_EQ(auto_problem(op, {n}, m, r.tuned).curriculum.early_stop_patience, 500);
  // The tuned problem says where its lr and steps came from.
  const AutoProblem ap = tuned_problem(op, {n}, m, r);
  for (const AutoDecision& d : ap.decisions) {
    if (d.key == "lr" || d.key == "steps") {
      EXPECT_EQ(d.why.rfind("autotune (standard): ", 0), 0u) << d.key << ": " << d.why;
    }
  }
}

TEST(NefiFitAutotune, SeveralFieldsGetOneDecisionPerTerm) {
  const fk::test::ThreadCount one(1);
  const int64_t n = 16;
  ForwardModel f;
  f.forward = [](const std::vector<fk::Tensor>& xs) {
    const auto a = xs[0].to_vector<double>(), b = xs[1].to_vector<double>();
    std::vector<double> y(a.size());
    for (size_t i = 0; i < a.size(); ++i) y[i] = a[i] + 2 * b[i];
    return fk::from_vector(y, fk::Dims{static_cast<int64_t>(a.size())});
  };
  f.vjp = [](const std::vector<fk::Tensor>&, const fk::Tensor& g) {
    auto g2 = g.to_vector<double>();
    for (double& v : g2) v *= 2;
    return std::vector<fk::Tensor>{g, fk::from_vector(g2, g.shape())};
  };
  auto op = std::make_shared<FunctionOperator>(fk::Dims{n}, fk::Dims{n}, f, 1.0, "pair",
                                               std::vector<std::string>{"a", "b"});
  std::vector<double> y(n);
  for (int64_t i = 0; i < n; ++i) y[i] = 1.0 + 0.2 * std::cos(0.5 * i);
  Measurement m;
  m.data = test::with_noise(fk::from_vector(y, {n}), 0.01, 7);
  AutoOptions o;
  o.field_priors = {{"a", "nonnegative + tv"}, {"b", "unconstrained + increasing(0, 2)"}};
  o.budget = "30";
  const FitTuneReport r = autotune_fit(op, {n}, m, o, level_plan("quick"));
  ASSERT_EQ(r.decisions.size(), 3u);
  EXPECT_EQ(r.decisions[1].key, "tv:a");
  EXPECT_EQ(r.decisions[2].key, "increasing(0):b");
  EXPECT_EQ(r.decisions[2].pilots[0].value, "0.2");
  EXPECT_EQ(r.tuned.field_priors[1].second,
            "unconstrained + increasing(0, " + r.decisions[2].chosen + ")");
  // A truth is one field's.
  EXPECT_THROW(autotune_fit(op, {n}, m, o, level_plan("quick"), fk::zeros({n})), fk::Error);
  // One field given by name: its terms keep the prior's own names, as its losses do.
  auto named = std::make_shared<FunctionOperator>(
      fk::Dims{n}, fk::Dims{n}, test::matrix_model(test::blur_matrix(n, 1.0), n, n), 1.0, "blur",
      std::vector<std::string>{"u"});
  AutoOptions single;
  single.field_priors = {{"u", "nonnegative + tv"}};
  single.budget = "20";
  EXPECT_EQ(autotune_fit(named, {n}, m, single, level_plan("quick")).decisions[1].key, "tv");
}

}  // namespace
}  // namespace nefi::tune
