// The deconvolution3d instance: its keys, presets, baselines, the neural
// smoke fit and its refinement (the data generator: deconvolution3d_data_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/thread_count.h"
#include "nefi/instances/bad_value_errors.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/resample.h"
#include "nefi/solve/metrics.h"
#include "nefi/test_files.h"

namespace {

using nefi::test::config_path;

TEST(NefiDeconvolution3d, ScenesAndBadValues) {
  auto inst = nefi::find_instance("deconvolution3d");
  nefi::Params p = inst->default_config();
  p.set("n", "16");
  p.set("n_z", "8");
  for (const char* scene :
       {"filaments", "bezier_filaments", "puncta", "cells", "uniform_filaments"}) {
    p.set("scene", scene);
    auto [m, gt] = inst->make_measurement(p, 0);
    EXPECT_EQ(m.data.shape(), fk::Dims({16, 16, 8})) << scene;
    const auto v = gt.to_vector<double>();
    EXPECT_GT(*std::max_element(v.begin(), v.end()), 0.3) << scene;
    EXPECT_NE(v, inst->make_measurement(p, 1).second.to_vector<double>()) << scene;
  }
  const nefi::test::BadValue bad_values[] = {{"tv", "-1"},
                                             {"tv_eps", "0"},
                                             {"l1", "-1"},
                                             {"n", "4"},
                                             {"n_z", "2"},
                                             {"pixel", "0"},
                                             {"z_step", "-0.2"},
                                             {"psf_sigma_xy", "0"},
                                             {"axial_ratio", "-1"},
                                             {"psf_sigma_xy", "100"},  // past n * pixel
                                             {"axial_ratio", "1000"},  // past n_z * z_step
                                             {"pixel", "1e307"},       // n * pixel is infinite
                                             {"noise_std", "-1"},
                                             {"scene", "nuclei"},
                                             {"iou_threshold", "1"},
                                             {"supersample", "0"},
                                             {"rl_iterations", "0"},
                                             {"init_value", "0"},
                                             {"noise", "laplace"},
                                             {"psf_extent", "valid"},
                                             {"wiener_boundary", "zero"},
                                             {"peak_counts", "-5"},
                                             {"background_counts", "-1"},
                                             {"refine_tv", "-1"}};
  nefi::test::expect_bad_values_name_their_key(
      inst->default_config(), bad_values,
      [&](const nefi::Params& q) { inst->make_measurement(q, 0); });
}

// The instance in Poisson mode: its data are counts whose total matches the
// budget over the noiseless Gaussian-mode data (5 sigma of the total's
// Poisson spread); the measured quantity is labelled as counts.
TEST(NefiDeconvolution3d, PoissonModeMeasuresCountsAtTheBudget) {
  auto inst = nefi::find_instance("deconvolution3d");
  nefi::Params p = inst->default_config();
  p.set("n", "16");
  p.set("n_z", "8");
  p.set("noise_std", "0");
  const auto clean = inst->make_measurement(p, 3).first.data.to_vector<double>();
  p.set("noise", "poisson");
  p.set("peak_counts", "150");
  p.set("background_counts", "3");
  auto [m, gt] = inst->make_measurement(p, 3);
  const auto y = m.data.to_vector<double>();
  ASSERT_EQ(y.size(), clean.size());
  double total = 0, budget = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    EXPECT_EQ(y[i], std::round(y[i]));
    total += y[i];
    budget += 150 * std::max(clean[i], 0.0) + 3;
  }
  EXPECT_NEAR(total, budget, 5 * std::sqrt(budget));
  EXPECT_NEAR(m.noise_std, std::sqrt(budget / y.size()), 1e-3 * m.noise_std);
  EXPECT_EQ(inst->data_labels(p).measured.unit, "counts");
}

// The presets: poisson (counts at 200 / 2), puncta (l1 1e-3) and the full
// preset's psf_extent same, as the reference lists them. On the poisson
// preset Richardson-Lucy (30 iterations) sharpens the count data, read as
// intensities (y - 2) / 200, by > 2 dB on seeds 0-2 (see its yaml).
TEST(NefiDeconvolution3d, PresetsAndPoissonRichardsonLucy) {
  const fk::test::ThreadCount one_thread(1);
  auto inst = nefi::find_instance("deconvolution3d");
  const nefi::RunConfig full = nefi::load_run_config_file(config_path("deconvolution3d_full.yaml"));
  EXPECT_EQ(full.config.s("psf_extent"), "same");
  const nefi::RunConfig puncta =
      nefi::load_run_config_file(config_path("deconvolution3d_puncta.yaml"));
  EXPECT_EQ(puncta.config.s("scene"), "puncta");
  EXPECT_EQ(puncta.config.d("l1"), 1e-3);
  const nefi::RunConfig c = nefi::load_run_config_file(config_path("deconvolution3d_poisson.yaml"));
  EXPECT_EQ(c.config.s("noise"), "poisson");
  EXPECT_EQ(c.config.d("peak_counts"), 200.0);
  EXPECT_EQ(c.config.d("background_counts"), 2.0);
  for (int s = 0; s < 3; ++s) {
    auto rl = inst->run(c.config, "richardson_lucy", s, {});
    std::vector<double> y = rl.measurement.data.to_vector<double>();
    for (double& v : y) v = (v - 2.0) / 200.0;
    const double data_psnr = nefi::psnr(fk::from_vector(y, rl.gt.shape()), rl.gt);
    EXPECT_GT(rl.metrics.at("psnr"), data_psnr + 2.0) << "seed " << s;
    // Its prediction is in counts: within a few Poisson std of the data.
    const double rms =
        std::sqrt(nefi::mse(rl.result.prediction, rl.measurement.data.to(fk::DType::F64)));
    EXPECT_LT(rms, 1.5 * rl.measurement.noise_std) << "seed " << s;
    EXPECT_GT(rms, 0.5 * rl.measurement.noise_std) << "seed " << s;
  }
}

// The smoke preset on the filaments class, whose draw and noise are the
// reference's for the same seed: at seed 0 the blurred data and
// Richardson-Lucy (30 iterations) land on the figures the reference reports
// (data 22.0 dB, RL 25.7 / SSIM 0.810; measured 21.98, 25.68 / 0.810), and
// so does the neural field at the full smoke budget (reference 25.2 dB /
// SSIM 0.789; measured 25.36 / 0.796, the same to 0.01 dB with the PSF
// array over n cells, which this test uses: 2.5x cheaper). Seeds 1-2:
// data 25.43 / 23.41, RL 28.04 / 27.40 dB. At a reduced budget (40 + 60
// steps) the neural field measured 21.46 / 24.92 / 22.46 dB, IoU 0.19 / 0.15 /
// 0.23 (at the truth's Otsu level). The full
// smoke figures of every seed are in configs/deconvolution3d_smoke.yaml.
TEST(NefiDeconvolution3d, SmokeQualityFloor) {
  const fk::test::ThreadCount one_thread(1);
  nefi::RunConfig c = nefi::load_run_config_file(config_path("deconvolution3d_smoke.yaml"));
  auto inst = nefi::find_instance("deconvolution3d");
  nefi::Params same = c.config;
  same.set("psf_extent", "same");
  // Refinement starts from the fit it is given; refine_test.cpp covers it,
  // and the yaml lists what it does after the full smoke run.
  same.set("refine", "false");
  nefi::Params reduced = same;
  reduced.set("steps", "[40, 60]");
  double total = 0;
  for (int s = 0; s < 3; ++s) {
    auto rl = inst->run(c.config, "richardson_lucy", s, {});
    const double data = nefi::psnr(rl.measurement.data.to(fk::DType::F64), rl.gt);
    EXPECT_GT(rl.metrics.at("psnr"), data + 2.0) << "seed " << s;
    if (s == 0) {
      EXPECT_NEAR(data, 22.0, 0.1);
      EXPECT_NEAR(rl.metrics.at("psnr"), 25.7, 0.1);
      EXPECT_NEAR(rl.metrics.at("ssim"), 0.810, 0.005);
    }
    auto out = inst->run(reduced, "neural", s, {});
    EXPECT_GT(out.metrics.at("psnr"), 20.5) << "seed " << s;
    EXPECT_GT(out.metrics.at("iou"), 0.1) << "seed " << s;
    total += out.metrics.at("psnr");
  }
  EXPECT_GT(total / 3, 22.3);  // measured 22.95
  const auto full = inst->run(same, "neural", 0, {});
  EXPECT_GT(full.metrics.at("psnr"), 25.0);  // the reference's 25.2 within its seed's noise
  EXPECT_GT(full.metrics.at("ssim"), 0.77);
}

// What the neural smoke fit trains under, item by item against the
// reference (nefi.md 4.15, 6.1-6.9): two stages n/2 -> n with min_coarse 8,
// stage 2 at lr * 0.5, cosine to 1 %, bands opened over 30 % of each stage,
// AdamW 1e-4, clip 1, a softplus head starting at 0.05. Session 10 audited
// these while looking for why the field trails Richardson-Lucy; a change to
// any of them moves the smoke figures (docs/performance.md).
TEST(NefiDeconvolution3d, SmokeCurriculumIsTheReferences) {
  nefi::RunConfig c = nefi::load_run_config_file(config_path("deconvolution3d_smoke.yaml"));
  auto inst = nefi::find_instance("deconvolution3d");
  const auto s = inst->setup(c.config, "neural", 0);
  ASSERT_TRUE(s.has_value());
  const nefi::Curriculum& cur = s->curriculum;
  ASSERT_EQ(cur.stages.size(), 2u);
  EXPECT_TRUE(cur.stages[0].shape == fk::Dims({16, 16, 8})) << cur.stages[0].shape.str();
  EXPECT_TRUE(cur.stages[1].shape == fk::Dims({32, 32, 16})) << cur.stages[1].shape.str();
  EXPECT_EQ(cur.stages[0].steps, 150);
  EXPECT_EQ(cur.stages[1].steps, 250);
  EXPECT_DOUBLE_EQ(cur.stages[0].lr, 0.02);
  EXPECT_DOUBLE_EQ(cur.stages[1].lr, 0.01);
  for (const nefi::Stage& st : cur.stages) {
    EXPECT_EQ(st.lr_schedule, "cosine");
    EXPECT_DOUBLE_EQ(st.lr_min_ratio, 0.01);
    EXPECT_DOUBLE_EQ(st.anneal_fraction, 0.3);
    EXPECT_DOUBLE_EQ(st.progress_at(0), 0.0);  // the beta reset at every stage
  }
  EXPECT_EQ(cur.optim.optimizer, "adamw");
  EXPECT_DOUBLE_EQ(cur.optim.weight_decay, 1e-4);
  EXPECT_DOUBLE_EQ(cur.optim.grad_clip, 1.0);
  // The untrained field is near-uniform at the head's initial value.
  const nefi::FieldMap f = s->problem.field->forward(s->problem.domain, 1.0);
  const auto x = f.at("x").to(fk::DType::F64).to_vector<double>();
  double mean = 0;
  for (double v : x) mean += v / static_cast<double>(x.size());
  EXPECT_NEAR(mean, 0.05, 0.02);
}

// The instance's default refinement (phasefield, well 1e-5, the refit's own
// TV 1e-5, levels by Otsu) on the smoke preset's fit, seeds 0-2, with the
// PSF array over n cells as SmokeQualityFloor runs it. Measured (seeds 0 / 1
// / 2): IoU 0.568 / 0.380 / 0.584 -> 0.775 / 0.568 / 0.778, PSNR 25.36 /
// 27.57 / 26.74 -> 29.32 / 29.84 / 30.58 dB, chi 2.83 / 3.80 / 2.03 -> 1.01
// / 1.05 / 1.04, all accepted (the level set, the default before: IoU
// 0.664 / 0.395 / 0.681 with the full PSF). Floors a margin below. From a
// fit far from the noise (40 + 60 steps, chi ~40) the phases leave the
// smooth field's transition band and the refit is refused
// (docs/performance.md, session 12).
TEST(NefiDeconvolution3d, DefaultRefinementRaisesTheIoUOnEverySeed) {
  const fk::test::ThreadCount one_thread(1);
  auto inst = nefi::find_instance("deconvolution3d");
  EXPECT_EQ(inst->default_config().s("refine_mode"), "phasefield");
  nefi::RunConfig c = nefi::load_run_config_file(config_path("deconvolution3d_smoke.yaml"));
  c.config.set("psf_extent", "same");
  const double refined_iou_floor[3] = {0.72, 0.50, 0.72};
  double mean = 0;
  for (int s = 0; s < 3; ++s) {
    const nefi::RunOutput out = inst->run(c.config, "neural", s, {});
    const auto& m = out.metrics;
    EXPECT_EQ(m.at("refine_accepted"), 1.0) << "seed " << s;
    EXPECT_LT(m.at("refine_chi"), 1.15) << "seed " << s;  // to the noise
    EXPECT_GT(m.at("refined_iou"), refined_iou_floor[s]) << "seed " << s;
    EXPECT_GT(m.at("refined_iou"), m.at("iou") + 0.15) << "seed " << s;
    EXPECT_GT(m.at("refined_psnr"), m.at("psnr") + 2.0) << "seed " << s;
    mean += m.at("refined_iou") / 3;
  }
  EXPECT_GT(mean, 0.67);  // measured 0.707
}

// The instance's own refinement defaults, which the full preset uses as they
// are, on a grid fit at the smoke size (the default config at n 32, n_z 16,
// 150 + 250 steps, PSF over n cells), seed 0. The phase field was measured
// and chosen at Otsu's phase count (levels 0); the instance default of 2
// levels left under it was never measured, and at the full size it was
// accepted yet cut the grid's IoU 0.711 -> 0.661 (docs/performance.md,
// session 15). Measured here: 2 levels IoU 0.621 -> 0.629, PSNR 25.79 ->
// 25.50 dB, chi 1.62 -> 1.27, support kept 0; Otsu's 4 levels -> 0.730,
// 28.18 dB, chi 1.01.
TEST(NefiDeconvolution3d, DefaultRefinementPicksItsPhasesOnTheGridFit) {
  const fk::test::ThreadCount one_thread(1);
  auto inst = nefi::find_instance("deconvolution3d");
  nefi::Params p = inst->default_config();
  EXPECT_EQ(p.i("refine_levels"), 0);
  p.set("n", "32");
  p.set("n_z", "16");
  p.set("steps", "[150, 250]");
  p.set("psf_extent", "same");
  const nefi::RunOutput out = inst->run(p, "grid", 0, {});
  const auto& m = out.metrics;
  EXPECT_EQ(m.at("refine_accepted"), 1.0);
  EXPECT_GT(m.at("refine_levels"), 2.0);
  EXPECT_LT(m.at("refine_chi"), 1.1);
  EXPECT_GT(m.at("refined_iou"), m.at("iou") + 0.05);
  EXPECT_GT(m.at("refined_psnr"), m.at("psnr") + 1.0);
}

// The inversion operator (the PSF sampled at each stage's spacing) against
// the independent data generator (2x supersampled f64 render, direct blur,
// area average): the truth explains the data to the noise at n (chi^2
// measured 0.995 / 1.014 / 1.006). At the coarse stage grid the
// area-averaged truth under the coarse PSF leaves 13.4 / 16.1 / 7.4x the
// averaged noise (tubes of std 0.06-0.09 um in 0.2 x 0.2 x 0.4 um voxels,
// and a PSF of std 0.6 coarse cells point-sampled, as the reference samples
// it), below what the neural smoke fit ends its coarse stage at (33 / 63 /
// 36x).
TEST(NefiDeconvolution3d, BlurModelExplainsTheDataToTheNoiseAtBothStageGrids) {
  const fk::test::ThreadCount one_thread(1);
  nefi::RunConfig c = nefi::load_run_config_file(config_path("deconvolution3d_smoke.yaml"));
  auto inst = nefi::find_instance("deconvolution3d");
  for (uint64_t seed = 0; seed < 3; ++seed) {
    const auto s = inst->setup(c.config, "grid", seed);
    ASSERT_TRUE(s.has_value());
    const nefi::Measurement& m = s->measurement;
    const double nv = m.noise_std * m.noise_std;
    auto chi2 = [&](const nefi::OperatorPtr& op, const fk::Tensor& x, const fk::Tensor& y) {
      const auto ax = op->apply(x).to(fk::DType::F64).to_vector<double>();
      const auto yv = y.to(fk::DType::F64).to_vector<double>();
      double r = 0;
      for (size_t i = 0; i < ax.size(); ++i) r += (ax[i] - yv[i]) * (ax[i] - yv[i]);
      return r / static_cast<double>(ax.size());
    };
    const double fine = chi2(s->problem.op, s->gt, m.data) / nv;
    EXPECT_GT(fine, 0.85) << "seed " << seed;
    EXPECT_LT(fine, 1.15) << "seed " << seed;
    const fk::Dims coarse = s->curriculum.stages[0].shape;
    const fk::Tensor gt_c = fk::from_vector(
        nefi::area_resample(s->gt.to_vector<double>(), s->gt.shape(), coarse), coarse);
    const double coarse_chi2 =
        chi2(s->problem.op->at_resolution(coarse), gt_c, m.resampled(coarse).data) / (nv / 8);
    EXPECT_LT(coarse_chi2, 20.0) << "seed " << seed;
  }
}

// The discrepancy-chosen Wiener filter's residual against the data y under
// the zero-padded blur: between 0.8 and `above` noise stds (the PSF spans
// the box, so the SNR is chosen under the filter's own model).
void expect_residual_near_the_noise(const nefi::RunOutput& w, const fk::Tensor& y, int seed,
                                    double above) {
  const double residual = std::sqrt(nefi::mse(w.result.prediction, y));
  EXPECT_GT(residual, 0.8 * w.measurement.noise_std) << "seed " << seed;
  EXPECT_LT(residual, above * w.measurement.noise_std) << "seed " << seed;
}

// The Wiener baseline at the smoke scale, seeds 0-2. Its SNR comes from the
// discrepancy principle under its own blur model (the data bridged across a
// margin of the blur's length), so under the zero-padded one the residual
// sits a little off the noise level (1.45x on seed 0). It sharpens the
// blurred data and trails Richardson-Lucy; measured: data 21.98 / 25.43 /
// 23.41, Wiener 24.83 / 27.62 / 26.08, RL 25.68 / 28.04 / 27.40 dB (the
// reference, seed 0: data 22.0, Wiener 24.4, RL 25.7).
TEST(NefiDeconvolution3d, WienerBaselineSharpensTheDataAndTrailsRichardsonLucy) {
  const fk::test::ThreadCount one_thread(1);
  nefi::RunConfig c = nefi::load_run_config_file(config_path("deconvolution3d_smoke.yaml"));
  auto inst = nefi::find_instance("deconvolution3d");
  for (int s = 0; s < 3; ++s) {
    auto w = inst->run(c.config, "wiener3d", s, {});
    const fk::Tensor y = w.measurement.data.to(fk::DType::F64);
    expect_residual_near_the_noise(w, y, s, 1.6);
    EXPECT_GT(w.metrics.at("wiener_snr"), 10.0) << "seed " << s;
    EXPECT_GT(w.metrics.at("psnr"), nefi::psnr(y, w.gt) + 2.0) << "seed " << s;
    EXPECT_LT(w.metrics.at("psnr"),
              inst->run(c.config, "richardson_lucy", s, {}).metrics.at("psnr"))
        << "seed " << s;
  }
  // psf_extent same: the PSF array nearly fills the box, leaving 8 cells
  // whose blur stays inside it, too few for the discrepancy (SNR 1 to 8e6
  // by seed); the filter's own model chooses then, as for full (24.84 dB).
  nefi::Params same = c.config;
  same.set("psf_extent", "same");
  EXPECT_NEAR(inst->run(same, "wiener3d", 0, {}).metrics.at("psnr"),
              inst->run(c.config, "wiener3d", 0, {}).metrics.at("psnr"), 0.3);
}

// The Wiener baseline on the puncta preset, seeds 0-2. Dots near a face
// leave the zero-padded blur's data with a jump across that face when it is
// wrapped; a periodic filter then reaches the noise level only by fitting
// that jump, so the discrepancy runs to a high SNR (seeds 0-2: 6310 / 5012
// / 3981) and, on seed 0, below the data (28.45 dB against 29.83). Bridged
// across a margin (padded, the default) the data have no jump: SNR 1000 /
// 501 / 2512, 31.39 / 32.13 / 31.75 dB (mirrored: 31.18 / 31.93 / 31.85)
// against data 29.83 / 30.47 / 30.88 and Richardson-Lucy 32.28 / 33.02 /
// 32.60 (the reference, seed 0: RL 32.3). Under the zero-padded blur the
// residual is 2.02 / 1.49 / 2.66 noise stds: dots as close as 6 % of the
// box to a face are where the filter's and the instrument's models differ.
TEST(NefiDeconvolution3d, WienerOnPunctaBridgesTheDataAcrossTheFaces) {
  const fk::test::ThreadCount one_thread(1);
  nefi::RunConfig c = nefi::load_run_config_file(config_path("deconvolution3d_puncta.yaml"));
  auto inst = nefi::find_instance("deconvolution3d");
  for (int s = 0; s < 3; ++s) {
    auto w = inst->run(c.config, "wiener3d", s, {});
    const fk::Tensor y = w.measurement.data.to(fk::DType::F64);
    expect_residual_near_the_noise(w, y, s, 2.9);
    EXPECT_LT(w.metrics.at("wiener_snr"), 3e3) << "seed " << s;
    EXPECT_GT(w.metrics.at("psnr"), nefi::psnr(y, w.gt) + 0.5) << "seed " << s;
  }
  nefi::Params periodic = c.config;
  periodic.set("wiener_boundary", "periodic");
  const auto w = inst->run(periodic, "wiener3d", 0, {});
  EXPECT_GT(w.metrics.at("wiener_snr"), 4e3);
  EXPECT_LT(w.metrics.at("psnr"), nefi::psnr(w.measurement.data.to(fk::DType::F64), w.gt));
}

}  // namespace
