// The deconvolution3d data generator (deconvolution3d_data.h): its scene
// classes, the PSF array, the separable direct blur the FFT convolution is
// checked against, and the photon counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "fk/factory.h"
#include "fk/random.h"
#include "fk/testing.h"
#include "nefi/instances/datagen.h"
#include "nefi/instances/deconvolution3d_data.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/numpy_rng.h"
#include "nefi/operators/fft_convolution.h"

namespace {

fk::Tensor rnd(const fk::Dims& s, uint64_t seed) {
  fk::Generator g(seed);
  return fk::randn(s, {fk::DType::F64}, &g);
}

// A tube's persistent walk: 11-18 points, each inside 5 % of every face of
// the (cubic) box, steps of at most 0.09 x its width; adds the walk's
// in-plane and axial travel to the sums.
void expect_walk_inside(const std::vector<nefi::deconv3d::Point>& path,
                        const nefi::deconv3d::Point& box, double& in_plane, double& axial) {
  EXPECT_GE(path.size(), 11u);
  EXPECT_LE(path.size(), 18u);
  for (size_t k = 0; k < path.size(); ++k) {
    for (int a = 0; a < 3; ++a) {
      EXPECT_GE(path[k][a], 0.05 * box[a] - 1e-12);
      EXPECT_LE(path[k][a], 0.95 * box[a] + 1e-12);
    }
    if (k == 0) continue;
    const double dx = path[k][0] - path[k - 1][0], dy = path[k][1] - path[k - 1][1],
                 dz = path[k][2] - path[k - 1][2];
    EXPECT_LE(std::sqrt(dx * dx + dy * dy + dz * dz), 0.09 * box[0] + 1e-12);
    in_plane += std::hypot(dx, dy), axial += std::abs(dz);
  }
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
      expect_walk_inside(o.path, box, in_plane, axial);
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
      for (int a = 0; a < 3; ++a) {  // the walk starts 15 % inside
        EXPECT_GE(o.path[0][a], 0.15 * box[a]);
        EXPECT_LE(o.path[0][a], 0.85 * box[a]);
      }
      expect_walk_inside(o.path, box, in_plane, axial);
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

// The sampler past its multiplied-uniforms range (lambda > 60) against a
// Poisson's moments: mean and variance lambda, skewness 1 / sqrt(lambda),
// each within 5 standard errors over 200k draws (a rounded normal drew a
// skewness near 0 and 1/12 too much variance).
TEST(NefiDatagen, LargeRatePoissonDrawsHaveAPoissonsMoments) {
  for (double lambda : {61.0, 150.0, 1000.0}) {
    nefi::datagen::Rng rng(5);
    const int n = 200000;
    std::vector<double> k(n);
    double mean = 0;
    for (double& v : k) {
      v = static_cast<double>(rng.poisson(lambda));
      mean += v / n;
    }
    double m2 = 0, m3 = 0;
    for (double v : k) {
      m2 += (v - mean) * (v - mean) / n;
      m3 += (v - mean) * (v - mean) * (v - mean) / n;
    }
    EXPECT_NEAR(mean, lambda, 5 * std::sqrt(lambda / n)) << lambda;
    EXPECT_NEAR(m2, lambda, 5 * std::sqrt((2 * lambda * lambda + lambda) / n)) << lambda;
    EXPECT_NEAR(m3 / std::pow(m2, 1.5), 1 / std::sqrt(lambda), 5 * std::sqrt(6.0 / n)) << lambda;
  }
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

}  // namespace
