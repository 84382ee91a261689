// auto_problem: the decisions a bring-your-own problem gets from its size
// and data, an end-to-end solve through a caller's matrix model that reaches
// the noise floor and a clean reconstruction, the penalty calibration, the
// report, and the errors.
#include "nefi/byop/auto_problem.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "byop_test_models.h"
#include "fk/factory.h"
#include "fk/test_util.h"
#include "fk/thread_count.h"
#include "nefi/byop/constant_fit.h"
#include "nefi/byop/quick_report.h"
#include "nefi/diagnostics/data_fit.h"
#include "nefi/field/parametric_field.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/operators/pointwise.h"
#include "nefi/operators/sampling.h"
#include "nefi/solve/metrics.h"

namespace {

using nefi::auto_problem;
using nefi::AutoOptions;

using nefi::test::Blur1D;
using nefi::test::value_of;

TEST(NefiAutoProblem, DecisionsFollowTheSizeAndData) {
  const fk::test::ThreadCount one(1);
  const Blur1D b(256, 0.01);
  AutoOptions o;
  o.prior = "nonnegative";
  const auto ap = auto_problem(b.op, {256}, b.measurement(), o);
  EXPECT_EQ(value_of(ap, "network"), "64 x 3");
  EXPECT_EQ(value_of(ap, "n_octaves"), "8");
  EXPECT_EQ(ap.curriculum.total_steps(), 1500 / 2);  // (256 / 4096)^(1/4) = 0.5
  ASSERT_EQ(ap.curriculum.stages.size(), 1u);
  EXPECT_EQ(ap.curriculum.stages[0].shape, fk::Dims{256});
  EXPECT_NEAR(ap.curriculum.stages[0].lr, 1e-2, 1e-12);
  // The closed-form constant fit: the mean level that the blurred data
  // carry (a row-normalised blur maps a constant to itself).
  double mean = 0;
  for (double v : b.y) mean += v / 256;
  EXPECT_NEAR(ap.constant_fits[0], mean, 1e-6);
  // The estimated noise is the drawn one within 10 % (252 stencils).
  EXPECT_TRUE(ap.noise_estimated);
  EXPECT_NEAR(ap.noise_std, b.sigma, 0.1 * b.sigma);
  EXPECT_EQ(ap.curriculum.discrepancy_tau, 1.0);
  // Larger grids get larger networks and budgets.
  const auto big = [&](fk::Dims shape) {
    auto op = std::make_shared<nefi::FunctionOperator>(
        shape, shape,
        nefi::ForwardModel{[](const std::vector<fk::Tensor>& xs) { return xs[0]; },
                           [](const std::vector<fk::Tensor>&, const fk::Tensor& g) {
                             return std::vector<fk::Tensor>{g};
                           }},
        1.0);
    nefi::Measurement m;
    m.data = fk::full(shape, 2.0);
    AutoOptions q;
    q.noise_std = 0.0;
    return auto_problem(op, shape, m, q);
  };
  const auto p2 = big({256, 256});
  EXPECT_EQ(value_of(p2, "network"), "256 x 5");
  EXPECT_EQ(value_of(p2, "n_octaves"), "8");
  EXPECT_EQ(p2.curriculum.total_steps(), 3000);  // (65536 / 4096)^(1/4) = 2
  EXPECT_EQ(value_of(big({128, 128}), "network"), "128 x 4");
  EXPECT_NEAR(p2.constant_fits[0], 2.0, 1e-9);
  EXPECT_FALSE(p2.curriculum.discrepancy_tau.has_value());  // sigma 0: no Morozov stop
  EXPECT_EQ(value_of(big({16, 8}), "network"), "64 x 3");
  EXPECT_EQ(value_of(big({16, 8}), "extent"), "[1, 0.5]");  // the lengths, not the grid
  EXPECT_EQ(p2.problem.domain.extent(), (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(big({16, 8}).problem.domain.extent(), (std::vector<double>{1.0, 0.5}));
}

TEST(NefiAutoProblem, SolvesABlurToTheNoiseFloor) {
  // Three bumps on 128 cells through a 2-cell blur at 1 % noise, sigma
  // estimated. Without a penalty the field fits the noise by the time
  // annealing ends (about 22 dB); "smooth" at its default strength recovers
  // about 31 dB, tv about 30.
  const fk::test::ThreadCount one(1);
  const Blur1D b(128, 0.01);
  const fk::Tensor gt = fk::from_vector(b.gt, {128});
  auto solve = [&](const std::string& prior) {
    AutoOptions o;
    o.prior = prior;
    const auto ap = auto_problem(b.op, {128}, b.measurement(), o);
    const nefi::Result r = ap.solve();
    const fk::Tensor x = r.fields.at("x").to(fk::DType::F64);
    for (double v : x.to_vector<double>()) EXPECT_GE(v, 0.0);  // the nonnegative head
    const auto fit = nefi::diagnostics::data_fit(ap.problem.measurement, r.prediction);
    EXPECT_TRUE(fit && fit->rmse_over_sigma && *fit->rmse_over_sigma < 1.5)
        << nefi::quick_report(ap, r, {{"x", gt}});
    return std::pair{nefi::psnr(x, gt), nefi::quick_report(ap, r, {{"x", gt}})};
  };
  const auto [bare, bare_report] = solve("nonnegative");
  const auto [smooth, report] = solve("nonnegative + smooth");
  EXPECT_GT(smooth, 29.0) << report;
  EXPECT_GT(smooth, bare + 5.0) << bare_report << report;
  EXPECT_NE(report.find("chi = RMSE / sigma"), std::string::npos) << report;
  EXPECT_NE(report.find("ground truth: PSNR"), std::string::npos) << report;
  EXPECT_NE(report.find("| smooth_weight |"), std::string::npos) << report;
}

// The same blur with the spectral field and no penalty: its gains keep the
// modes the blur hides small, where a grid fits the noise into them; with
// multiscale its coarse stage's modes carry over to the native grid.
TEST(NefiAutoProblem, ASpectralFieldNeedsNoPenaltyBehindABlur) {
  const fk::test::ThreadCount one(1);
  const Blur1D b(128, 0.01);
  const fk::Tensor gt = fk::from_vector(b.gt, {128});
  auto solve = [&](const std::string& representation, bool multiscale) {
    AutoOptions o;
    o.prior = "nonnegative";
    o.representation = representation;
    o.multiscale = multiscale;
    const auto ap = auto_problem(b.op, {128}, b.measurement(), o);
    const nefi::Result r = ap.solve();
    const auto fit = nefi::diagnostics::data_fit(ap.problem.measurement, r.prediction);
    const std::string report = nefi::quick_report(ap, r, {{"x", gt}});
    EXPECT_TRUE(fit && fit->rmse_over_sigma && *fit->rmse_over_sigma < 1.5) << report;
    EXPECT_EQ(r.stages.size(), multiscale ? 2u : 1u) << report;
    return std::pair{nefi::psnr(r.fields.at("x").to(fk::DType::F64), gt), report};
  };
  const auto [grid, grid_report] = solve("grid", false);
  const auto [spectral, report] = solve("spectral", false);
  const auto [staged, staged_report] = solve("spectral", true);
  EXPECT_NE(report.find("cosines [128] per field"), std::string::npos) << report;
  EXPECT_GT(spectral, grid + 5.0) << grid_report << report;
  EXPECT_GT(staged, grid + 5.0) << grid_report << staged_report;
}

TEST(NefiAutoProblem, MultiscaleTrainsACoarseFieldThroughTheSameModel) {
  const fk::test::ThreadCount one(1);
  const Blur1D b(128, 0.01);
  AutoOptions o;
  o.prior = "nonnegative + smooth";
  o.budget = "400";
  o.multiscale = true;
  const auto ap = auto_problem(b.op, {128}, b.measurement(), o);
  ASSERT_EQ(ap.curriculum.stages.size(), 2u);
  EXPECT_EQ(ap.curriculum.stages[0].shape, fk::Dims{64});
  EXPECT_EQ(ap.curriculum.stages[0].steps, 120);
  EXPECT_EQ(ap.curriculum.stages[1].steps, 280);
  EXPECT_DOUBLE_EQ(ap.curriculum.stages[1].lr, 0.5 * ap.curriculum.stages[0].lr);
  const nefi::Result r = ap.solve();
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_EQ(r.fields.at("x").shape(), fk::Dims{128});
  EXPECT_GT(nefi::psnr(r.fields.at("x").to(fk::DType::F64), fk::from_vector(b.gt, {128})), 28.0);
  // Below 16 cells an axis keeps one stage.
  const Blur1D small(12, 0.01);
  o.noise_std = 0.01;
  EXPECT_EQ(auto_problem(small.op, {12}, small.measurement(), o).curriculum.stages.size(), 1u);
}

// A built-in operator under multiscale stays on its grid: the coarse stage
// sees it through the prolongation, so its data keep their shape (here about
// a third of the cells sampled, which no resampling of the data could keep),
// and the two-stage fit matches one stage's quality (grid fields).
TEST(NefiAutoProblem, MultiscaleKeepsABuiltInOperatorOnItsGrid) {
  const fk::test::ThreadCount one(1);
  const int64_t n = 32;
  const fk::Tensor img = nefi::test::shapes_phantom(n, 1.0);
  const fk::Tensor mask = nefi::test::variable_density_mask(n, 0.15, 0.3, 7);
  auto op = std::make_shared<nefi::SamplingOperator>(mask);
  nefi::Measurement m;
  m.data = op->apply(img);
  AutoOptions o;
  o.prior = "nonnegative + tv";
  o.noise_std = 0.0;
  o.budget = "400";
  o.representation = "grid";
  o.multiscale = true;
  const auto ap = auto_problem(op, {n, n}, m, o);
  ASSERT_EQ(ap.curriculum.stages.size(), 2u);
  EXPECT_EQ(ap.problem.op->kind(), op->kind());
  const auto coarse = ap.problem.op->at_resolution({n / 2, n / 2});
  EXPECT_EQ(coarse->output_shape({n / 2, n / 2}), m.data.shape());
  EXPECT_EQ(ap.problem.op->at_resolution({n, n}), ap.problem.op);
  const nefi::Result r = ap.solve();
  ASSERT_EQ(r.stages.size(), 2u);
  o.multiscale = false;
  const nefi::Result one_stage = auto_problem(op, {n, n}, m, o).solve();
  const fk::Tensor gt = img.to(fk::DType::F64);
  EXPECT_GT(nefi::psnr(r.fields.at("x").to(fk::DType::F64), gt),
            nefi::psnr(one_stage.fields.at("x").to(fk::DType::F64), gt) - 3.0);
}

TEST(NefiAutoProblem, PenaltiesAreWeighedAgainstTheNoiseFloor) {
  const fk::test::ThreadCount one(1);
  const Blur1D b(64, 0.02);
  AutoOptions o;
  o.prior = "nonnegative + tv(0.5) + smooth(2)";
  o.noise_std = b.sigma;
  const auto ap = auto_problem(b.op, {64}, b.measurement(), o);
  ASSERT_EQ(ap.problem.losses.terms().size(), 3u);
  for (const auto& [kind, strength, term] : {std::tuple{"tv", "0.5", 1}, {"smooth", "2", 2}}) {
    const auto& t = ap.problem.losses.terms()[term];
    EXPECT_EQ(t.loss->name(), kind);
    EXPECT_GT(t.weight, 0);
    // weight = strength x data term at the noise floor / penalty(probe).
    const std::string why = [&] {
      for (const auto& d : ap.decisions)
        if (d.key == std::string(kind) + "_weight") return d.why;
      return std::string();
    }();
    EXPECT_NE(why.find("strength " + std::string(strength) + " x"), std::string::npos) << why;
  }
}

TEST(NefiAutoProblem, ConstantsTheModelCannotTakeAreSkipped) {
  // y = exp(-x): the search's x = -1000 overflows; the fit goes on without it.
  const int64_t n = 32;
  nefi::ForwardModel f;
  f.forward = [](const std::vector<fk::Tensor>& xs) {
    std::vector<double> v = xs[0].to_vector<double>();
    for (double& e : v) e = std::exp(-e);
    return fk::from_vector(v, xs[0].shape());
  };
  f.vjp = [](const std::vector<fk::Tensor>& xs, const fk::Tensor& g) {
    std::vector<double> v = xs[0].to_vector<double>(), gv = g.to_vector<double>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = -std::exp(-v[i]) * gv[i];
    return std::vector<fk::Tensor>{fk::from_vector(v, g.shape())};
  };
  auto op = std::make_shared<nefi::FunctionOperator>(fk::Dims{n}, fk::Dims{n}, f, std::nullopt,
                                                     "beer_lambert");
  nefi::Measurement m;
  m.data = fk::full({n}, std::exp(-0.3));
  AutoOptions o;
  o.noise_std = 0.0;
  const auto ap = auto_problem(op, {n}, m, o);
  EXPECT_NEAR(ap.constant_fits[0], std::pow(10.0, -0.5), 1e-12);  // the grid point nearest 0.3
  // A model finite nowhere on the grid is named.
  nefi::ForwardModel nan = f;
  nan.forward = [](const std::vector<fk::Tensor>& xs) { return fk::full(xs[0].shape(), NAN); };
  auto bad = std::make_shared<nefi::FunctionOperator>(fk::Dims{n}, fk::Dims{n}, nan, std::nullopt,
                                                      "broken");
  const std::string e = fk::test::error_of([&] { (void)auto_problem(bad, {n}, m, o); });
  EXPECT_NE(e.find("forward model 'broken'"), std::string::npos) << e;
}

TEST(NefiAutoProblem, AnEstimatedNoiseThatExplainsTheDataIsRefused) {
  // Random projections are not a smooth sampled signal: the stencil
  // estimate calls them noise, and auto_problem asks for sigma instead.
  const int64_t n = 64, m = 96;
  const auto a = fk::test::random_values(m * n, -1, 1, 21);
  auto op = std::make_shared<nefi::FunctionOperator>(
      fk::Dims{n}, fk::Dims{m}, nefi::test::matrix_model(a, m, n), 1.0, "projections");
  const auto x = fk::test::random_values(n, 0, 1, 22);
  std::vector<double> y(m, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) y[i] += a[i * n + j] * x[j];
  nefi::Measurement meas;
  meas.data = fk::from_vector(y, {m});
  const std::string e = fk::test::error_of([&] { (void)auto_problem(op, {n}, meas, {}); });
  EXPECT_NE(e.find("pass noise= with the sigma"), std::string::npos) << e;
  EXPECT_NE(e.find("or a signal weak against its noise"), std::string::npos) << e;
  AutoOptions o;
  o.noise_std = 0.001;
  EXPECT_NO_THROW((void)auto_problem(op, {n}, meas, o));
}

TEST(NefiAutoProblem, ErrorsNameWhatIsWrong) {
  const Blur1D b(16, 0.01);
  auto err = [&](auto f) { return fk::test::error_of(f); };
  nefi::Measurement m = b.measurement();
  m.data = fk::zeros({15});
  EXPECT_NE(err([&] { (void)auto_problem(b.op, {16}, m, {}); }).find("output shape [16]"),
            std::string::npos);
  m = b.measurement();
  std::vector<double> y = b.y;
  y[3] = NAN;
  m.data = fk::from_vector(y, {16});
  EXPECT_NE(err([&] { (void)auto_problem(b.op, {16}, m, {}); }).find("cell 3"), std::string::npos);
  // f64 data past f32's range are named so, not as non-finite (they were
  // cast to f32 first).
  y = b.y;
  y[5] = 1e300;
  m.data = fk::from_vector(y, {16});
  EXPECT_NE(err([&] { (void)auto_problem(b.op, {16}, m, {}); })
                .find("data within f32's range (|y| <= 3.4e38: the fit runs in f32; rescale them), "
                      "got 1e+300 at cell 5"),
            std::string::npos);
  AutoOptions o;
  o.budget = "lots";
  EXPECT_NE(err([&] { (void)auto_problem(b.op, {16}, b.measurement(), o); }).find("'lots'"),
            std::string::npos);
  o = {};
  o.representation = "octree";
  EXPECT_NE(err([&] { (void)auto_problem(b.op, {16}, b.measurement(), o); })
                .find("neural, grid, hash, lowrank, blobs, ellipses, stars, polygons, layers, "
                      "layers+blobs, layers+ellipses or spectral"),
            std::string::npos);
  o = {};
  o.representation = "blobs";
  o.shapes = 0;
  EXPECT_NE(err([&] { (void)auto_problem(b.op, {16}, b.measurement(), o); }).find("shape count"),
            std::string::npos);
  o = {};
  o.representation = "stars";  // on a 1-D field
  EXPECT_NE(err([&] {
              (void)auto_problem(b.op, {16}, b.measurement(), o);
            }).find("stars on a 2- or 3-D field"),
            std::string::npos);
  o.harmonics = 9;
  EXPECT_NE(err([&] {
              (void)auto_problem(b.op, {16}, b.measurement(), o);
            }).find("an outline degree in [3, 8]"),
            std::string::npos);
  o = {};
  o.representation = "polygons";  // on a 1-D field
  EXPECT_NE(err([&] {
              (void)auto_problem(b.op, {16}, b.measurement(), o);
            }).find("polygons on a 2-D field"),
            std::string::npos);
  o.vertices = 2;
  EXPECT_NE(err([&] {
              (void)auto_problem(b.op, {16}, b.measurement(), o);
            }).find("a vertex count in [3, 16]"),
            std::string::npos);
  o = {};
  o.representation = "layers";
  o.layers = 1;
  EXPECT_NE(err([&] {
              (void)auto_problem(b.op, {16}, b.measurement(), o);
            }).find("a layer count in [2, 64]"),
            std::string::npos);
  o.layers = 3;
  o.layer_axis = 1;  // of a 1-D field
  EXPECT_NE(err([&] {
              (void)auto_problem(b.op, {16}, b.measurement(), o);
            }).find("an axis of the 1-D field"),
            std::string::npos);
  o.layer_axis = 0;
  o.harmonics = -1;
  EXPECT_NE(err([&] {
              (void)auto_problem(b.op, {16}, b.measurement(), o);
            }).find("an interface degree in [0, 8]"),
            std::string::npos);
  o = {};
  o.representation = "spectral";
  o.modes = -1;
  EXPECT_NE(
      err([&] { (void)auto_problem(b.op, {16}, b.measurement(), o); }).find("modes: expected"),
      std::string::npos);
  o.modes = 0;
  o.smoothness = 9;
  EXPECT_NE(err([&] {
              (void)auto_problem(b.op, {16}, b.measurement(), o);
            }).find("a smoothness in [0, 8]"),
            std::string::npos);
  o = {};
  o.extent = {1, 2};
  EXPECT_NE(err([&] { (void)auto_problem(b.op, {16}, b.measurement(), o); }).find("1 lengths"),
            std::string::npos);
  o = {};
  o.lr = -1;
  EXPECT_NE(err([&] { (void)auto_problem(b.op, {16}, b.measurement(), o); }).find("learning rate"),
            std::string::npos);
  o = {};
  o.hidden = 0;
  EXPECT_NE(err([&] { (void)auto_problem(b.op, {16}, b.measurement(), o); }).find("hidden"),
            std::string::npos);
  o = {};
  o.noise_std = -1;
  EXPECT_NE(err([&] { (void)auto_problem(b.op, {16}, b.measurement(), o); }).find("sigma >= 0"),
            std::string::npos);
}

TEST(NefiAutoProblem, SeveralFieldsGetTheirOwnHeadsFitsAndPenalties) {
  // Two fields on 128 cells: "a" (bumps, >= 0) through the blur, "b" (a
  // signed ramp) seen directly; the output stacks both, (2, n).
  const fk::test::ThreadCount one(1);
  const int64_t n = 128;
  const nefi::test::BumpsAndRamp two(n, std::nullopt);
  const Blur1D& b = two.bumps;
  const std::vector<double>& ramp = two.ramp;
  AutoOptions o;
  o.field_priors = {{"a", "nonnegative + smooth"}, {"b", "unconstrained + smooth(0.1)"}};
  o.noise_std = 0.005;
  const auto ap = auto_problem(two.op, {n}, two.measurement, o);
  EXPECT_EQ(ap.fields, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(value_of(ap, "head:a"), "nonnegative + smooth(1)");
  EXPECT_NE(value_of(ap, "smooth:b_weight"), "");
  EXPECT_GT(ap.constant_fits[0], 0.0);
  EXPECT_LT(std::abs(ap.constant_fits[1]), 0.01);  // the ramp's mean, -1 / 256, on the grid
  const nefi::Result r = ap.solve();
  EXPECT_GT(nefi::psnr(r.fields.at("a").to(fk::DType::F64), fk::from_vector(b.gt, {n})), 25.0);
  EXPECT_LT(fk::test::relative_l2(r.fields.at("b").to(fk::DType::F64).to_vector<double>(), ramp),
            0.1);
  EXPECT_NE(nefi::quick_report(ap, r).find("a: nonnegative"), std::string::npos);
  AutoOptions bad = o;
  bad.field_priors = {{"a", "nonnegative"}, {"a", "signed"}};
  EXPECT_NE(fk::test::error_of([&] {
              (void)auto_problem(two.op, {n}, two.measurement, bad);
            }).find("distinct"),
            std::string::npos);
  bad.field_priors = {{"a", "nonnegative"}, {"b", "wiggly"}};
  EXPECT_NE(fk::test::error_of([&] {
              (void)auto_problem(two.op, {n}, two.measurement, bad);
            }).find("prior of field 'b'"),
            std::string::npos);
}

}  // namespace
