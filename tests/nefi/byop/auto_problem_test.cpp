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

std::string value_of(const nefi::AutoProblem& ap, const std::string& key) {
  for (const auto& d : ap.decisions)
    if (d.key == key) return d.value;
  return "";
}

// Bumps on n cells seen through a blur matrix, with noise of `rel` x max.
struct Blur1D {
  int64_t n;
  std::vector<double> gt, y;
  double sigma;
  nefi::OperatorPtr op;
  Blur1D(int64_t n_, double rel, unsigned seed = 1) : n(n_) {
    const auto a = nefi::test::blur_matrix(n, 2.0);
    op = std::make_shared<nefi::FunctionOperator>(fk::Dims{n}, fk::Dims{n},
                                                  nefi::test::matrix_model(a, n, n), 1.0, "blur");
    gt.assign(n, 0.0);
    for (auto [c, w, h] : {std::tuple{0.3, 0.05, 1.0}, {0.6, 0.03, 0.6}, {0.75, 0.08, 0.8}})
      for (int64_t i = 0; i < n; ++i)
        gt[i] += h * std::exp(-0.5 * std::pow(((i + 0.5) / n - c) / w, 2));
    y.assign(n, 0.0);
    double mx = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) y[i] += a[i * n + j] * gt[j];
      mx = std::max(mx, y[i]);
    }
    sigma = rel * mx;
    std::mt19937_64 g(seed);
    std::normal_distribution<double> nd(0, sigma);
    for (double& v : y) v += nd(g);
  }
  nefi::Measurement measurement() const {
    nefi::Measurement m;
    m.data = fk::from_vector(y, {n});
    return m;
  }
};

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
  EXPECT_EQ(value_of(big({16, 8}), "extent"), "[16, 8]");
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

// Blobs: the misfit's gradient at the constant start is 2 A^T (A c - y) / n
// (a hand adjoint here), the three shapes start at its three strongest pulls
// (the bumps, 0.3, 0.6 and 0.75 of the axis), and the fit reaches the noise.
TEST(NefiAutoProblem, BlobsStartWhereTheDataPullAndFitTheBumps) {
  const fk::test::ThreadCount one(1);
  const Blur1D b(128, 0.01);
  const auto a = nefi::test::blur_matrix(128, 2.0);
  nefi::ConstantFields k;
  k.shape = {128};
  k.names = {"x"};
  k.support = {fk::Tensor()};
  k.fill = {0.0};
  nefi::Weighted d;
  d.y = b.y;
  d.w.assign(128, 1.0);
  d.wsum = 128;
  const double c = 0.2;
  const auto g = nefi::misfit_gradient_at(*b.op, k, d, {c})[0].to_vector<double>();
  std::vector<double> r(128, 0.0);
  for (int64_t i = 0; i < 128; ++i) {
    double ax = 0;
    for (int64_t j = 0; j < 128; ++j) ax += a[i * 128 + j] * c;
    r[i] = 2 * (ax - b.y[i]) / 128;
  }
  for (int64_t j = 0; j < 128; ++j) {
    double want = 0;
    for (int64_t i = 0; i < 128; ++i) want += a[i * 128 + j] * r[i];
    EXPECT_NEAR(g[j], want, 1e-12) << j;
  }
  AutoOptions o;
  o.representation = "blobs";
  o.shapes = 3;
  o.budget = "2000";
  const auto ap = auto_problem(b.op, {128}, b.measurement(), o);
  EXPECT_NE(value_of(ap, "representation").find("blobs"), std::string::npos);
  const auto* pf = dynamic_cast<const nefi::ParametricField*>(ap.problem.field.get());
  ASSERT_NE(pf, nullptr);
  std::vector<double> starts = pf->start_shapes(0, 0).centres;
  std::sort(starts.begin(), starts.end());
  const double want[3] = {-0.4, 0.2, 0.5};  // 2 c - 1
  for (int s = 0; s < 3; ++s) EXPECT_NEAR(starts[s], want[s], 0.05) << s;
  const nefi::Result res = ap.solve();
  const auto fit = nefi::diagnostics::data_fit(ap.problem.measurement, res.prediction);
  const fk::Tensor gt = fk::from_vector(b.gt, {128});
  const std::string report = nefi::quick_report(ap, res, {{"x", gt}});
  EXPECT_TRUE(fit && fit->rmse_over_sigma && *fit->rmse_over_sigma < 1.2) << report;
  EXPECT_GT(nefi::psnr(res.fields.at("x").to(fk::DType::F64), gt), 35.0) << report;
}

// A 3-D ellipsoidal gaussian (axes 0.3, 0.2, 0.15, rotated about the last
// axis) seen directly at 1 % noise: one blob, started at the data's pull,
// lands on its centre and fits to the noise.
TEST(NefiAutoProblem, OneBlobFindsA3dSourcesCentre) {
  const fk::test::ThreadCount one(1);
  const int64_t n = 12;
  const nefi::Domain dom({n, n, n});
  const std::vector<double> xyz = dom.coords(fk::DType::F64).to_vector<double>();
  const double c[3] = {0.3, -0.2, 0.1}, th = 0.5;
  std::vector<double> y(n * n * n);
  std::mt19937_64 g(4);
  std::normal_distribution<double> nd(0, 0.01);
  for (int64_t i = 0; i < n * n * n; ++i) {
    const double dx = xyz[3 * i] - c[0], dy = xyz[3 * i + 1] - c[1], dz = xyz[3 * i + 2] - c[2];
    const double u = std::cos(th) * dx + std::sin(th) * dy,
                 v = -std::sin(th) * dx + std::cos(th) * dy;
    y[i] = std::exp(-0.5 * (u * u / 0.09 + v * v / 0.04 + dz * dz / 0.0225)) + nd(g);
  }
  nefi::Measurement m;
  m.data = fk::from_vector(y, {n, n, n});
  AutoOptions o;
  o.representation = "blobs";
  o.shapes = 1;
  o.noise_std = 0.01;
  o.budget = "1500";
  const auto ap = auto_problem(std::make_shared<nefi::IdentityOperator>(), {n, n, n}, m, o);
  const auto* pf = dynamic_cast<const nefi::ParametricField*>(ap.problem.field.get());
  ASSERT_NE(pf, nullptr);
  EXPECT_EQ(pf->placed_from_map(0), 1);
  const nefi::Result r = ap.solve();
  const auto fit = nefi::diagnostics::data_fit(ap.problem.measurement, r.prediction);
  EXPECT_TRUE(fit && fit->rmse_over_sigma && *fit->rmse_over_sigma < 1.2)
      << nefi::quick_report(ap, r);
  const auto v = pf->params().raw(0).to_vector<double>();  // alpha, centre, M
  for (int a = 0; a < 3; ++a) EXPECT_NEAR(v[1 + a], c[a], 0.02) << a;
}

// A three-lobed inclusion seen through a 2-cell blur: one star, started
// where the data pull, finds its outline; one ellipse cannot bend to it.
TEST(NefiAutoProblem, AStarFindsALobedInclusionsOutline) {
  const fk::test::ThreadCount one(1);
  const int64_t n = 40;
  const nefi::Domain dom({n, n});
  const std::vector<double> xy = dom.coords(fk::DType::F64).to_vector<double>();
  std::vector<double> truth(n * n);
  for (int64_t i = 0; i < n * n; ++i) {
    const double dx = xy[2 * i] - 0.1, dy = xy[2 * i + 1] + 0.05;
    const double edge = 0.5 * (1 + 0.3 * std::cos(3 * (std::atan2(dy, dx) - 0.4)));
    truth[i] = std::hypot(dx, dy) < edge ? 1.2 : 0.2;
  }
  const auto op = std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(2.0 / n), dom);
  std::vector<double> y =
      op->apply(fk::from_vector(truth, {n, n}).to(fk::DType::F32)).to_vector<double>();
  std::mt19937_64 g(7);
  std::normal_distribution<double> nd(0, 0.01);
  for (double& v : y) v += nd(g);
  nefi::Measurement m;
  m.data = fk::from_vector(y, {n, n});
  // Intersection over union of the cells above half the contrast.
  auto iou = [&](const std::string& representation) {
    AutoOptions o;
    o.representation = representation;
    o.shapes = 1;
    o.noise_std = 0.01;
    o.budget = "1500";
    const auto ap = auto_problem(op, {n, n}, m, o);
    const std::vector<double> x = ap.solve().fields.at("x").to_vector<double>();
    int both = 0, either = 0;
    for (int64_t i = 0; i < n * n; ++i) {
      both += x[i] > 0.7 && truth[i] > 0.7;
      either += x[i] > 0.7 || truth[i] > 0.7;
    }
    return static_cast<double>(both) / either;
  };
  const double star = iou("stars"), ellipse = iou("ellipses");
  EXPECT_GT(star, 0.93);
  EXPECT_GT(star, ellipse + 0.05) << ellipse;
}

// Three layers down the first axis (0.3, 1.0, 0.6) meeting at two bent
// interfaces, away from the layered field's even start, on 48 x 48 behind
// a 2-cell blur with 1 % noise; with `inclusion`, an elliptic inclusion of
// 1.6 in the lowest layer.
struct StrataBehindABlur {
  static constexpr int64_t n = 48;
  std::vector<double> truth = std::vector<double>(n * n), mean_depth = {0, 0};
  std::shared_ptr<nefi::FFTConvolution> op;
  nefi::Measurement m;

  explicit StrataBehindABlur(bool inclusion) {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const double z = (2.0 * i + 1) / n - 1, x = (2.0 * j + 1) / n - 1;
        const double z1 = -0.6 + 0.12 * std::cos(std::numbers::pi * 0.8 * x + 0.3);
        const double z2 = 0.05 + 0.1 * std::sin(2 * std::numbers::pi * x / 1.5);
        const bool inside =
            inclusion && std::pow((z - 0.55) / 0.2, 2) + std::pow((x + 0.25) / 0.3, 2) < 1;
        truth[i * n + j] = inside ? 1.6 : z < z1 ? 0.3 : z < z2 ? 1.0 : 0.6;
        if (i == 0) {
          mean_depth[0] += z1 / n;
          mean_depth[1] += z2 / n;
        }
      }
    op = std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(2.0 / n), nefi::Domain({n, n}));
    std::vector<double> y =
        op->apply(fk::from_vector(truth, {n, n}).to(fk::DType::F32)).to_vector<double>();
    std::mt19937_64 g(3);
    std::normal_distribution<double> nd(0, 0.01);
    for (double& v : y) v += nd(g);
    m.data = fk::from_vector(y, {n, n});
  }

  // PSNR against the truth, chi and the fitted parameters of a fit with
  // `representation` (and `shapes`, when given).
  std::tuple<double, double, std::vector<double>> fit(const std::string& representation,
                                                      int shapes = 0) const {
    AutoOptions o;
    o.representation = representation;
    o.noise_std = 0.01;
    if (shapes > 0) o.shapes = shapes;
    const auto ap = auto_problem(op, {n, n}, m, o);
    const nefi::Result r = ap.solve();
    const auto f = nefi::diagnostics::data_fit(ap.problem.measurement, r.prediction);
    return {nefi::psnr(r.fields.at("x").to(fk::DType::F64), fk::from_vector(truth, {n, n})),
            f && f->rmse_over_sigma ? *f->rmse_over_sigma : 1e9,
            ap.problem.field->params().flat().to_vector<double>()};
  }
};

// The layers find both interfaces' mean depths and fit to the noise, where
// a grid (same budget) stays blurred.
TEST(NefiAutoProblem, LayersFindBentInterfacesBehindABlur) {
  const fk::test::ThreadCount one(1);
  const StrataBehindABlur s(false);
  const auto [layers_psnr, chi, p] = s.fit("layers");  // base, 2 jumps, 2 depths, modes
  EXPECT_LT(chi, 1.2);
  EXPECT_NEAR(p[3], s.mean_depth[0], 0.03);
  EXPECT_NEAR(p[4], s.mean_depth[1], 0.03);
  EXPECT_GT(layers_psnr, std::get<0>(s.fit("grid")) + 5) << layers_psnr;
}

// With an inclusion in the lowest layer one ellipse over the layers fits to
// the noise; the layers alone cannot (docs/performance.md, "Inclusions in
// strata"). Measured: 31.8 dB, chi 1.03 against 15.8 dB, chi 15.2.
TEST(NefiAutoProblem, LayersPlusAnEllipseFindAnInclusionInStrataBehindABlur) {
  const fk::test::ThreadCount one(1);
  const StrataBehindABlur s(true);
  const auto [both_psnr, both_chi, p] = s.fit("layers+ellipses", 1);
  const auto [layers_psnr, layers_chi, q] = s.fit("layers");
  EXPECT_LT(both_chi, 1.3) << both_psnr;
  EXPECT_GT(layers_chi, 5.0) << layers_psnr;
  EXPECT_GT(both_psnr, layers_psnr + 8) << both_psnr << " " << layers_psnr;
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
  EXPECT_NE(e.find("pass the noise sigma"), std::string::npos) << e;
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
  const Blur1D b(128, 0.0);
  const int64_t n = 128;
  const auto blur = nefi::test::matrix_model(nefi::test::blur_matrix(n, 2.0), n, n);
  nefi::ForwardModel f;
  f.forward = [blur](const std::vector<fk::Tensor>& xs) {
    std::vector<double> y = blur.forward({xs[0]}).to_vector<double>();
    const std::vector<double> r = xs[1].to_vector<double>();
    y.insert(y.end(), r.begin(), r.end());
    return fk::from_vector(y, {2, static_cast<int64_t>(r.size())});
  };
  f.vjp = [blur](const std::vector<fk::Tensor>& xs, const fk::Tensor& g) {
    return std::vector<fk::Tensor>{blur.vjp({xs[0]}, g.select(0, 0).contiguous())[0],
                                   g.select(0, 1).contiguous()};
  };
  auto op = std::make_shared<nefi::FunctionOperator>(fk::Dims{n}, fk::Dims{2, n}, f, std::nullopt,
                                                     "two", std::vector<std::string>{"a", "b"});
  std::vector<double> ramp(n), y = b.y;
  for (int64_t i = 0; i < n; ++i) y.push_back(ramp[i] = -0.5 + static_cast<double>(i) / n);
  nefi::Measurement m;
  m.data = fk::from_vector(y, {2, n});
  AutoOptions o;
  o.field_priors = {{"a", "nonnegative + smooth"}, {"b", "unconstrained + smooth(0.1)"}};
  o.noise_std = 0.005;
  const auto ap = auto_problem(op, {n}, m, o);
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
  EXPECT_NE(fk::test::error_of([&] { (void)auto_problem(op, {n}, m, bad); }).find("distinct"),
            std::string::npos);
  bad.field_priors = {{"a", "nonnegative"}, {"b", "wiggly"}};
  EXPECT_NE(
      fk::test::error_of([&] { (void)auto_problem(op, {n}, m, bad); }).find("prior of field 'b'"),
      std::string::npos);
}

}  // namespace
