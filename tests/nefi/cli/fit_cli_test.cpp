// nefi fit: a matrix model, or a built-in operator, and data from .npy files
// to the fields, report, fit.json and figures; and its bad input, one line
// each.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "fk/factory.h"
#include "fk/io/npy.h"
#include "nefi/byop/auto_problem.h"
#include "nefi/cli/cli_output.h"
#include "nefi/operators/advection_diffusion.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/operators/radon.h"
#include "nefi/test_files.h"

namespace {

namespace fs = std::filesystem;
using nefi::test::nefi_built;
using nefi::test::nefi_stdout;

// A 16 x 16 disc blurred by a separable Gaussian (as one 256 x 256
// matrix) with 1 % noise; files in `dir`.
void write_problem(const fs::path& dir) {
  fs::create_directories(dir);
  const int64_t n = 16;
  std::vector<double> b(n * n), a(n * n * n * n), gt(n * n), y(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += b[i * n + j] = std::exp(-0.5 * std::pow((i - j) / 1.2, 2));
    for (int64_t j = 0; j < n; ++j) b[i * n + j] /= s;
  }
  for (int64_t p = 0; p < n * n; ++p)
    for (int64_t q = 0; q < n * n; ++q)
      a[p * n * n + q] = b[(p / n) * n + q / n] * b[(p % n) * n + q % n];
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) gt[i * n + j] = std::hypot(i - 7.5, j - 6.5) < 4.5 ? 1.0 : 0.2;
  std::mt19937_64 g(0);
  std::normal_distribution<double> nd(0, 0.01);
  for (int64_t p = 0; p < n * n; ++p) {
    for (int64_t q = 0; q < n * n; ++q) y[p] += a[p * n * n + q] * gt[q];
    y[p] += nd(g);
  }
  fk::write_npy((dir / "A.npy").string(), fk::from_vector(a, {n * n, n * n}));
  fk::write_npy((dir / "y.npy").string(), fk::from_vector(y, {n, n}));
  fk::write_npy((dir / "mask_bad.npy").string(), fk::ones({3}));
  // Masks and supports of the right shape but wrong values: weights of 2,
  // complex weights, a NaN.
  fk::write_npy((dir / "mask_two.npy").string(), fk::full({n, n}, 2.0));
  fk::write_npy((dir / "mask_complex.npy").string(), fk::ones({n, n}, {fk::DType::C64}));
  std::vector<double> nan_support(n * n, 1.0);
  nan_support[5] = std::nan("");
  fk::write_npy((dir / "support_nan.npy").string(), fk::from_vector(nan_support, {n, n}));
}

TEST(FitCli, SolvesAMatrixModelAndWritesEveryOutput) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path dir = nefi::test::fresh_dir("fit_cli");
  write_problem(dir);
  const fs::path out = dir / "out";
  const auto r =
      nefi_stdout("fit --matrix " + (dir / "A.npy").string() + " --data " +
                  (dir / "y.npy").string() + " --shape 16,16 --prior \"nonnegative + tv\"" +
                  " --budget 300 --threads 1 -q --diagnose --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("fit  ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\ndiagnose  sigma_1 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("chi "), std::string::npos) << r.out;
  for (const char* f : {"x.npy", "prediction.npy", "report.md", "fit.json", "history.csv",
                        "history.png", "fit.png"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  const fk::Tensor x = fk::read_npy((out / "x.npy").string());
  EXPECT_EQ(x.shape(), fk::Dims({16, 16}));
  EXPECT_EQ(fk::read_npy((out / "prediction.npy").string()).shape(), fk::Dims({16, 16}));
  const auto j = nlohmann::json::parse(nefi::test::slurp(out / "fit.json"));
  EXPECT_EQ(j["fields"], nlohmann::json::array({"x"}));
  EXPECT_EQ(j["decisions"]["head"]["value"], "nonnegative + tv(1)");
  EXPECT_TRUE(j["noise_estimated"].get<bool>());
  const double chi = j["data_fit"]["discrepancy_ratio"];
  EXPECT_GT(chi, 0.5);
  EXPECT_LT(chi, 2.0);
  EXPECT_LE(j["total_steps"].get<int>(), 300);
  // --diagnose: the matrix's largest singular value, s1(B kron B) = s1(B)^2,
  // B's by power iteration on B^T B.
  for (const char* f : {"diagnostics.md", "diagnostics.json", "sensitivity.npy", "diagnostics.png"})
    EXPECT_TRUE(fs::exists(out / "diagnostics" / f)) << f;
  const auto d = nlohmann::json::parse(nefi::test::slurp(out / "diagnostics" / "diagnostics.json"));
  const fk::Tensor a = fk::read_npy((dir / "A.npy").string());
  const auto av = a.to_vector<double>();
  std::vector<double> b(16 * 16), u(16, 1.0);
  for (int64_t i = 0; i < 16; ++i)  // row i of B: A's row (i, 0), columns (j, 0), / B[0][0]
    for (int64_t j = 0; j < 16; ++j) b[i * 16 + j] = av[(i * 16) * 256 + j * 16];
  double lambda = 0;
  for (int it = 0; it < 500; ++it) {
    std::vector<double> bv(16, 0.0), btbv(16, 0.0);
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) bv[i] += b[i * 16 + j] * u[j];
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) btbv[j] += b[i * 16 + j] * bv[i];
    double norm = 0;
    for (double e : btbv) norm += e * e;
    lambda = std::sqrt(norm);
    for (int j = 0; j < 16; ++j) u[j] = btbv[j] / lambda;
  }
  const double b00 = std::sqrt(av[0]);          // A[0][0] = B[0][0]^2
  const double s1_b = std::sqrt(lambda) / b00;  // the rows read above carry a factor B[0][0]
  EXPECT_NEAR(d["singular_values"][0].get<double>(), s1_b * s1_b, 1e-6 * s1_b * s1_b);
  // The disc is recovered: inside well above outside.
  const auto v = x.to_vector<double>();
  EXPECT_GT(v[7 * 16 + 6], 0.7);
  EXPECT_LT(v[1 * 16 + 14], 0.4);
  // Counts saved as integers are data too (as run.data takes them): the same
  // data as int64 give the same fit as f64.
  const std::vector<double> yd = fk::read_npy((dir / "y.npy").string()).to_vector<double>();
  std::vector<int64_t> counts;
  std::vector<double> rounded;
  for (double e : yd) {
    counts.push_back(std::llround(1000 * e));
    rounded.push_back(static_cast<double>(counts.back()));
  }
  fk::write_npy((dir / "counts.npy").string(), fk::from_vector(counts, {16, 16}));
  fk::write_npy((dir / "rounded.npy").string(), fk::from_vector(rounded, {16, 16}));
  // ... and a matrix of integers (a 0/1 sampling matrix saved as int64).
  std::vector<int64_t> eye(256 * 256, 0);
  for (int64_t i = 0; i < 256; ++i) eye[i * 256 + i] = 1;
  fk::write_npy((dir / "eye.npy").string(), fk::from_vector(eye, {256, 256}));
  const auto e = nefi_stdout(
      "fit --matrix " + (dir / "eye.npy").string() + " --data " + (dir / "y.npy").string() +
      " --shape 16,16 --budget 5 --threads 1 -q --out " + (dir / "eye").string());
  EXPECT_EQ(e.status, 0) << e.out;
  for (const char* data : {"counts", "rounded"}) {
    const auto c =
        nefi_stdout("fit --matrix " + (dir / "A.npy").string() + " --data " +
                    (dir / (std::string(data) + ".npy")).string() +
                    " --shape 16,16 --budget 20 --threads 1 -q --out " + (dir / data).string());
    ASSERT_EQ(c.status, 0) << data << ": " << c.out;
  }
  EXPECT_EQ(nefi::test::slurp(dir / "counts" / "x.npy"),
            nefi::test::slurp(dir / "rounded" / "x.npy"));
}

// --refine levelset: the blurred disc's fit sharpened into its two levels
// (1 and 0.2), accepted by chi; <out>/refine holds the field to use, the
// refit and the report.
TEST(FitCli, RefinesTheFitIntoItsPhases) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path dir = nefi::test::fresh_dir("fit_cli_refine");
  write_problem(dir);
  const fs::path out = dir / "out";
  const auto r = nefi_stdout("fit --matrix " + (dir / "A.npy").string() + " --data " +
                             (dir / "y.npy").string() +
                             " --shape 16,16 --prior \"nonnegative + smooth\" --budget 300 "
                             "--threads 1 -q --refine levelset --out " +
                             out.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("\nrefine levelset  accepted  chi^2 "), std::string::npos) << r.out;
  for (const char* f : {"x.npy", "refined.npy", "refine.json"})
    EXPECT_TRUE(fs::exists(out / "refine" / f)) << f;
  const auto j = nlohmann::json::parse(nefi::test::slurp(out / "refine" / "refine.json"));
  EXPECT_TRUE(j["accepted"].get<bool>()) << j.dump();
  EXPECT_EQ(j["mode"], "levelset");
  ASSERT_EQ(j["levels"].size(), 2u) << j.dump();
  EXPECT_NEAR(j["levels"][0].get<double>(), 0.2, 0.1) << j.dump();
  EXPECT_NEAR(j["levels"][1].get<double>(), 1.0, 0.1) << j.dump();
  EXPECT_EQ(j["settings"]["floor"], 0.0);  // the nonnegative prior's bound
  // The field to use is the refit (accepted), a staircase near the levels.
  const auto x = fk::read_npy((out / "refine" / "x.npy").string()).to_vector<double>();
  EXPECT_EQ(x, fk::read_npy((out / "refine" / "refined.npy").string()).to_vector<double>());
  EXPECT_NEAR(x[7 * 16 + 6], 1.0, 0.1);
  EXPECT_NEAR(x[1 * 16 + 14], 0.2, 0.1);
  // A fit that fails on the way leaves the earlier result whole.
  fk::write_npy((dir / "bad_support.npy").string(), fk::ones({3, 3}, {fk::DType::F64}));
  const auto failed = nefi_stdout("fit --matrix " + (dir / "A.npy").string() + " --data " +
                                  (dir / "y.npy").string() + " --shape 16,16 --support " +
                                  (dir / "bad_support.npy").string() + " --budget 20 --threads 1 " +
                                  "-q --out " + out.string());
  EXPECT_NE(failed.status, 0);
  for (const char* f : {"fit.json", "report.md", "prediction.npy", "refine/x.npy"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  // A plain fit into the same folder clears what the earlier fit wrote: its
  // refine/ (x.npy there was "the field to use") and every field its
  // fit.json names (z here), and leaves a file of the user's alone.
  auto earlier = nlohmann::json::parse(nefi::test::slurp(out / "fit.json"));
  earlier["fields"].push_back("z");
  std::ofstream(out / "fit.json") << earlier.dump();
  fk::write_npy((out / "z.npy").string(), fk::ones({2}, {fk::DType::F64}));
  std::ofstream(out / "notes.txt") << "mine";
  const auto again = nefi_stdout("fit --matrix " + (dir / "A.npy").string() + " --data " +
                                 (dir / "y.npy").string() +
                                 " --shape 16,16 --budget 20 --threads 1 -q --out " + out.string());
  ASSERT_EQ(again.status, 0) << again.out;
  EXPECT_FALSE(fs::exists(out / "refine"));
  EXPECT_FALSE(fs::exists(out / "z.npy"));
  EXPECT_TRUE(fs::exists(out / "x.npy") && fs::exists(out / "fit.json"));
  EXPECT_EQ(nefi::test::slurp(out / "notes.txt"), "mine");
}

// --autotune: pilot solves choose the lr and the tv strength before the
// fit, which then runs with them (its report names the tuned strength).
TEST(FitCli, AutotunesBeforeTheFit) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path dir = nefi::test::fresh_dir("fit_cli_autotune");
  write_problem(dir);
  const fs::path out = dir / "out";
  const auto r = nefi_stdout("fit --matrix " + (dir / "A.npy").string() + " --data " +
                             (dir / "y.npy").string() +
                             " --shape 16,16 --prior \"nonnegative + tv\" --representation grid"
                             " --budget 200 --autotune quick --threads 1 -q --out " +
                             out.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("autotune (quick): lr 0.1 -> ", 0), 0u) << r.out;
  const std::string md = nefi::test::slurp(out / "autotune.md");
  const size_t at = md.find("## tv: 1 -> ");
  ASSERT_NE(at, std::string::npos) << md;
  const std::string tv = md.substr(at + 12, md.find('\n', at) - at - 12);
  EXPECT_NE(r.out.find("tv 1 -> " + tv), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(nefi::test::slurp(out / "fit.json"));
  EXPECT_EQ(j["decisions"]["head"]["value"], "nonnegative + tv(" + tv + ")");
  const std::string lr_why = j["decisions"]["lr"]["why"];
  EXPECT_EQ(lr_why.rfind("autotune (quick): 0.1 -> ", 0), 0u) << lr_why;
  const auto t = nlohmann::json::parse(nefi::test::slurp(out / "autotune.json"));
  EXPECT_EQ(t["decisions"][1]["key"], "tv");
  EXPECT_EQ(t["decisions"][1]["chosen"], tv);
}

// --support with an integer mask and a two-phase prior: the field is 0
// outside the support and takes its two values inside.
TEST(FitCli, AKnownSupportAndATwoPhasePrior) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path dir = nefi::test::fresh_dir("fit_cli_support");
  write_problem(dir);
  std::vector<int32_t> support(16 * 16);
  for (int64_t i = 0; i < 16; ++i)
    for (int64_t j = 0; j < 16; ++j) support[i * 16 + j] = i >= 1 && i <= 14 && j >= 1 && j <= 13;
  fk::write_npy((dir / "support.npy").string(), fk::from_vector(support, {16, 16}));
  const fs::path out = dir / "out";
  const auto r = nefi_stdout(
      "fit --matrix " + (dir / "A.npy").string() + " --data " + (dir / "y.npy").string() +
      " --shape 16,16 --prior \"two_phase(0.2, 1)\"" + " --support " +
      (dir / "support.npy").string() + " --budget 300 --threads 1 -q --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(nefi::test::slurp(out / "fit.json"));
  EXPECT_EQ(j["decisions"]["head"]["value"], "two_phase(0.2, 1) + known_support");
  const auto v = fk::read_npy((out / "x.npy").string()).to_vector<double>();
  for (int64_t c = 0; c < 256; ++c) {
    // Outside: the low phase (0 is outside the range); inside: near a phase.
    if (support[c] == 0) {
      EXPECT_NEAR(v[c], 0.2, 1e-6) << c;
    }
  }
  EXPECT_GT(v[7 * 16 + 6], 0.9);
  EXPECT_LT(v[2 * 16 + 12], 0.3);
}

// An undersampled k-space acquisition of a smooth 16 x 16 disc: complex
// data, a centred pattern, the noise read off its conjugate pairs.
TEST(FitCli, FitsKSpaceThroughTheBuiltInOperator) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path dir = nefi::test::fresh_dir("fit_cli_kspace");
  fs::create_directories(dir);
  const int64_t n = 16;
  std::vector<double> gt(n * n), pattern(n * n);
  std::mt19937_64 g(1);
  std::uniform_real_distribution<double> u(0, 1);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      gt[i * n + j] = std::exp(-0.5 * (std::pow(i - 7.0, 2) + std::pow(j - 8.5, 2)) / 9.0);
      pattern[i * n + j] = std::hypot(i - 8.0, j - 8.0) < 3 || u(g) < 0.4 ? 1.0 : 0.0;
    }
  // y at the kept frequencies in numpy.fft order: the centred pattern shifted back.
  std::vector<std::complex<double>> y;
  std::normal_distribution<double> nd(0, 0.005);
  for (int64_t k = 0; k < n; ++k)
    for (int64_t l = 0; l < n; ++l) {
      if (pattern[((k + n / 2) % n) * n + (l + n / 2) % n] == 0) continue;
      std::complex<double> s = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          s += gt[i * n + j] * std::polar(1.0, -2 * M_PI * static_cast<double>(k * i + l * j) / n);
      y.push_back(s / static_cast<double>(n) + std::complex<double>(nd(g), nd(g)));
    }
  fk::write_npy((dir / "pattern.npy").string(), fk::from_vector(pattern, {n, n}));
  // One weight per k-space sample (both parts alike).
  fk::write_npy((dir / "weights.npy").string(),
                fk::ones({static_cast<int64_t>(y.size())}, {fk::DType::F64}));
  fk::write_npy((dir / "y.npy").string(), fk::from_vector(y, {static_cast<int64_t>(y.size())}));
  const auto out = nefi_stdout(
      "fit --operator fourier_sampling --centered --pattern " + (dir / "pattern.npy").string() +
      " --data " + (dir / "y.npy").string() + " --mask " + (dir / "weights.npy").string() +
      " --prior nonnegative --budget quick -q --out " + (dir / "out").string());
  ASSERT_EQ(out.status, 0) << out.out;
  EXPECT_NE(out.out.find("fit  "), std::string::npos) << out.out;
  const fk::Tensor x = fk::read_npy((dir / "out" / "x.npy").string());
  ASSERT_EQ(x.shape(), fk::Dims({n, n}));
  const auto xv = x.to(fk::DType::F64).to_vector<double>();
  double err = 0, ref = 0;
  for (int64_t p = 0; p < n * n; ++p) {
    err += (xv[p] - gt[p]) * (xv[p] - gt[p]);
    ref += gt[p] * gt[p];
  }
  EXPECT_LT(std::sqrt(err / ref), 0.1);
  const auto j = nlohmann::json::parse(nefi::test::slurp(dir / "out" / "fit.json"));
  EXPECT_NE(j["decisions"]["noise_std"]["why"].get<std::string>().find("conjugate pairs"),
            std::string::npos)
      << j["decisions"]["noise_std"];
}

// A 16 x 16 disc measured through the library's own blur (sigma 1.2 cells,
// zero-padded) and CT projector (12 views), 1 % noise: the CLI builds the
// same models from --sigma and --views, so the fits reach the noise floor
// (chi near 1).
TEST(FitCli, FitsThroughTheBuiltInBlurAndRadon) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path dir = nefi::test::fresh_dir("fit_cli_builtin");
  fs::create_directories(dir);
  std::vector<double> disc(256);
  for (int64_t i = 0; i < 16; ++i)
    for (int64_t j = 0; j < 16; ++j)
      disc[i * 16 + j] = std::hypot(i - 7.5, j - 6.5) < 4.5 ? 1.0 : 0.2;
  const fk::Tensor gt = fk::from_vector(disc, {16, 16});
  const nefi::Domain d = nefi::isotropic_domain({16, 16});
  nefi::RadonGeometry g;
  g.n_views = 12;
  const std::vector<std::pair<std::string, nefi::OperatorPtr>> models{
      {"gaussian_blur --sigma 1.2",
       std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(1.2 * d.spacing()[0]), d)},
      {"radon --views 12", std::make_shared<nefi::RadonOperator>(d, g)},
      // The disc is one ellipse: two soft-edged ellipses on a background.
      {"gaussian_blur --sigma 1.2 --representation ellipses --shapes 2",
       std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(1.2 * d.spacing()[0]), d)},
      // ... and one star of outline degree 4.
      {"gaussian_blur --sigma 1.2 --representation stars --shapes 1 --harmonics 4",
       std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(1.2 * d.spacing()[0]), d)},
      // ... and one polygon of 8 corners.
      {"gaussian_blur --sigma 1.2 --representation polygons --shapes 1 --vertices 8",
       std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(1.2 * d.spacing()[0]), d)},
      // ... and as one ellipse over two layers.
      {"gaussian_blur --sigma 1.2 --representation layers+ellipses --shapes 1 --layers 2",
       std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(1.2 * d.spacing()[0]), d)},
      // ... and as strata across axis 1, the interfaces bending round it.
      {"gaussian_blur --sigma 1.2 --representation layers --layers 3 --layer-axis 1",
       std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(1.2 * d.spacing()[0]), d)},
      // ... and as 12 x 12 cosines.
      {"radon --views 12 --representation spectral --modes 12 --smoothness 2",
       std::make_shared<nefi::RadonOperator>(d, g)}};
  int case_index = 0;
  for (const auto& [args, op] : models) {
    std::vector<double> y = op->apply(gt).to_vector<double>();
    double peak = 0;
    for (double v : y) peak = std::max(peak, std::abs(v));
    std::mt19937_64 rng(7);
    std::normal_distribution<double> nd(0, 0.01 * peak);
    for (double& v : y) v += nd(rng);
    fk::write_npy((dir / "y.npy").string(), fk::from_vector(y, op->output_shape({16, 16})));
    const fs::path out = dir / ("out_" + std::to_string(case_index++));
    // The noise given: the data-space estimate reads a sinogram's edges as noise.
    const auto r = nefi_stdout("fit --operator " + args + " --data " + (dir / "y.npy").string() +
                               " --noise " + std::to_string(0.01 * peak) +
                               " --shape 16,16 --prior \"nonnegative + tv\" --budget 300 -q "
                               "--out " +
                               out.string());
    ASSERT_EQ(r.status, 0) << args << ": " << r.out;
    const auto j = nlohmann::json::parse(nefi::test::slurp(out / "fit.json"));
    const double chi = j["data_fit"]["discrepancy_ratio"];
    EXPECT_GT(chi, 0.5) << args;
    // Strata cannot draw a disc: over noise draws their 300 steps end at
    // chi 1.1 to 2.3.
    EXPECT_LT(chi, args.ends_with("--layer-axis 1") ? 2.5 : 2.0) << args;
    const auto v = fk::read_npy((out / "x.npy").string()).to_vector<double>();
    EXPECT_GT(v[7 * 16 + 6], 0.7) << args;  // inside the disc
    EXPECT_LT(v[1 * 16 + 14], 0.45) << args;
  }
}

// A puff released into a flow that is uniform along axis 0 and varies
// across it along axis 1 (a per-cell .npy), seen by 25 sensors at four
// times (Lax-Wendroff, the default scheme): one blob finds it.
TEST(FitCli, LocatesAReleaseThroughTheBuiltInAdvectionDiffusion) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path dir = nefi::test::fresh_dir("fit_cli_transport");
  fs::create_directories(dir);
  const int64_t n = 16;
  std::vector<double> puff(n * n), w(n * n), sensors(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      puff[i * n + j] = std::exp(-0.5 * (std::pow(i - 4.5, 2) + std::pow(j - 6.5, 2)) / 2.0);
      w[i * n + j] = 0.3 * std::sin(3.14159 * (i + 0.5) / n);
      if (i % 3 == 1 && j % 3 == 1) sensors[i * n + j] = 1;
    }
  fk::write_npy((dir / "w.npy").string(), fk::from_vector(w, {n, n}));
  fk::write_npy((dir / "sensors.npy").string(), fk::from_vector(sensors, {n, n}));
  nefi::AdvectionDiffusionOptions o;
  o.velocity = {fk::full({1}, 0.5, {fk::DType::F64}), fk::from_vector(w, {n, n})};
  o.diffusivity = 2e-3;
  o.times = {0.1, 0.2, 0.3, 0.4};
  o.boundary = {nefi::TransportBoundary::kOpen};
  o.sensors = fk::from_vector(sensors, {n, n});
  const nefi::AdvectionDiffusionOperator op(nefi::isotropic_domain({n, n}), o);
  std::vector<double> y = op.apply(fk::from_vector(puff, {n, n})).to_vector<double>();
  double peak = 0;
  for (double v : y) peak = std::max(peak, std::abs(v));
  std::mt19937_64 rng(3);
  std::normal_distribution<double> nd(0, 0.01 * peak);
  for (double& v : y) v += nd(rng);
  fk::write_npy((dir / "y.npy").string(), fk::from_vector(y, op.output_shape({n, n})));
  const fs::path out = dir / "out";
  const auto r =
      nefi_stdout("fit --operator advection_diffusion --times 0.1,0.2,0.3,0.4 --velocity 0.5," +
                  (dir / "w.npy").string() + " --diffusivity 2e-3 --boundary open --pattern " +
                  (dir / "sensors.npy").string() + " --data " + (dir / "y.npy").string() +
                  " --noise " + std::to_string(0.01 * peak) +
                  " --shape 16,16 --prior nonnegative --representation blobs --shapes 1 -q --out " +
                  out.string());
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(nefi::test::slurp(out / "fit.json"));
  const double chi = j["data_fit"]["discrepancy_ratio"];
  EXPECT_GT(chi, 0.5);
  EXPECT_LT(chi, 2.0);
  const auto x = fk::read_npy((out / "x.npy").string()).to_vector<double>();
  const auto top = std::max_element(x.begin(), x.end()) - x.begin();
  EXPECT_LE(std::abs(top / n - 4.5), 1.0) << top;
  EXPECT_LE(std::abs(top % n - 6.5), 1.0) << top;
}

// The same operator with the diffusivity as the field: 9 puffs spreading
// through a box whose right half diffuses 4 x faster, seen whole at three
// times (1 % noise); a grid field bounded to (0, 0.02) with tv finds both
// halves.
TEST(FitCli, MapsADiffusivityThroughTheBuiltInAdvectionDiffusion) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path dir = nefi::test::fresh_dir("fit_cli_diffusivity");
  fs::create_directories(dir);
  const int64_t n = 16;
  std::vector<double> release(n * n, 0.0), D(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      for (double a : {2.5, 7.5, 12.5})
        for (double b : {2.5, 7.5, 12.5})
          release[i * n + j] += std::exp(-0.5 * (std::pow(i - a, 2) + std::pow(j - b, 2)));
      D[i * n + j] = j < n / 2 ? 2e-3 : 8e-3;
    }
  fk::write_npy((dir / "release.npy").string(), fk::from_vector(release, {n, n}));
  nefi::AdvectionDiffusionOptions o;
  o.times = {0.1, 0.2, 0.4};
  o.unknown = nefi::TransportUnknown::kDiffusivity;
  o.release = fk::from_vector(release, {n, n});
  const nefi::AdvectionDiffusionOperator op(nefi::isotropic_domain({n, n}), o);
  std::vector<double> y = op.apply(fk::from_vector(D, {n, n})).to_vector<double>();
  double peak = 0;
  for (double v : y) peak = std::max(peak, std::abs(v));
  std::mt19937_64 rng(5);
  std::normal_distribution<double> nd(0, 0.01 * peak);
  for (double& v : y) v += nd(rng);
  fk::write_npy((dir / "y.npy").string(), fk::from_vector(y, op.output_shape({n, n})));
  const fs::path out = dir / "out";
  const auto r = nefi_stdout(
      "fit --operator advection_diffusion --times 0.1,0.2,0.4 --unknown diffusivity --release " +
      (dir / "release.npy").string() + " --data " + (dir / "y.npy").string() + " --noise " +
      std::to_string(0.01 * peak) +
      " --shape 16,16 --prior \"bounded(0, 0.02) + tv\" --representation grid -q --out " +
      out.string());
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(nefi::test::slurp(out / "fit.json"));
  EXPECT_LT(static_cast<double>(j["data_fit"]["discrepancy_ratio"]), 1.5);
  const auto x = fk::read_npy((out / "x.npy").string()).to_vector<double>();
  double left = 0, right = 0;
  for (int64_t i = 0; i < n * n; ++i) (i % n < n / 2 ? left : right) += x[i] / (n * n / 2);
  EXPECT_NEAR(left, 2e-3, 5e-4);
  EXPECT_NEAR(right, 8e-3, 1.5e-3);
  // The default (unconstrained) prior would let the diffusivity below 0,
  // where the operator refuses it mid-fit: refused before the first step.
  nefi::test::expect_one_line_errors(
      {{"fit --operator advection_diffusion --times 0.1,0.2,0.4 --unknown diffusivity --release " +
            (dir / "release.npy").string() + " --data " + (dir / "y.npy").string() +
            " --noise 0.01 --shape 16,16 --budget 2 -q --out " + (dir / "bad").string(),
        "expected a field >= 0 for advection_diffusion's unknown diffusivity"}},
      dir);
}

// The velocity as the unknown: the field is (2, 16, 16), the release and D
// given; a bounded grid fit finds the flow's direction where the puffs pass
// (as python/tests/test_nefi_operators.py's flow test), and a grid's shape
// alone is refused naming --shape.
TEST(FitCli, FindsAFlowThroughTheBuiltInAdvectionDiffusion) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path dir = nefi::test::fresh_dir("fit_cli_velocity");
  fs::create_directories(dir);
  const int64_t n = 16;
  std::vector<double> release(n * n, 0.0), v(2 * n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double x = (i + 0.5) / n, y = (j + 0.5) / n;
      for (double a : {0.3, 0.7})
        for (double b : {0.3, 0.7})
          release[i * n + j] += std::exp(-(std::pow(x - a, 2) + std::pow(y - b, 2)) / 0.0072);
      v[i * n + j] = 0.4 + 0.2 * std::sin(2 * M_PI * y);
      v[n * n + i * n + j] = -0.3;
    }
  fk::write_npy((dir / "release.npy").string(), fk::from_vector(release, {n, n}));
  nefi::AdvectionDiffusionOptions o;
  o.times = {0.1, 0.2, 0.3};
  o.unknown = nefi::TransportUnknown::kVelocity;
  o.release = fk::from_vector(release, {n, n});
  o.diffusivity = 1e-3;
  o.boundary = {nefi::TransportBoundary::kPeriodic};
  const nefi::AdvectionDiffusionOperator op(nefi::isotropic_domain({n, n}), o);
  const fk::Tensor y = op.apply(fk::from_vector(v, {2, n, n}));
  fk::write_npy((dir / "y.npy").string(), y);
  const std::string common =
      "fit --operator advection_diffusion --times 0.1,0.2,0.3 --unknown velocity --release " +
      (dir / "release.npy").string() + " --diffusivity 0.001 --boundary periodic --data " +
      (dir / "y.npy").string() + " --noise 0.0001 --budget 1500 --prior \"bounded(-1, 1) + " +
      "smooth\" --representation grid -q";
  const fs::path out = dir / "out";
  const auto r = nefi_stdout(common + " --shape 2,16,16 --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.out;
  const fk::Tensor x = fk::read_npy((out / "x.npy").string());
  ASSERT_EQ(x.shape(), (fk::Dims{2, n, n}));
  const auto got = x.to_vector<double>();
  double vx = 0, vy = 0;
  for (int64_t i = 0; i < n * n; ++i) {
    vx += got[i] / (n * n);
    vy += got[n * n + i] / (n * n);
  }
  EXPECT_GT(vx, 0.25);
  EXPECT_LT(vy, -0.1);
  nefi::test::expect_one_line_errors(
      {{common + " --shape 16,16 --out " + (dir / "bad").string(),
        "--shape: expected the velocity's shape: its axis count, then the grid"}},
      dir);
}

TEST(FitCli, BadInputIsOneLineNamingIt) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path dir = nefi::test::fresh_dir("fit_cli_bad");
  write_problem(dir);
  const std::string A = " --matrix " + (dir / "A.npy").string();
  const std::string y = " --data " + (dir / "y.npy").string();
  const std::string o = " --out " + (dir / "out").string();
  nefi::test::expect_one_line_errors(
      {{"fit" + y + o, "--matrix"},
       // An operator's option for a model that ignores it (they ran silently).
       {"fit" + A + y + " --sigma 2" + o,
        "--sigma: expected an option of --operator gaussian_blur, got it with --matrix"},
       {"fit --operator gaussian_blur --sigma 1 --shape 16,16" + y + " --views 30" + o,
        "--views: expected an option of --operator radon, got it with --operator gaussian_blur"},
       {"fit --operator radon --shape 16,16" + y + " --release r.npy" + o,
        "--release: expected an option of --operator advection_diffusion"},
       // A typo in the kind is the kind's error, not its options'.
       {"fit --operator radn --shape 16,16" + y + " --views 8" + o,
        "--operator: expected sampling, fourier_sampling"},
       {"fit --operator radn" + y + o, "--operator: expected sampling"},
       {"fit" + A + y + " --shape 15,16" + o, "cells (its columns)"},
       {"fit" + A + y + " --shape 16,x" + o, "--shape"},
       {"fit" + A + y + " --shape 16,16 --prior wiggly" + o, "'wiggly'"},
       {"fit" + A + y + " --shape 16,16 --noise loud" + o, "--noise"},
       {"fit" + A + y + " --shape 16,16 --noise inf" + o, "--noise: expected auto or a finite"},
       {"fit" + A + y + " --shape 16,16 --budget lots" + o, "'lots'"},
       {"fit" + A + y + " --shape 16,16 --lr 0" + o, "--lr"},
       {"fit" + A + y + " --shape 16,16 --device gpu" + o, "'cpu', 'cuda' or 'cuda:N'"},
       {"fit" + A + y + " --shape 16,16 --tau -1" + o, "--tau"},
       {"fit" + A + y + " --shape 16,16 --autotune fast" + o, "--autotune"},
       {"fit" + A + y + " --shape 16,16 --representation octree" + o,
        "neural, grid, hash, lowrank, blobs, ellipses, stars, polygons, layers, layers+blobs, "
        "layers+ellipses or spectral"},
       {"fit" + A + y + " --shape 16,16 --representation ellipses --shapes 0" + o, "shape count"},
       {"fit" + A + y + " --shape 16,16 --refine sharpen" + o, "--refine"},
       {"fit" + A + y + " --shape 16,16 --refine-levels 3" + o, "--refine-levels"},
       {"fit" + A + y + " --shape 16,16 --shapes 3" + o,
        "--representation blobs, ellipses, stars, polygons or layers+(blobs|ellipses)"},
       {"fit" + A + y + " --shape 16,16 --vertices 4 --representation stars" + o,
        "--vertices: expected --representation polygons"},
       {"fit" + A + y + " --shape 16,16 --representation polygons --vertices 17" + o,
        "a vertex count in [3, 16]"},
       {"fit" + A + y + " --shape 16,16 --harmonics 5 --representation ellipses" + o,
        "--harmonics: expected --representation stars, layers or layers+(blobs|ellipses)"},
       {"fit" + A + y + " --shape 16,16 --representation stars --harmonics 2" + o,
        "an outline degree in [3, 8]"},
       {"fit" + A + y + " --shape 16,16 --layers 4" + o, "--layers/--layer-axis: expected "},
       {"fit" + A + y + " --shape 16,16 --representation layers --layer-axis 2" + o,
        "an axis of the 2-D field"},
       {"fit" + A + y + " --shape 16,16 --rank 3 --representation grid" + o,
        "--representation lowrank"},
       {"fit" + A + y + " --shape 16,16 --smoothness 1" + o,
        "--modes/--smoothness: expected --representation spectral"},
       {"fit --operator advection_diffusion --times 0.1 --release r.npy" + y + " --shape 16,16" + o,
        "--release: expected --unknown diffusivity"},
       {"fit" + A + y + " --shape 16,16 --representation spectral --modes -2" + o,
        "modes: expected cosines per axis >= 0"},
       {"fit" + A + y + " --shape 16,16 --refine levelset --refine-levels 9" + o,
        "--refine-levels"},
       {"fit" + A + y + " --shape 16,16 --prior \"nonnegative + symmetric(0)\" --refine levelset" +
            o,
        "symmetric"},
       {"fit" + A + y + " --shape 16,16 --mask " + (dir / "mask_bad.npy").string() + o, "--mask"},
       {"fit" + A + y + " --shape 16,16 --support " + (dir / "mask_bad.npy").string() + o,
        "support of field 'x'"},
       {"fit" + A + y + " --shape 16,16 --prior known_support" + o, "a support mask given"},
       {"fit" + A + y + " --shape 16,16 --mask " + (dir / "mask_two.npy").string() + o,
        "mask weights in [0, 1]"},
       {"fit" + A + y + " --shape 16,16 --mask " + (dir / "mask_complex.npy").string() + o,
        "--mask: expected real values, got c64"},
       {"fit" + A + y + " --shape 16,16 --support " + (dir / "mask_complex.npy").string() + o,
        "--support: expected real values, got c64"},
       {"fit" + A + y + " --shape 16,16 --support " + (dir / "support_nan.npy").string() + o,
        "support of field 'x': expected weights in [0, 1], got nan"},
       {"fit" + A + y + " --shape 256, " + o, "--shape: expected 1 to 3 positive integers"},
       {"fit" + A + y + " --shape 99999999999999999999" + o, "each up to 2^31"},
       {"fit" + A + y + " --shape 16,16 --tau inf" + o, "--tau: expected a finite factor > 0"},
       {"fit --matrix " + (dir / "missing.npy").string() + y + o, "missing.npy"},
       {"fit --matrix " + (dir / "y.npy").string() + y + " --shape 16" + o,
        "measurements (its rows)"},
       {"fit" + A + " --operator sampling" + y + o, "--matrix or --operator"},
       {"fit --operator tomography" + y + " --shape 16,16" + o, "'tomography'"},
       {"fit --operator sampling" + y + o, "--pattern"},
       {"fit --operator sampling --pattern " + (dir / "mask_complex.npy").string() + y +
            " --shape 16,16" + o,
        "--pattern: expected real values, got c64"},
       {"fit --operator downsample" + y + o, "--shape"},
       {"fit --operator downsample --factors 3,3" + y + " --shape 16,16" + o, "multiple of"},
       {"fit --operator phase_retrieval --oversample 0.5" + y + " --shape 16,16" + o,
        "oversample >= 1"},
       {"fit --operator gaussian_blur" + y + " --shape 16,16" + o, "--sigma"},
       {"fit --operator radon --views 8" + y + " --shape 16,8" + o, "--shape"},
       {"fit --operator radon --views 0" + y + " --shape 16,16" + o, "--views"},
       {"fit --operator beer_lambert --axis 2" + y + " --shape 16,16" + o, "--axis"},
       {"fit --operator advection_diffusion" + y + " --shape 16,16" + o, "--times"},
       {"fit --operator advection_diffusion --times 0.2,x" + y + " --shape 16,16" + o,
        "--times: expected numbers"},
       {"fit --operator advection_diffusion --times 0.2 --boundary wall" + y + " --shape 16,16" + o,
        "'wall'"},
       {"fit --operator advection_diffusion --times 0.2 --velocity 1,2,3" + y + " --shape 16,16" +
            o,
        "--operator advection_diffusion: expected no velocity or one component per axis"},
       {"fit --operator advection_diffusion --times 0.2 --velocity 1,nan" + y + " --shape 16,16" +
            o,
        "--velocity: expected a finite number or an .npy file"},
       {"fit --operator advection_diffusion --times 0.2 --courant 2" + y + " --shape 16,16" + o,
        "courant in (0, 1]"},
       {"fit --operator advection_diffusion --times 0.2 --scheme quick" + y + " --shape 16,16" + o,
        "upwind or lax_wendroff"}},
      dir);
}

}  // namespace
