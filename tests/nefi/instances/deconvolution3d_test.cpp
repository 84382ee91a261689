#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "fk/factory.h"
#include "fk/parallel.h"
#include "fk/random.h"
#include "fk/testing.h"
#include "nefi/instances/deconvolution3d_data.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/numpy_rng.h"
#include "nefi/io/run_config.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/resample.h"
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
  for (const char* scene :
       {"filaments", "bezier_filaments", "puncta", "cells", "uniform_filaments"}) {
    p.set("scene", scene);
    auto [m, gt] = inst->make_measurement(p, 0);
    EXPECT_EQ(m.data.shape(), fk::Dims({16, 16, 8})) << scene;
    const auto v = gt.to_vector<double>();
    EXPECT_GT(*std::max_element(v.begin(), v.end()), 0.3) << scene;
    EXPECT_NE(v, inst->make_measurement(p, 1).second.to_vector<double>()) << scene;
  }
  const std::pair<const char*, const char*> cases[] = {{"tv", "-1"},
                                                       {"tv_eps", "0"},
                                                       {"l1", "-1"},
                                                       {"n", "4"},
                                                       {"n_z", "2"},
                                                       {"pixel", "0"},
                                                       {"z_step", "-0.2"},
                                                       {"psf_sigma_xy", "0"},
                                                       {"axial_ratio", "-1"},
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
    EXPECT_GE(scene.objects.size(), 3u);
    EXPECT_LE(scene.objects.size(), 6u);
    for (const Object& o : scene.objects) {
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
  const auto v = nefi::deconv3d::render({{tube}}, s, {1.0, 1.0, 1.0});
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

// The filaments class, the reference's: a background in [0, 0.02] and 3-6
// Gaussian tubes of std 0.06-0.09 um and amplitude 0.5-1 along persistent
// walks (10-17 steps of 0.09 x the box width inside 5 % of each face,
// mostly in-plane) with no ceiling; the walks' directions are three
// standard normals normalised, as NumPy draws them. The render of a
// background and two crossing straight tubes against the sum written out:
// the crossing exceeds 1 and stays.
TEST(NefiDeconvolution3d, FilamentsAreGaussianTubesOnPersistentWalks) {
  using nefi::deconv3d::Object;
  using nefi::deconv3d::Point;
  const Point box{3.2, 3.2, 3.2};
  double in_plane = 0, axial = 0;
  for (uint64_t seed = 0; seed < 3; ++seed) {
    const auto scene = nefi::deconv3d::draw_scene("filaments", box, seed);
    EXPECT_GE(scene.background, 0.0);
    EXPECT_LE(scene.background, 0.02);
    EXPECT_TRUE(std::isinf(scene.ceiling));
    EXPECT_GE(scene.objects.size(), 3u);
    EXPECT_LE(scene.objects.size(), 6u);
    for (const Object& o : scene.objects) {
      EXPECT_EQ(o.kind, Object::kFilament);
      EXPECT_GE(o.radius, 0.06);
      EXPECT_LE(o.radius, 0.09);
      EXPECT_GE(o.amplitude, 0.5);
      EXPECT_LE(o.amplitude, 1.0);
      EXPECT_GE(o.path.size(), 11u);
      EXPECT_LE(o.path.size(), 18u);
      for (int a = 0; a < 3; ++a) {
        EXPECT_GE(o.path[0][a], 0.15 * box[a]);
        EXPECT_LE(o.path[0][a], 0.85 * box[a]);
      }
      for (size_t k = 1; k < o.path.size(); ++k) {
        for (int a = 0; a < 3; ++a) {
          EXPECT_GE(o.path[k][a], 0.05 * box[a] - 1e-12);
          EXPECT_LE(o.path[k][a], 0.95 * box[a] + 1e-12);
        }
        const double dx = o.path[k][0] - o.path[k - 1][0], dy = o.path[k][1] - o.path[k - 1][1],
                     dz = o.path[k][2] - o.path[k - 1][2];
        EXPECT_LE(std::sqrt(dx * dx + dy * dy + dz * dz), 0.09 * 3.2 + 1e-12);
        in_plane += std::hypot(dx, dy), axial += std::abs(dz);
      }
    }
  }
  EXPECT_GT(in_plane, 2 * axial);

  nefi::NumpyRng a(5), b(5);
  const Point d = nefi::deconv3d::normal_direction(a);
  Point want;
  for (double& v : want) v = b.standard_normal();
  const double len = std::sqrt(want[0] * want[0] + want[1] * want[1] + want[2] * want[2]);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(d[k], want[k] / len, 1e-15);
  EXPECT_EQ(a.next_u64(), b.next_u64());  // three draws, no more

  nefi::deconv3d::Scene sc;
  sc.background = 0.01;
  sc.ceiling = std::numeric_limits<double>::infinity();
  sc.objects.push_back(
      {Object::kFilament, 0.8, {}, {}, {}, 0.07, {{0.1, 0.55, 0.55}, {0.9, 0.55, 0.55}}});
  sc.objects.push_back(
      {Object::kFilament, 0.6, {}, {}, {}, 0.09, {{0.55, 0.1, 0.55}, {0.55, 0.9, 0.55}}});
  const auto v = nefi::deconv3d::render(sc, {10, 10, 10}, {1.0, 1.0, 1.0});
  // Squared distance from p to the x-parallel (axis 0) or y-parallel segment.
  auto seg2 = [](double along, double u, double w) {
    const double out = along < 0.1 ? 0.1 - along : (along > 0.9 ? along - 0.9 : 0.0);
    return out * out + u * u + w * w;
  };
  double peak = 0;
  for (int64_t i = 0; i < 10; ++i)
    for (int64_t j = 0; j < 10; ++j)
      for (int64_t k = 0; k < 10; ++k) {
        const double x = (i + 0.5) / 10, y = (j + 0.5) / 10, z = (k + 0.5) / 10;
        const double want_v = 0.01 + 0.8 * std::exp(-0.5 * seg2(x, y - 0.55, z - 0.55) / 0.0049) +
                              0.6 * std::exp(-0.5 * seg2(y, x - 0.55, z - 0.55) / 0.0081);
        EXPECT_NEAR(v[(i * 10 + j) * 10 + k], want_v, 1e-12) << i << " " << j << " " << k;
        peak = std::max(peak, v[(i * 10 + j) * 10 + k]);
      }
  EXPECT_NEAR(peak, 1.41, 1e-12);  // the crossing's cell: 0.01 + 0.8 + 0.6
}

// Photon counts against their budget: per expected count level lambda =
// peak * clean + background, the sample mean and variance over 20000 draws
// (fixed seed) within 5 standard errors of lambda (a Poisson's mean and
// variance), integer and >= 0; negative intensities count as 0.
TEST(NefiDeconvolution3d, PoissonCountsMatchTheirBudget) {
  const double peak = 200, bg = 2;
  const std::vector<double> levels{-0.1, 0.0, 0.05, 0.5, 1.0};
  const size_t n = 20000;
  std::vector<double> clean;
  for (double c : levels) clean.insert(clean.end(), n, c);
  const auto y = nefi::deconv3d::poisson_counts(clean, peak, bg, 7);
  ASSERT_EQ(y.size(), clean.size());
  for (size_t l = 0; l < levels.size(); ++l) {
    const double lambda = peak * std::max(levels[l], 0.0) + bg;
    double mean = 0, var = 0;
    for (size_t i = l * n; i < (l + 1) * n; ++i) {
      EXPECT_EQ(y[i], std::round(y[i]));
      EXPECT_GE(y[i], 0.0);
      mean += y[i] / n;
    }
    for (size_t i = l * n; i < (l + 1) * n; ++i) var += (y[i] - mean) * (y[i] - mean) / (n - 1);
    EXPECT_NEAR(mean, lambda, 5 * std::sqrt(lambda / n)) << lambda;
    EXPECT_NEAR(var, lambda, 5 * std::sqrt((2 * lambda * lambda + lambda) / n)) << lambda;
  }
  EXPECT_NE(y, nefi::deconv3d::poisson_counts(clean, peak, bg, 8));
  EXPECT_THROW(nefi::deconv3d::poisson_counts(clean, 0.0, bg, 7), fk::Error);
  EXPECT_THROW(nefi::deconv3d::poisson_counts(clean, peak, -1.0, 7), fk::Error);
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

// The PSF array at psf_extent full (2n - 1 cells per axis) and same (the
// largest odd count <= n), against a Gaussian written out per cell: shape,
// centre, unit sum; and the zero-padded FFT convolution with either array
// against the plain sum y_i = sum_j k(i - j) x_j over the box.
TEST(NefiDeconvolution3d, PsfExtentFullAndSame) {
  using nefi::deconv3d::PsfExtent;
  const std::array<int64_t, 3> n{6, 5, 4};
  const nefi::deconv3d::Point h{0.1, 0.1, 0.2}, sigma{0.12, 0.12, 0.36};
  for (const PsfExtent e : {PsfExtent::kFull, PsfExtent::kSame}) {
    std::array<int64_t, 3> ks{};
    const auto k = nefi::deconv3d::gaussian_psf(sigma, h, n, e, ks);
    const std::array<int64_t, 3> want =
        e == PsfExtent::kFull ? std::array<int64_t, 3>{11, 9, 7} : std::array<int64_t, 3>{5, 5, 3};
    EXPECT_EQ(ks, want);
    ASSERT_EQ(k.size(), static_cast<size_t>(ks[0] * ks[1] * ks[2]));
    double z = 0;
    std::vector<double> plain;
    for (int64_t i = 0; i < ks[0]; ++i)
      for (int64_t j = 0; j < ks[1]; ++j)
        for (int64_t l = 0; l < ks[2]; ++l) {
          const double dx = (i - ks[0] / 2) * 0.1, dy = (j - ks[1] / 2) * 0.1,
                       dz = (l - ks[2] / 2) * 0.2;
          plain.push_back(
              std::exp(-0.5 * (dx * dx / 0.0144 + dy * dy / 0.0144 + dz * dz / 0.1296)));
          z += plain.back();
        }
    double sum = 0, mx = 0;
    for (size_t q = 0; q < k.size(); ++q) {
      EXPECT_NEAR(k[q], plain[q] / z, 1e-15);
      sum += k[q], mx = std::max(mx, k[q]);
    }
    EXPECT_NEAR(sum, 1.0, 1e-14);
    EXPECT_EQ(mx, k[(ks[0] / 2 * ks[1] + ks[1] / 2) * ks[2] + ks[2] / 2]);  // the centre

    auto inst = nefi::find_instance("deconvolution3d");
    nefi::Params p = inst->default_config();
    p.set("n", "8");
    p.set("n_z", "4");
    p.set("psf_extent", e == PsfExtent::kFull ? "full" : "same");
    auto s = inst->setup(p, "grid", 0);
    ASSERT_TRUE(s.has_value());
    const auto& op = dynamic_cast<const nefi::FFTConvolution&>(*s->problem.op);
    const nefi::PsfSample ok = op.kernel();
    EXPECT_EQ(ok.shape, e == PsfExtent::kFull ? fk::Dims({15, 15, 7}) : fk::Dims({7, 7, 3}));
    const fk::Tensor x = rnd({8, 8, 4}, 5);
    const auto xv = x.to_vector<double>(), yv = op.apply(x).to_vector<double>();
    const int64_t r0 = ok.shape[0] / 2, r2 = ok.shape[2] / 2;
    for (int64_t i = 0; i < 8; ++i)
      for (int64_t j = 0; j < 8; ++j)
        for (int64_t l = 0; l < 4; ++l) {
          double want_y = 0;
          for (int64_t a = 0; a < 8; ++a)
            for (int64_t b = 0; b < 8; ++b)
              for (int64_t c = 0; c < 4; ++c) {
                const int64_t ti = i - a + r0, tj = j - b + r0, tl = l - c + r2;
                if (ti < 0 || tj < 0 || tl < 0 || ti >= ok.shape[0] || tj >= ok.shape[1] ||
                    tl >= ok.shape[2])
                  continue;
                want_y +=
                    ok.values[(ti * ok.shape[1] + tj) * ok.shape[2] + tl] * xv[(a * 8 + b) * 4 + c];
              }
          EXPECT_NEAR(yv[(i * 8 + j) * 4 + l], want_y, 1e-12);
        }
  }
}

// The puncta class, the reference's: 12-29 Gaussian dots of std 0.04-0.07
// um and amplitude 0.8-1.6 with centres 6 % inside the box, over a
// background in [0, 0.02] with no ceiling; the render of one dot (a cell's
// mean, not its centre's value) against the Gaussian integrated over each
// cell by the midpoint rule on 12^3 sub-cells.
TEST(NefiDeconvolution3d, PunctaAreGaussianDotsAveragedOverTheCells) {
  using nefi::deconv3d::Object;
  const nefi::deconv3d::Point box{3.2, 3.2, 3.2};
  for (uint64_t seed = 0; seed < 3; ++seed) {
    const auto scene = nefi::deconv3d::draw_scene("puncta", box, seed);
    EXPECT_GE(scene.objects.size(), 12u);
    EXPECT_LE(scene.objects.size(), 29u);
    EXPECT_GE(scene.background, 0.0);
    EXPECT_LE(scene.background, 0.02);
    EXPECT_TRUE(std::isinf(scene.ceiling));
    for (const Object& o : scene.objects) {
      EXPECT_EQ(o.kind, Object::kPunctum);
      EXPECT_GE(o.radius, 0.04);
      EXPECT_LE(o.radius, 0.07);
      EXPECT_GE(o.amplitude, 0.8);
      EXPECT_LE(o.amplitude, 1.6);
      for (int a = 0; a < 3; ++a) {
        EXPECT_GE(o.a[a], 0.06 * box[a] - 1e-12);
        EXPECT_LE(o.a[a], 0.94 * box[a] + 1e-12);
      }
    }
  }
  const Object dot{Object::kPunctum, 1.2, {0.47, 0.52, 0.5}, {}, {}, 0.06, {}};
  const auto v = nefi::deconv3d::render({{dot}}, {10, 10, 10}, {1.0, 1.0, 1.0});
  const int m = 12;
  for (int64_t i = 0; i < 10; ++i)
    for (int64_t j = 0; j < 10; ++j)
      for (int64_t k = 0; k < 10; ++k) {
        double want = 0;
        for (int p = 0; p < m; ++p)
          for (int q = 0; q < m; ++q)
            for (int r = 0; r < m; ++r) {
              const double dx = (i + (p + 0.5) / m) / 10 - 0.47,
                           dy = (j + (q + 0.5) / m) / 10 - 0.52,
                           dz = (k + (r + 0.5) / m) / 10 - 0.5;
              want += 1.2 * std::exp(-0.5 * (dx * dx + dy * dy + dz * dz) / 0.0036) / (m * m * m);
            }
        EXPECT_NEAR(v[(i * 10 + j) * 10 + k], want, 2e-3 * 1.2) << i << " " << j << " " << k;
      }
}

// The presets: poisson (counts at 200 / 2), puncta (l1 1e-3) and the full
// preset's psf_extent same, as the reference lists them. On the poisson
// preset Richardson-Lucy (30 iterations) sharpens the count data, read as
// intensities (y - 2) / 200, by > 2 dB on seeds 0-2 (see its yaml).
TEST(NefiDeconvolution3d, PresetsAndPoissonRichardsonLucy) {
  fk::set_num_threads(1);
  auto inst = nefi::find_instance("deconvolution3d");
  const nefi::RunConfig full = nefi::load_run_config_file(config_path("deconvolution3d.yaml"));
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
  fk::set_num_threads(1);
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
// The refit under its own TV (refine_tv, 1e-5) fits the data to the noise
// from a poor start: seed 0 at 40 + 60 steps (chi 39.8) measured refined chi
// 1.14, IoU 0.185 -> 0.521. Under the solve's TV (1e-4) the same refit
// stopped at chi 1.43 (docs/performance.md, session 11, "the refit's
// scales").
TEST(NefiDeconvolution3d, RefitFitsToTheNoiseUnderItsOwnTv) {
  fk::set_num_threads(1);
  nefi::RunConfig c = nefi::load_run_config_file(config_path("deconvolution3d_smoke.yaml"));
  c.config.set("steps", "[40, 60]");
  const auto out = nefi::find_instance("deconvolution3d")->run(c.config, "neural", 0, {});
  EXPECT_EQ(out.metrics.at("refine_accepted"), 1.0);
  EXPECT_GT(out.metrics.at("refine_chi_smooth"), 10.0);
  EXPECT_LT(out.metrics.at("refine_chi"), 1.25);
  EXPECT_GT(out.metrics.at("refined_iou"), out.metrics.at("iou") + 0.25);
  EXPECT_GT(out.metrics.at("refined_iou"), 0.47);
}

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
  fk::set_num_threads(1);
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
// the zero-padded blur: at the noise level under the filter's own model
// (its SNR is picked so), between 0.8 and `above` noise stds under this one.
void expect_residual_near_the_noise(const nefi::RunOutput& w, const fk::Tensor& y, int seed,
                                    double above) {
  const double residual = std::sqrt(nefi::mse(w.result.prediction, y));
  EXPECT_GT(residual, 0.8 * w.measurement.noise_std) << "seed " << seed;
  EXPECT_LT(residual, above * w.measurement.noise_std) << "seed " << seed;
}

// The Wiener baseline at the smoke scale, seeds 0-2. Its SNR comes from the
// discrepancy principle under its own blur model (the data mirrored about
// the faces), so under the zero-padded one the residual sits a little off
// the noise level (1.32x on seed 1). It sharpens the blurred data and
// trails Richardson-Lucy; measured: data 21.98 / 25.43 / 23.41, Wiener
// 24.62 / 27.53 / 25.88, RL 25.68 / 28.04 / 27.40 dB (the reference, seed
// 0: data 22.0, Wiener 24.4, RL 25.7).
TEST(NefiDeconvolution3d, WienerBaselineSharpensTheDataAndTrailsRichardsonLucy) {
  fk::set_num_threads(1);
  nefi::RunConfig c = nefi::load_run_config_file(config_path("deconvolution3d_smoke.yaml"));
  auto inst = nefi::find_instance("deconvolution3d");
  for (int s = 0; s < 3; ++s) {
    auto w = inst->run(c.config, "wiener3d", s, {});
    const fk::Tensor y = w.measurement.data.to(fk::DType::F64);
    expect_residual_near_the_noise(w, y, s, 1.4);
    EXPECT_GT(w.metrics.at("wiener_snr"), 10.0) << "seed " << s;
    EXPECT_GT(w.metrics.at("psnr"), nefi::psnr(y, w.gt) + 2.0) << "seed " << s;
    EXPECT_LT(w.metrics.at("psnr"),
              inst->run(c.config, "richardson_lucy", s, {}).metrics.at("psnr"))
        << "seed " << s;
  }
}

// The Wiener baseline on the puncta preset, seeds 0-2. Dots near a face
// leave the zero-padded blur's data with a jump across that face when it is
// wrapped; a periodic filter then reaches the noise level only by fitting
// that jump, so the discrepancy runs to a high SNR (seeds 0-2: 6310 / 5012
// / 3981) and, on seed 0, below the data (28.45 dB against 29.83).
// Mirrored about the faces the data have no jump: measured SNR 794 / 501 /
// 1259, 31.18 / 31.93 / 31.85 dB against data 29.83 / 30.47 / 30.88 and
// Richardson-Lucy 32.28 / 33.02 / 32.60 (the reference, seed 0: RL 32.3).
// Under the zero-padded blur its residual is 1.80 / 1.47 / 1.99 noise stds:
// dots as close as 6 % of the box to a face are where the mirrored and the
// zero-padded models differ.
TEST(NefiDeconvolution3d, WienerOnPunctaMirrorsTheDataAboutTheFaces) {
  fk::set_num_threads(1);
  nefi::RunConfig c = nefi::load_run_config_file(config_path("deconvolution3d_puncta.yaml"));
  auto inst = nefi::find_instance("deconvolution3d");
  for (int s = 0; s < 3; ++s) {
    auto w = inst->run(c.config, "wiener3d", s, {});
    const fk::Tensor y = w.measurement.data.to(fk::DType::F64);
    expect_residual_near_the_noise(w, y, s, 2.2);
    EXPECT_LT(w.metrics.at("wiener_snr"), 2e3) << "seed " << s;
    EXPECT_GT(w.metrics.at("psnr"), nefi::psnr(y, w.gt) + 0.5) << "seed " << s;
  }
  nefi::Params periodic = c.config;
  periodic.set("wiener_boundary", "periodic");
  const auto w = inst->run(periodic, "wiener3d", 0, {});
  EXPECT_GT(w.metrics.at("wiener_snr"), 4e3);
  EXPECT_LT(w.metrics.at("psnr"), nefi::psnr(w.measurement.data.to(fk::DType::F64), w.gt));
}

}  // namespace
