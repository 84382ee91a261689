// Prior terms registered by name: the prior text takes them like a built-in
// penalty (and prints them back), the loss differentiates through the
// function's gradient, a solve weighs and applies one (a pull toward a
// template fills the cells the data never see), and each misuse is an
// fk::Error naming it.
#include "nefi/byop/custom_prior.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "fk/thread_count.h"
#include "nefi/byop/auto_problem.h"
#include "nefi/byop/prior.h"
#include "nefi/operators/sampling.h"

namespace {

// P(x) = mean((x - t)^2): a pull toward the template t.
nefi::PenaltyFunction pull_toward(std::vector<double> t) {
  return [t](const fk::Tensor& x, fk::Tensor* grad) {
    const auto v = x.to_vector<double>();
    const double n = static_cast<double>(v.size());
    std::vector<double> g(v.size());
    double p = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      p += (v[i] - t[i]) * (v[i] - t[i]) / n;
      g[i] = 2 * (v[i] - t[i]) / n;
    }
    if (grad) *grad = fk::from_vector(g, x.shape());
    return p;
  };
}

// Registered for one test, gone after it.
struct Registered {
  std::string name;
  Registered(std::string n, nefi::PenaltyFunction f) : name(std::move(n)) {
    nefi::register_prior_term(name, std::move(f));
  }
  ~Registered() { nefi::unregister_prior_term(name); }
};

TEST(NefiCustomPrior, ThePriorTextTakesARegisteredTerm) {
  EXPECT_THROW(nefi::parse_prior("nonnegative + pull(2)"), fk::Error);
  {
    const Registered r("pull", pull_toward(std::vector<double>(4, 0.0)));
    const nefi::PriorSpec p = nefi::parse_prior("nonnegative + pull(2)");
    ASSERT_EQ(p.penalties.size(), 1u);
    EXPECT_TRUE(p.penalties[0].custom);
    EXPECT_EQ(p.penalties[0].kind, "pull");
    EXPECT_EQ(p.penalties[0].strength, 2.0);
    EXPECT_EQ(nefi::parse_prior(p.str()).str(), p.str());
    EXPECT_EQ(nefi::registered_prior_terms(), std::vector<std::string>{"pull"});
    EXPECT_THROW(nefi::parse_prior("pull + pull"), fk::Error);  // each penalty once
  }
  EXPECT_FALSE(nefi::is_registered_prior_term("pull"));
  try {
    nefi::parse_prior("pull");
    ADD_FAILURE() << "an unregistered term parsed";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("registered term"), std::string::npos) << e.what();
  }
}

TEST(NefiCustomPrior, TheLossDifferentiatesThroughTheFunctionsGradient) {
  const std::vector<double> t{0.5, -1.0, 2.0, 0.0, 1.5, 0.25};
  const Registered r("pull", pull_toward(t));
  const nefi::LossPtr loss = nefi::custom_penalty_loss("pull", "x", "pull");
  fk::Generator gen(3);
  for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
    fk::Tensor x = fk::randn({2, 3}, {dt}, &gen);
    x.set_requires_grad(true);
    nefi::FieldMap fields{{"x", x}};
    nefi::LossContext ctx;
    ctx.fields = &fields;
    const fk::Tensor v = loss->forward(ctx);
    EXPECT_EQ(v.dtype(), dt);
    const auto xv = x.detach().to(fk::DType::F64).to_vector<double>();
    double want = 0;
    for (size_t i = 0; i < 6; ++i) want += (xv[i] - t[i]) * (xv[i] - t[i]) / 6;
    EXPECT_NEAR(v.item(), want, 1e-6 * want);
    fk::mul(v, 3.0).backward();
    const auto g = x.grad().to(fk::DType::F64).to_vector<double>();
    for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(g[i], 3 * 2 * (xv[i] - t[i]) / 6, 1e-6);
  }
}

TEST(NefiCustomPrior, ASolveWeighsAndAppliesTheTerm) {
  const fk::test::ThreadCount one(1);
  // 64 cells, the first half sampled: the second half is the prior's alone.
  const int64_t n = 64;
  std::vector<double> gt(n), keep(n, 0.0), t(n);
  for (int64_t i = 0; i < n; ++i) {
    const double s = (i + 0.5) / n;
    gt[i] = 1 + 0.5 * std::sin(6 * s);
    t[i] = gt[i];  // the template: what the unsampled half should follow
    keep[i] = i < n / 2 ? 1.0 : 0.0;
  }
  auto op = std::make_shared<nefi::SamplingOperator>(fk::from_vector(keep, {n}));
  nefi::Measurement m;
  m.data = op->apply(fk::from_vector(gt, {n}));
  const Registered r("pull", pull_toward(t));
  auto unseen_error = [&](const std::string& prior, nefi::AutoProblem* out) {
    nefi::AutoOptions o;
    o.prior = prior;
    o.budget = "default";
    o.noise_std = 0.01;
    // The data are met long before the unsampled half settles: no Morozov stop.
    o.discrepancy = false;
    *out = nefi::auto_problem(op, {n}, m, o);
    const auto x = out->solve().fields.at("x").to(fk::DType::F64).to_vector<double>();
    double e = 0;
    for (int64_t i = n / 2; i < n; ++i) e += (x[i] - t[i]) * (x[i] - t[i]) / (n / 2);
    return std::sqrt(e);
  };
  nefi::AutoProblem with, without;
  const double e_with = unseen_error("nonnegative + pull", &with);
  const double e_without = unseen_error("nonnegative", &without);
  EXPECT_LT(e_with, 0.1);
  EXPECT_GT(e_without, 3 * e_with);
  bool weighed = false;
  for (const auto& d : with.decisions) weighed = weighed || d.key == "pull_weight";
  EXPECT_TRUE(weighed);
}

TEST(NefiCustomPrior, MisuseIsNamed) {
  auto ok = pull_toward({0.0});
  EXPECT_THROW(nefi::register_prior_term("tv", ok), fk::Error);  // built in
  EXPECT_THROW(nefi::register_prior_term("My-Term", ok), fk::Error);
  EXPECT_THROW(nefi::register_prior_term("", ok), fk::Error);
  EXPECT_THROW(nefi::register_prior_term("empty", nefi::PenaltyFunction{}), fk::Error);
  EXPECT_THROW(nefi::custom_penalty_loss("never_registered", "x", "n"), fk::Error);
  const Registered nan("nan_term", [](const fk::Tensor&, fk::Tensor*) { return std::nan(""); });
  const Registered bad("short_grad", [](const fk::Tensor&, fk::Tensor* g) {
    if (g) *g = fk::zeros({1}, {fk::DType::F64});
    return 1.0;
  });
  fk::Tensor x = fk::ones({3}, {fk::DType::F64});
  x.set_requires_grad(true);
  nefi::FieldMap fields{{"x", x}};
  nefi::LossContext ctx;
  ctx.fields = &fields;
  EXPECT_THROW(nefi::custom_penalty_loss("nan_term", "x", "n")->forward(ctx), fk::Error);
  try {
    (void)nefi::custom_penalty_loss("short_grad", "x", "n")->forward(ctx);
    ADD_FAILURE() << "a gradient of the wrong size was taken";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("prior term 'short_grad'"), std::string::npos) << e.what();
  }
}

}  // namespace
