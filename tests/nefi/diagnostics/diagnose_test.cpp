// diagnose on operators with a known spectrum: a pointwise gain map (J =
// diag(w): singular values |w| sorted, sensitivity w^2 exactly, blind cells
// where w = 0), a saturating detector (nonlinear, J = diag(sech^2(x / s))
// through the central-difference JVP), periodic and zero-padded Gaussian
// blurs against the singular values of their matrix built column by column;
// the data misfit against a known offset; the field's mean as a gauge of a
// difference operator; the written report.
#include <gtest/gtest.h>
#include <stb/stb_image.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "fk/cuda/runtime.h"
#include "fk/device.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/byop/byop_test_models.h"
#include "nefi/diagnostics/linearize.h"
#include "nefi/diagnostics/report.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/operators/function_operator.h"
#include "nefi/operators/pointwise.h"
#include "nefi/test_files.h"

namespace nefi::diagnostics {
namespace {

// A share of zeros, three gains well above the rest (3, -2.5, 2), the rest
// of magnitude in [0.1, 1], in shuffled places.
std::vector<double> gains(int n, double zero_share, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.1, 1);
  std::vector<double> w(n);
  for (int i = 0; i < n; ++i) w[i] = i < zero_share * n ? 0.0 : (i % 2 ? u(rng) : -u(rng));
  w[n - 1] = 3, w[n - 2] = -2.5, w[n - 3] = 2;
  std::shuffle(w.begin(), w.end(), rng);
  return w;
}

Measurement measured(const fk::Tensor& data, double noise) {
  Measurement m;
  m.data = data;
  m.noise_std = noise;
  return m;
}

TEST(Diagnose, PointwiseGainsGiveTheirSpectrumAndSensitivity) {
  const int n = 64 * 64;
  const std::vector<double> w = gains(n, 0.25, 1);
  const PointwiseOperator op(fk::from_vector(w, {64, 64}));
  const fk::Tensor x = fk::full({64, 64}, 0.5, {fk::DType::F64});
  DiagnoseOptions o;
  o.k = 5;
  o.n_iter = 60;
  o.probes = 64;
  const Diagnostics d = diagnose(op, x, measured(op.apply(x), 0.01), o);
  EXPECT_EQ(d.jvp_mode, "exact (linear operator)");
  std::vector<double> want;
  for (double v : w) want.push_back(std::abs(v));
  std::sort(want.begin(), want.end(), std::greater<>());
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(d.spectrum.singular_values[i], want[i], 1e-10) << i;
  // Rademacher probes of a diagonal J^T J are exact.
  for (int i = 0; i < n; ++i) ASSERT_NEAR(d.probes.sensitivity[i], w[i] * w[i], 1e-12) << i;
  EXPECT_NEAR(d.probes.blind_fraction, std::ceil(0.25 * n) / n, 1e-15);
  double mean_sq = 0;
  for (double v : w) mean_sq += v * v / n;
  const double s1 = d.spectrum.singular_values[0];
  EXPECT_NEAR(d.probes.visible_mean, mean_sq / (s1 * s1), 0.03 * mean_sq / (s1 * s1));
  EXPECT_EQ(d.probes.dark_fraction, 0.0);
  EXPECT_NEAR(d.residual_rms, 0.0, 1e-15);
  EXPECT_NEAR(d.misfit_ratio, 0.0, 1e-12);
}

// A mask weighs the data: the map diagnosed is sqrt(w) J. Unit gains seen
// through weights 0 (a quarter of the cells), 0.25 and 1 give sensitivity w,
// singular values 1 (and 0.5), and the unobserved quarter blind.
TEST(Diagnose, TheMaskWeighsWhatTheDataSee) {
  const int n = 32 * 32;
  const PointwiseOperator op(fk::full({32, 32}, 1.0, {fk::DType::F64}));
  std::vector<double> w(n);
  for (int i = 0; i < n; ++i) w[i] = i % 4 == 0 ? 0.0 : i % 4 == 1 ? 0.25 : 1.0;
  const fk::Tensor x = fk::full({32, 32}, 0.5, {fk::DType::F64});
  Measurement y = measured(op.apply(x), 0.01);
  y.mask = fk::from_vector(w, {32, 32});
  DiagnoseOptions o;
  o.k = 2;
  o.n_iter = 8;
  o.exact_sensitivity = true;
  const Diagnostics d = diagnose(op, x, y, o);
  EXPECT_NEAR(d.spectrum.singular_values[0], 1.0, 1e-12);
  for (int i = 0; i < n; ++i) ASSERT_NEAR(d.probes.sensitivity[i], w[i], 1e-12) << i;
  EXPECT_NEAR(d.probes.blind_fraction, 0.25, 1e-15);
  // The mean as the data see it: |sqrt(w)| / sqrt(n) (sigma_1 = 1).
  double seen = 0;
  for (double v : w) seen += v / n;
  EXPECT_NEAR(d.constant_visibility, std::sqrt(seen), 1e-12);
}

// The constant direction: seen by gains at |w|_2 / (sqrt(n) max |w|); a
// difference operator (data of first differences, as a gradient sensor
// gives) does not see it at all: a gauge the report names.
TEST(Diagnose, TheFieldsMeanIsAGaugeOfADifferenceOperator) {
  const int n = 32;
  const std::vector<double> w = gains(n, 0.0, 2);
  const PointwiseOperator gain(fk::from_vector(w, {n}));
  const fk::Tensor x = fk::full({n}, 0.5, {fk::DType::F64});
  DiagnoseOptions o;
  o.k = 3;
  o.n_iter = 32;
  o.probes = 4;
  const Diagnostics g = diagnose(gain, x, measured(gain.apply(x), 0.01), o);
  double norm = 0, peak = 0;
  for (double v : w) norm += v * v, peak = std::max(peak, std::abs(v));
  EXPECT_NEAR(g.constant_visibility, std::sqrt(norm / n) / peak, 1e-12);
  EXPECT_NE(diagnostics_md(g).find("sigma_1: seen."), std::string::npos);
  std::vector<double> diff((n - 1) * n, 0.0);  // y_i = x_{i+1} - x_i
  for (int i = 0; i + 1 < n; ++i) diff[i * n + i] = -1, diff[i * n + i + 1] = 1;
  const FunctionOperator grad(fk::Dims{n}, fk::Dims{n - 1}, test::matrix_model(diff, n - 1, n), 1.0,
                              "difference");
  const Diagnostics d = diagnose(grad, x, measured(fk::zeros({n - 1}, {fk::DType::F64}), 0.01), o);
  EXPECT_LT(d.constant_visibility, 1e-12);
  EXPECT_NE(diagnostics_md(d).find("a gauge, the data do not fix the field's mean"),
            std::string::npos)
      << diagnostics_md(d);
  EXPECT_TRUE(nlohmann::json::parse(diagnostics_json(d))["gauges"]["constant_is_gauge"]);
}

TEST(Diagnose, SaturationThroughCentralDifferences) {
  const double level = 0.7;
  // 40 points symmetric about 0.
  std::vector<double> xs(40);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = -1.5 + 3.0 * i / (xs.size() - 1);
  const fk::Tensor x = fk::from_vector(xs, {40});
  const SaturationOperator op(level);
  const Linearization L = linearize(op, x);
  EXPECT_EQ(L.jvp_mode, "central difference");
  // Dot test of the two products: <J v, u> = <v, J^T u> to the difference's error.
  std::mt19937_64 rng(4);
  std::normal_distribution<double> g;
  Vec v(40), u(40);
  for (double& t : v) t = g(rng);
  for (double& t : u) t = g(rng);
  const Vec jv = L.map.apply(v), jtu = L.map.adjoint(u);
  double a = 0, b = 0;
  for (int i = 0; i < 40; ++i) a += jv[i] * u[i], b += v[i] * jtu[i];
  EXPECT_NEAR(a, b, 1e-8 * std::abs(b));
  std::vector<double> want;
  for (double t : xs) want.push_back(1 / std::pow(std::cosh(t / level), 2));
  std::sort(want.begin(), want.end(), std::greater<>());
  DiagnoseOptions o;
  o.k = 3;
  o.n_iter = 40;
  o.probes = 4;
  const Diagnostics d = diagnose(op, x, measured(op.apply(x), -1), o);
  // The grid is symmetric, so each gain comes twice; 40 steps exhaust the
  // space and find both copies.
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(d.spectrum.singular_values[i], want[i], 1e-8) << i;
  EXPECT_TRUE(std::isnan(d.misfit_ratio));  // no noise level
  EXPECT_NE(diagnostics_md(d).find("noise level unknown"), std::string::npos);
  // Noise-free data have a known sigma, 0: said so, not "unknown".
  const Diagnostics z = diagnose(op, x, measured(op.apply(x), 0.0), o);
  EXPECT_NE(diagnostics_md(z).find("noise-free data"), std::string::npos) << diagnostics_md(z);
  EXPECT_EQ(diagnostics_md(z).find("nan"), std::string::npos) << diagnostics_md(z);
  // The verdict is the fit report's own (misfit_verdict), bands and all.
  Diagnostics above = d;
  above.noise_std = 1;
  above.misfit_ratio = 1.95;
  EXPECT_NE(diagnostics_md(above).find("slightly above the noise floor"), std::string::npos);
}

// The singular values of the operator's matrix, built column by column
// from its action on unit vectors (a plain reference for small grids).
std::vector<double> dense_reference(const Operator& op, const fk::Dims& shape) {
  const int64_t n = shape.numel();
  std::vector<std::vector<double>> cols;
  for (int64_t j = 0; j < n; ++j) {
    std::vector<double> e(n, 0.0);
    e[j] = 1;
    cols.push_back(op.apply(fk::from_vector(e, shape)).to_vector<double>());
  }
  const int64_t m = static_cast<int64_t>(cols[0].size());
  std::vector<double> a(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) a[i * n + j] = cols[j][i];
  return dense_singular_values(a, static_cast<int>(m), static_cast<int>(n));
}

TEST(Diagnose, BlursMatchTheirDenseMatrix) {
  const int n = 48;
  const Domain dom({n}, {1.0});
  for (const bool periodic : {true, false}) {
    const FFTConvolution op(gaussian_psf(0.05), dom, periodic);
    const std::vector<double> want = dense_reference(op, {n});
    // A circulant's values come in pairs (|K_f| = |K_{n-f}|): enough steps
    // to exhaust the space find both copies.
    DiagnoseOptions o;
    o.k = 6;
    o.n_iter = n;
    o.probes = 4;
    const fk::Tensor x = fk::zeros({n}, {fk::DType::F64});
    const Diagnostics d = diagnose(op, x, measured(op.apply(x), 0.1), o);
    for (int i = 0; i < 6; ++i)
      EXPECT_NEAR(d.spectrum.singular_values[i], want[i], 1e-10) << periodic << " " << i;
    EXPECT_NEAR(d.condition, want[0] / want[5], 1e-8);
    // --exact-sensitivity: each column's norm squared, as the matrix has it.
    o.exact_sensitivity = true;
    const Diagnostics e = diagnose(op, x, measured(op.apply(x), 0.1), o);
    EXPECT_TRUE(e.probes.exact);
    for (int j = 0; j < n; ++j) {
      std::vector<double> unit(n, 0.0);
      unit[j] = 1;
      double norm2 = 0;
      for (double y : op.apply(fk::from_vector(unit, {n})).to_vector<double>()) norm2 += y * y;
      ASSERT_NEAR(e.probes.sensitivity[j], norm2, 1e-14) << periodic << " " << j;
    }
    // A unit-sum non-negative kernel never amplifies: the DC mode is the top.
    if (periodic) {
      EXPECT_NEAR(want[0], 1.0, 1e-12);
    }
  }
}

TEST(Diagnose, MisfitRatioAndBadSettings) {
  const IdentityOperator op;
  const fk::Tensor x = fk::full({10, 10}, 0.25, {fk::DType::F64});
  const fk::Tensor y = fk::full({10, 10}, 0.05, {fk::DType::F64});
  DiagnoseOptions o;
  o.k = 2;
  o.n_iter = 4;
  o.probes = 2;
  const Diagnostics d = diagnose(op, x, measured(y, 0.1), o);
  EXPECT_NEAR(d.residual_rms, 0.2, 1e-14);
  EXPECT_NEAR(d.misfit_ratio, 2.0, 1e-12);
  EXPECT_NEAR(d.spectrum.singular_values[0], 1.0, 1e-14);
  o.n_iter = 1;
  EXPECT_THROW(diagnose(op, x, measured(y, 0.1), o), fk::Error);
  o.n_iter = 4;
  o.probes = 0;
  EXPECT_THROW(diagnose(op, x, measured(y, 0.1), o), fk::Error);
}

// DiagnoseOptions::device: a device this process cannot use (every one on a
// CPU-only build; an index past the last elsewhere) is refused by name before
// any product. The products on a device: tests/nefi/cuda/diagnose_device_test.cpp.
TEST(Diagnose, AnUnusableDeviceIsRefusedBeforeAnyProduct) {
  const IdentityOperator op;
  const fk::Tensor x = fk::full({4, 4}, 0.25, {fk::DType::F64});
  DiagnoseOptions o;
  o.k = 2;
  o.n_iter = 4;
  o.probes = 2;
  o.device = fk::cuda_device(fk::cuda::device_count());
  try {
    diagnose(op, x, measured(x, 0.1), o);
    FAIL() << "an unusable device";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("diagnose device"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(o.device.str()), std::string::npos) << e.what();
  }
}

TEST(DiagnoseReport, WritesMarkdownJsonNpyAndPng) {
  const int n = 16;
  const PointwiseOperator op(fk::from_vector(gains(n * n, 0.1, 3), {n, n}));
  const fk::Tensor x = fk::full({n, n}, 1.0, {fk::DType::F64});
  DiagnoseOptions o;
  o.k = 4;
  o.n_iter = 8;
  o.probes = 4;
  Diagnostics d = diagnose(op, x, measured(op.apply(x), 0.01), o);
  d.instance = "pointwise";
  d.method = "test";
  const auto dir = nefi::test::fresh_dir("diagnostics_report");
  const auto files = write_diagnostics(dir.string(), d);
  ASSERT_EQ(files.size(), 4u);
  for (const auto& f : files) EXPECT_TRUE(std::filesystem::exists(f)) << f;
  const std::string md = nefi::test::slurp(dir / "diagnostics.md");
  EXPECT_NE(md.find("Singular values"), std::string::npos);
  EXPECT_NE(md.find("RMSE / sigma"), std::string::npos);
  const auto j = nlohmann::json::parse(nefi::test::slurp(dir / "diagnostics.json"));
  EXPECT_EQ(j["singular_values"].size(), 4u);
  EXPECT_NEAR(j["singular_values"][0].get<double>(), d.spectrum.singular_values[0], 0);
  EXPECT_NEAR(j["sensitivity"]["blind_fraction"].get<double>(), d.probes.blind_fraction, 0);
  EXPECT_EQ(j["device"], "cpu");                             // where the products ran
  EXPECT_EQ(md.find("the products on"), std::string::npos);  // said only for a device
  int w = 0, h = 0, c = 0;
  unsigned char* px = stbi_load((dir / "diagnostics.png").c_str(), &w, &h, &c, 3);
  ASSERT_NE(px, nullptr);
  stbi_image_free(px);
  EXPECT_GT(w, 800);
  EXPECT_GT(h, 300);
}

}  // namespace
}  // namespace nefi::diagnostics
