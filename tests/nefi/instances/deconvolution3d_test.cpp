#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "fk/factory.h"
#include "fk/parallel.h"
#include "fk/random.h"
#include "fk/testing.h"
#include "nefi/instances/deconvolution3d_data.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/solve/metrics.h"
#include "nefi/test_files.h"

namespace {

using nefi::test::config_path;

fk::Tensor rnd(const fk::Dims& s, uint64_t seed) {
  fk::Generator g(seed);
  return fk::randn(s, {fk::DType::F64}, &g);
}

// The 3-D FFT convolution (zero padding, 'same') against the generator's
// separable direct blur on anisotropic voxels, its adjoint and gradient.
TEST(NefiDeconvolution3d, FFTConvolutionIn3DMatchesTheDirectBlur) {
  const std::array<int64_t, 3> s{10, 9, 7};
  const nefi::deconv3d::Point h{0.1, 0.1, 0.2};
  nefi::Domain d({10, 9, 7}, {1.0, 0.9, 1.4});
  nefi::FFTConvolution op(nefi::gaussian_psf(0.15), d);
  const fk::Tensor x = rnd({10, 9, 7}, 1);
  const auto ref = nefi::deconv3d::gaussian_blur(x.to_vector<double>(), s, h, {0.15, 0.15, 0.15});
  const auto y = op.apply(x).to_vector<double>();
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], ref[i], 1e-12);
  const fk::Tensor g = rnd({10, 9, 7}, 2);
  double lhs = 0, rhs = 0;
  const auto ax = op.apply(x).to_vector<double>(), gv = g.to_vector<double>(),
             xv = x.to_vector<double>(), atg = op.vjp(x, g).to_vector<double>();
  for (size_t i = 0; i < ax.size(); ++i) lhs += ax[i] * gv[i], rhs += xv[i] * atg[i];
  EXPECT_NEAR(lhs, rhs, 1e-12 * (1 + std::abs(lhs)));
  nefi::FFTConvolution small(nefi::gaussian_psf(0.2), nefi::Domain({4, 3, 3}));
  fk::Tensor a = rnd({4, 3, 3}, 3);
  a.set_requires_grad(true);
  auto fn = [&](const std::vector<fk::Tensor>& in) { return small.apply(in[0]); };
  EXPECT_EQ(fk::testing::gradcheck(fn, {a}), "");
}

TEST(NefiDeconvolution3d, ScenesAndBadValues) {
  auto inst = nefi::find_instance("deconvolution3d");
  nefi::Params p = inst->default_config();
  p.set("n", "16");
  p.set("n_z", "8");
  for (const char* scene : {"filaments", "puncta", "cells", "uniform_filaments"}) {
    p.set("scene", scene);
    auto [m, gt] = inst->make_measurement(p, 0);
    EXPECT_EQ(m.data.shape(), fk::Dims({16, 16, 8})) << scene;
    const auto v = gt.to_vector<double>();
    EXPECT_GT(*std::max_element(v.begin(), v.end()), 0.3) << scene;
    EXPECT_NE(v, inst->make_measurement(p, 1).second.to_vector<double>()) << scene;
  }
  const std::pair<const char*, const char*> cases[] = {
      {"tv", "-1"},          {"tv_eps", "0"},        {"l1", "-1"},        {"n", "4"},
      {"n_z", "2"},          {"pixel", "0"},         {"z_step", "-0.2"},  {"psf_sigma_xy", "0"},
      {"axial_ratio", "-1"}, {"noise_std", "-1"},    {"scene", "nuclei"}, {"iou_threshold", "1"},
      {"supersample", "0"},  {"rl_iterations", "0"}, {"init_value", "0"}};
  for (const auto& [key, value] : cases) {
    nefi::Params q = inst->default_config();
    q.set(key, value);
    try {
      inst->make_measurement(q, 0);
      ADD_FAILURE() << key << "=" << value << " was accepted";
    } catch (const fk::Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(key), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

// The uniform_filaments class: tubes of intensity 1 along persistent random
// walks inside the box, mostly in-plane; the render of one straight tube
// against its indicator written out directly.
TEST(NefiDeconvolution3d, UniformFilamentsAreTwoPhaseTubes) {
  using nefi::deconv3d::Object;
  using nefi::deconv3d::Point;
  const Point box{3.2, 3.2, 3.2};
  double in_plane = 0, axial = 0;
  for (uint64_t seed = 0; seed < 3; ++seed) {
    const auto scene = nefi::deconv3d::draw_scene("uniform_filaments", box, seed);
    EXPECT_GE(scene.size(), 3u);
    EXPECT_LE(scene.size(), 6u);
    for (const Object& o : scene) {
      EXPECT_EQ(o.kind, Object::kUniformTube);
      EXPECT_EQ(o.amplitude, 1.0);
      EXPECT_GE(o.radius, 0.10);
      EXPECT_LE(o.radius, 0.15);
      EXPECT_GE(o.path.size(), 11u);
      EXPECT_LE(o.path.size(), 18u);
      for (size_t k = 0; k < o.path.size(); ++k) {
        for (int a = 0; a < 3; ++a) {
          EXPECT_GE(o.path[k][a], 0.05 * box[a] - 1e-12);
          EXPECT_LE(o.path[k][a], 0.95 * box[a] + 1e-12);
        }
        if (k == 0) continue;
        const double dx = o.path[k][0] - o.path[k - 1][0], dy = o.path[k][1] - o.path[k - 1][1],
                     dz = o.path[k][2] - o.path[k - 1][2];
        EXPECT_LE(std::sqrt(dx * dx + dy * dy + dz * dz), 0.09 * 3.2 + 1e-12);
        in_plane += std::hypot(dx, dy), axial += std::abs(dz);
      }
    }
  }
  EXPECT_GT(in_plane, 2 * axial);  // fibres run mostly in-plane

  Object tube{Object::kUniformTube, 1.0, {}, {}, {}, 0.1, {{0.2, 0.5, 0.5}, {0.8, 0.5, 0.5}}};
  const std::array<int64_t, 3> s{20, 20, 20};
  const auto v = nefi::deconv3d::render({tube}, s, {1.0, 1.0, 1.0});
  int64_t inside = 0;
  for (int64_t i = 0; i < 20; ++i)
    for (int64_t j = 0; j < 20; ++j)
      for (int64_t k = 0; k < 20; ++k) {
        const double x = (i + 0.5) / 20, y = (j + 0.5) / 20, z = (k + 0.5) / 20;
        const double along = x < 0.2 ? 0.2 - x : (x > 0.8 ? x - 0.8 : 0.0);
        const double d2 = along * along + (y - 0.5) * (y - 0.5) + (z - 0.5) * (z - 0.5);
        const double want = d2 <= 0.01 ? 1.0 : 0.0;
        EXPECT_EQ(v[(i * 20 + j) * 20 + k], want) << i << " " << j << " " << k;
        inside += want > 0;
      }
  EXPECT_GT(inside, 100);
}

// Floors over seeds 0-2 on the smoke preset: Richardson-Lucy at the preset's
// budget; the neural field at a reduced budget (40 + 60 steps; the full
// 150 + 250 takes ~5 s a seed at one thread). Measured (1 thread): RL 30.78
// / 32.80 / 29.89 dB; neural reduced 25.51 / 25.22 / 23.79 dB, IoU 0.13 /
// 0.17 / 0.18. The full smoke neural field reaches 28.04 / 28.54 / 26.43 dB
// (reference, seed 0: 26.5).
TEST(NefiDeconvolution3d, SmokeQualityFloor) {
  fk::set_num_threads(1);
  nefi::RunConfig c = nefi::load_run_config_file(config_path("deconvolution3d_smoke.yaml"));
  auto inst = nefi::find_instance("deconvolution3d");
  nefi::Params reduced = c.config;
  reduced.set("steps", "[40, 60]");
  // Refinement starts from the fit it is given: from this under-trained one
  // it finds no filament above the IoU threshold (refined IoU 0 / 0 / 0.45),
  // so it is off here; refine_test.cpp covers it, and the full smoke run
  // takes seed 0 from IoU 0.345 to 0.430.
  reduced.set("refine", "false");
  double total = 0;
  for (int s = 0; s < 3; ++s) {
    auto rl = inst->run(c.config, "richardson_lucy", s, {});
    EXPECT_GT(rl.metrics.at("psnr"), 27.0) << "seed " << s;
    auto out = inst->run(reduced, "neural", s, {});
    EXPECT_GT(out.metrics.at("psnr"), 22.5) << "seed " << s;
    EXPECT_GT(out.metrics.at("iou"), 0.08) << "seed " << s;
    total += out.metrics.at("psnr");
  }
  EXPECT_GT(total / 3, 23.8);  // measured 24.84
}

// The Wiener baseline at the smoke scale, seeds 0-2. Its SNR comes from the
// discrepancy principle under its periodic blur model, so under the
// zero-padded one the residual sits a little above the noise (the wrap in z,
// sigma_z 0.36 um over a 3.2 um stack). It sharpens the blurred data and
// trails Richardson-Lucy; measured: data 26.62 / 25.93 / 25.40, Wiener 29.07
// / 29.05 / 28.33, RL 30.78 / 32.80 / 29.89 dB (the reference, its scenes:
// data 22.0, Wiener 24.4, RL 25.7).
TEST(NefiDeconvolution3d, WienerBaselineSharpensTheDataAndTrailsRichardsonLucy) {
  fk::set_num_threads(1);
  nefi::RunConfig c = nefi::load_run_config_file(config_path("deconvolution3d_smoke.yaml"));
  auto inst = nefi::find_instance("deconvolution3d");
  for (int s = 0; s < 3; ++s) {
    auto w = inst->run(c.config, "wiener3d", s, {});
    const fk::Tensor y = w.measurement.data.to(fk::DType::F64);
    const double residual = std::sqrt(nefi::mse(w.result.prediction, y));
    EXPECT_GT(residual, 0.8 * w.measurement.noise_std) << "seed " << s;
    EXPECT_LT(residual, 1.3 * w.measurement.noise_std) << "seed " << s;
    EXPECT_GT(w.metrics.at("wiener_snr"), 10.0) << "seed " << s;
    EXPECT_GT(w.metrics.at("psnr"), nefi::psnr(y, w.gt) + 2.0) << "seed " << s;
    EXPECT_LT(w.metrics.at("psnr"),
              inst->run(c.config, "richardson_lucy", s, {}).metrics.at("psnr"))
        << "seed " << s;
  }
}

}  // namespace
