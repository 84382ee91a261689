// The head's scale (auto_problem.h, departure_scales and head_scales here):
// fields that depart from their best constant by far more than its
// magnitude (a zero-mean wave, sparse spikes) get a head that spans their
// departure, so a grid reaches the noise floor where a head scaled by the
// constant alone stalls far above it; a model that is not linear gets its
// scale from one steepest-descent step; data already at the noise floor
// give no departure, a support's weights scale it, a failed fit leaves the
// constant; the prior's scale(v) and the positive head keep theirs.
#include "nefi/byop/constant_fit.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "byop_test_models.h"
#include "fk/error.h"
#include "fk/ops/binary.h"
#include "fk/thread_count.h"
#include "nefi/byop/auto_problem.h"
#include "nefi/byop/quick_report.h"
#include "nefi/diagnostics/data_fit.h"
#include "nefi/solve/metrics.h"

namespace {

using nefi::auto_problem;
using nefi::AutoOptions;
using nefi::test::value_of;

constexpr int64_t kCells = 128;

// gt seen through a row-normalised blur (width 2 cells) with noise of 1 %
// of the blurred data's range.
struct Blurred {
  std::vector<double> gt, y;
  double sigma = 0;
  nefi::OperatorPtr op;
  explicit Blurred(std::vector<double> truth) : gt(std::move(truth)) {
    const auto a = nefi::test::blur_matrix(kCells, 2.0);
    op = std::make_shared<nefi::FunctionOperator>(fk::Dims{kCells}, fk::Dims{kCells},
                                                  nefi::test::matrix_model(a, kCells, kCells), 1.0,
                                                  "blur");
    y.assign(kCells, 0.0);
    for (int64_t i = 0; i < kCells; ++i)
      for (int64_t j = 0; j < kCells; ++j) y[i] += a[i * kCells + j] * gt[j];
    const auto [lo, hi] = std::minmax_element(y.begin(), y.end());
    sigma = 0.01 * (*hi - *lo);
    y = nefi::test::with_noise(fk::from_vector(y, {kCells}), sigma, 3).to_vector<double>();
  }
  nefi::Measurement measurement() const {
    nefi::Measurement m;
    m.data = fk::from_vector(y, {kCells});
    return m;
  }
  // The grid solve under `prior`: (chi, PSNR, report).
  std::tuple<double, double, std::string> solve(const std::string& prior) const {
    AutoOptions o;
    o.prior = prior;
    o.representation = "grid";
    o.noise_std = sigma;
    const auto ap = auto_problem(op, {kCells}, measurement(), o);
    const nefi::Result r = ap.solve();
    const fk::Tensor truth = fk::from_vector(gt, {kCells});
    const auto fit = nefi::diagnostics::data_fit(ap.problem.measurement, r.prediction);
    return {fit && fit->rmse_over_sigma ? *fit->rmse_over_sigma : 1e9,
            nefi::psnr(r.fields.at("x").to(fk::DType::F64), truth),
            nefi::quick_report(ap, r, {{"x", truth}})};
  }
};

std::vector<double> zero_mean_wave() {
  std::vector<double> v(kCells);
  for (int64_t i = 0; i < kCells; ++i) {
    const double t = (i + 0.5) / kCells;
    v[i] = std::sin(2 * std::numbers::pi * t) + 0.5 * std::sin(6 * std::numbers::pi * t);
  }
  return v;
}

TEST(NefiHeadScale, AZeroMeanFieldGetsAHeadSpanningItsDeparture) {
  const fk::test::ThreadCount one(1);
  const Blurred b(zero_mean_wave());
  AutoOptions o;
  o.noise_std = b.sigma;
  const auto ap = auto_problem(b.op, {kCells}, b.measurement(), o);
  // The best constant is near 0; the wave departs from it by ~1.3.
  const double c = ap.constant_fits[0], s = ap.head_scales[0];
  EXPECT_LT(std::abs(c), 0.05);
  EXPECT_GT(s, 0.5);
  EXPECT_LT(s, 3.0);
  EXPECT_NEAR(std::stod(value_of(ap, "head_scale")), s, 1e-3 * s);
  // The departure reaches the noise floor: chi 1 and the wave within 1 dB
  // of what a head given the right scale gets; a head scaled by |c| alone
  // (the constant's magnitude) stalls far above the noise.
  const auto [chi, psnr, report] = b.solve("unconstrained");
  const auto [given_chi, given, given_report] = b.solve("scale(1.3)");
  const auto [small_chi, small, small_report] = b.solve(fmt::format("scale({:.17g})", std::abs(c)));
  EXPECT_LT(chi, 1.1) << report;
  EXPECT_GT(psnr, given - 1.0) << report << given_report;
  EXPECT_GT(small_chi, 3.0) << small_report;
  EXPECT_GT(psnr, small + 6.0) << report << small_report;
}

TEST(NefiHeadScale, SparseSpikesGetAHeadNearTheirPeak) {
  const fk::test::ThreadCount one(1);
  std::vector<double> gt(kCells, 0.0);
  for (auto [at, h] : {std::pair{17, 0.9}, {40, 0.6}, {71, 1.0}, {90, 0.7}, {113, 0.8}}) gt[at] = h;
  const Blurred b(gt);
  AutoOptions o;
  o.prior = "nonnegative";
  o.noise_std = b.sigma;
  const auto ap = auto_problem(b.op, {kCells}, b.measurement(), o);
  // The best constant is the spikes' mean, 0.03; CGLS from it climbs to
  // within a few times the peak.
  EXPECT_LT(ap.constant_fits[0], 0.05);
  EXPECT_GT(ap.head_scales[0], 0.25);
  // A grid's default budget (750 steps here) leaves spikes a little above
  // the noise floor (chi 1.4 at any scale from 0.3 to 3); starved, far more.
  const auto [chi, psnr, report] = b.solve("nonnegative");
  EXPECT_LT(chi, 1.5) << report;
  const auto [small_chi, small, small_report] =
      b.solve(fmt::format("nonnegative + scale({:.17g})", ap.constant_fits[0]));
  EXPECT_GT(small_chi, chi + 0.5) << small_report;
  EXPECT_GT(psnr, small + 5.0) << report << small_report;
}

// y = x + x^3 / 4 has no homogeneity: one steepest-descent step, its size
// from a log grid, scales the head.
TEST(NefiHeadScale, AModelThatIsNotLinearTakesOneSteepestDescentStep) {
  const fk::test::ThreadCount one(1);
  nefi::ForwardModel cubic;
  cubic.forward = [](const std::vector<fk::Tensor>& xs) {
    std::vector<double> v = xs[0].to_vector<double>();
    for (double& e : v) e += e * e * e / 4;
    return fk::from_vector(v, xs[0].shape());
  };
  cubic.vjp = [](const std::vector<fk::Tensor>& xs, const fk::Tensor& g) {
    std::vector<double> x = xs[0].to_vector<double>(), r = g.to_vector<double>();
    for (size_t i = 0; i < x.size(); ++i) r[i] *= 1 + 0.75 * x[i] * x[i];
    return std::vector<fk::Tensor>{fk::from_vector(r, xs[0].shape())};
  };
  auto op = std::make_shared<nefi::FunctionOperator>(fk::Dims{kCells}, fk::Dims{kCells}, cubic);
  ASSERT_FALSE(op->linear());
  std::vector<double> y = zero_mean_wave();
  for (double& e : y) e += e * e * e / 4;
  nefi::Measurement m;
  m.data = fk::from_vector(y, {kCells});
  AutoOptions o;
  o.noise_std = 0.01;
  const auto ap = auto_problem(op, {kCells}, m, o);
  EXPECT_GT(ap.head_scales[0], 0.3);
  EXPECT_LT(ap.head_scales[0], 5.0);
  EXPECT_NE(value_of(ap, "head_scale").size(), 0u);
  bool said = false;
  for (const auto& d : ap.decisions)
    said |= d.key == "head_scale" && d.why.find("one steepest-descent step") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(NefiHeadScale, ThePriorsScaleAndThePositiveHeadKeepTheirs) {
  const fk::test::ThreadCount one(1);
  const Blurred b(zero_mean_wave());
  AutoOptions o;
  o.prior = "scale(0.25)";
  o.noise_std = b.sigma;
  const auto given = auto_problem(b.op, {kCells}, b.measurement(), o);
  EXPECT_EQ(given.head_scales[0], 0.25);
  EXPECT_EQ(value_of(given, "head_scale"), "0.25");
  std::vector<double> lifted = zero_mean_wave();
  for (double& e : lifted) e += 2.0;
  const Blurred p(lifted);
  o.prior = "positive";
  o.noise_std = p.sigma;
  const auto positive = auto_problem(p.op, {kCells}, p.measurement(), o);
  EXPECT_EQ(value_of(positive, "head_scale"), "");  // an exp head's steps are relative
  EXPECT_EQ(positive.head_scales[0], std::abs(positive.constant_fits[0]));
}

// Data the constant already explains to the noise floor: CGLS takes no step
// (one step would fit the noise: a departure of about sigma, ten times the
// constant here).
TEST(NefiHeadScale, DataAtTheNoiseFloorGiveNoDeparture) {
  const fk::test::ThreadCount one(1);
  const Blurred b(zero_mean_wave());  // for its model
  nefi::Measurement m;
  m.data = nefi::test::with_noise(fk::full({kCells}, 0.001, {fk::DType::F64}), 0.01, 9);
  AutoOptions o;
  o.noise_std = 0.02;  // the constant's misfit is about 0.01^2 < 0.02^2
  const auto ap = auto_problem(b.op, {kCells}, m, o);
  EXPECT_LT(std::abs(ap.constant_fits[0]), 0.003);
  EXPECT_EQ(ap.head_scales[0], std::abs(ap.constant_fits[0]));
}

// A fractional known support M: the fit runs in the head's output z (the
// field c + M z), so a field that is z = 1 where M = 0.5 departs by 1, not
// the 0.5 the field itself moves.
TEST(NefiHeadScale, ASupportScalesTheDepartureByItsWeights) {
  const fk::test::ThreadCount one(1);
  std::vector<double> m(kCells, 0.5), gt(kCells);
  for (int64_t i = 0; i < kCells; ++i) gt[i] = 0.5 * std::sin(2 * std::numbers::pi * i / kCells);
  const Blurred b(gt);
  AutoOptions o;
  o.noise_std = b.sigma;
  o.supports["x"] = fk::from_vector(m, {kCells});
  const auto ap = auto_problem(b.op, {kCells}, b.measurement(), o);
  EXPECT_GT(ap.head_scales[0], 0.7);
  EXPECT_LT(ap.head_scales[0], 1.5);
}

// A model that fails off the constants (it takes only constant fields)
// leaves the constant's magnitude and says why; a batch's given scales
// must be finite and positive.
TEST(NefiHeadScale, AFailedFitLeavesTheConstantAndBadScalesAreRefused) {
  const fk::test::ThreadCount one(1);
  nefi::ForwardModel flat;
  flat.forward = [](const std::vector<fk::Tensor>& xs) {
    const std::vector<double> v = xs[0].to_vector<double>();
    FK_CHECK(std::all_of(v.begin(), v.end(), [&](double e) { return e == v[0]; }), "flat model",
             "a constant field", "a varying one");
    return fk::full(xs[0].shape(), 2 * v[0], {fk::DType::F64});
  };
  flat.vjp = [](const std::vector<fk::Tensor>&, const fk::Tensor& g) {
    return std::vector<fk::Tensor>{fk::mul(g, 2.0)};
  };
  auto op = std::make_shared<nefi::FunctionOperator>(fk::Dims{kCells}, fk::Dims{kCells}, flat, 1.0);
  nefi::Measurement m;
  m.data = nefi::test::with_noise(fk::full({kCells}, 1.0, {fk::DType::F64}), 0.1, 5);
  AutoOptions o;
  o.noise_std = 0.01;
  const auto ap = auto_problem(op, {kCells}, m, o);
  EXPECT_EQ(ap.head_scales[0], std::abs(ap.constant_fits[0]));
  bool said = false;
  for (const auto& d : ap.decisions)
    said |= d.key == "head_scale" && d.why.find("the fit failed") != std::string::npos &&
            d.why.find("a varying one") != std::string::npos;
  EXPECT_TRUE(said);
  o.start = {0.5};
  for (const double bad : {0.0, -1.0, std::nan("")}) {
    o.start_scales = {bad};
    EXPECT_THROW(auto_problem(op, {kCells}, m, o), fk::Error) << bad;
  }
}

// A model's own error text in a reason keeps the report's table whole: a
// linear model that refuses |x| > 3 fails the CGLS fit of a wave of
// amplitude 10, and its '|' is escaped in the head_scale row.
TEST(NefiHeadScale, AReasonsPipesAreEscapedInTheReport) {
  const fk::test::ThreadCount one(1);
  nefi::ForwardModel capped;
  capped.forward = [](const std::vector<fk::Tensor>& xs) {
    for (double e : xs[0].to_vector<double>())
      FK_CHECK(std::abs(e) <= 3, "capped model", "a field with |x| <= 3", std::to_string(e));
    return fk::mul(xs[0], 2.0);
  };
  capped.vjp = [](const std::vector<fk::Tensor>&, const fk::Tensor& g) {
    return std::vector<fk::Tensor>{fk::mul(g, 2.0)};
  };
  auto op =
      std::make_shared<nefi::FunctionOperator>(fk::Dims{kCells}, fk::Dims{kCells}, capped, 1.0);
  std::vector<double> y = zero_mean_wave();
  for (double& e : y) e *= 20;
  nefi::Measurement m;
  m.data = fk::from_vector(y, {kCells});
  AutoOptions o;
  o.noise_std = 0.01;
  o.representation = "grid";
  o.budget = "3";
  const auto ap = auto_problem(op, {kCells}, m, o);
  const std::string report = nefi::quick_report(ap, ap.solve(), {});
  const size_t row = report.find("| head_scale |");
  ASSERT_NE(row, std::string::npos) << report;
  const std::string line = report.substr(row, report.find('\n', row) - row);
  EXPECT_NE(line.find("the fit failed"), std::string::npos) << line;
  EXPECT_NE(line.find("\\|x\\| <= 3"), std::string::npos) << line;
  int cells = 0;
  for (size_t i = 0; i < line.size(); ++i)
    cells += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
  EXPECT_EQ(cells, 4) << line;
}

// A linear model of two fields (bumps through the blur stacked on a signed
// ramp seen directly): one CGLS over both scales each by its own departure,
// the ramp's half-range (its best constant is 0) and the bumps' peak.
TEST(NefiHeadScale, TwoFieldsOfALinearModelShareOneCgls) {
  const fk::test::ThreadCount one(1);
  const nefi::test::BumpsAndRamp two(kCells, 1.0);  // declared linear
  AutoOptions o;
  o.field_priors = {{"a", "nonnegative"}, {"b", "unconstrained"}};
  o.noise_std = 0.005;
  const auto ap = auto_problem(two.op, {kCells}, two.measurement, o);
  EXPECT_GT(ap.head_scales[0], 0.5);  // the bumps peak at 1
  EXPECT_LT(ap.head_scales[0], 2.0);
  EXPECT_NEAR(ap.head_scales[1], 0.5, 0.1);  // the ramp's half-range
  for (const char* key : {"head_scale:a", "head_scale:b"}) {
    bool cgls = false;
    for (const auto& d : ap.decisions)
      cgls |= d.key == key && d.why.find("CGLS") != std::string::npos;
    EXPECT_TRUE(cgls) << key;
  }
}

}  // namespace
