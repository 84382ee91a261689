// pinn_soft: the temperature network's jets against finite differences of
// its value, the trilinear α against hand-made fields, the residual against
// a direct evaluation, and the baseline on the smoke config (the data fit
// improves, the residual falls, α stays uniform: the reference's decoupling).
#include "nefi/instances/thermal/pinn_soft.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/parallel.h"
#include "fk/random.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/test_files.h"

namespace {

using nefi::thermal::PinnGeometry;
using nefi::thermal::SoftPinnSurface;
using nefi::thermal::TemperatureNet;

std::vector<double> values(const fk::Tensor& t) {
  return t.to_vector<double>();
}

// Central differences of value() along each normalised input, in f32 with a
// step of 1e-2 (truncation ~1e-4, rounding ~1e-5 of the scale).
TEST(ThermalPinnSoft, JetsMatchFiniteDifferencesOfTheValue) {
  const TemperatureNet net(16, 3, 100.0, 7);
  const std::vector<float> pts{0.1f,  -0.3f, 0.5f, -0.2f, -0.7f, 0.4f,
                               -0.1f, 0.6f,  0.3f, 0.2f,  -0.8f, 0.9f};
  const fk::Tensor x = fk::from_vector(pts, fk::Dims{3, 4});
  const TemperatureNet::Jet j = net.jet(x);
  EXPECT_EQ(values(j.value), values(net.value(x)));
  const double h = 1e-2;
  for (int k = 0; k < 4; ++k) {
    std::vector<float> up = pts, dn = pts;
    for (int p = 0; p < 3; ++p) {
      up[4 * p + k] += static_cast<float>(h);
      dn[4 * p + k] -= static_cast<float>(h);
    }
    const auto fu = values(net.value(fk::from_vector(up, fk::Dims{3, 4})));
    const auto fd = values(net.value(fk::from_vector(dn, fk::Dims{3, 4})));
    const auto f0 = values(j.value), d1 = values(j.d1[k]);
    for (int p = 0; p < 3; ++p) {
      const double hu = static_cast<double>(up[4 * p + k]) - static_cast<double>(dn[4 * p + k]);
      EXPECT_NEAR(d1[p], (fu[p] - fd[p]) / hu, 0.05) << "d1 " << k << " " << p;
      if (k < 3) {
        const double d2 = values(j.d2[k])[p];
        EXPECT_NEAR(d2, (fu[p] - 2 * f0[p] + fd[p]) / (0.25 * hu * hu), 0.5) << "d2 " << k;
      }
    }
  }
}

// f64 gradcheck through the Fourier encoding: every jet component against
// central differences of value() (step 1e-4: truncation ~1e-8 of the
// derivatives' size at 3 octaves, ω = 4π), on raw inputs and with 3 octaves.
TEST(ThermalPinnSoft, JetsThroughTheEncodingMatchF64FiniteDifferences) {
  const std::vector<double> pts{0.1, -0.3, 0.5, -0.2, -0.7, 0.4, -0.1, 0.6, 0.3, 0.2, -0.8, 0.9};
  for (int octaves : {0, 3}) {
    const TemperatureNet net(8, 2, 1.0, 5, octaves, fk::DType::F64);
    const fk::Tensor x = fk::from_vector(pts, fk::Dims{3, 4});
    const TemperatureNet::Jet j = net.jet(x);
    EXPECT_EQ(values(j.value), values(net.value(x)));
    const double h = 1e-4;
    for (int k = 0; k < 4; ++k) {
      std::vector<double> up = pts, dn = pts;
      for (int p = 0; p < 3; ++p) {
        up[4 * p + k] += h;
        dn[4 * p + k] -= h;
      }
      const auto fu = values(net.value(fk::from_vector(up, fk::Dims{3, 4})));
      const auto fd = values(net.value(fk::from_vector(dn, fk::Dims{3, 4})));
      const auto f0 = values(j.value), d1 = values(j.d1[k]);
      for (int p = 0; p < 3; ++p) {
        EXPECT_NEAR(d1[p], (fu[p] - fd[p]) / (2 * h), 1e-6 * (1 + std::abs(d1[p])))
            << octaves << " octaves, d1 " << k << " " << p;
        if (k < 3) {
          const double d2 = values(j.d2[k])[p];
          EXPECT_NEAR(d2, (fu[p] - 2 * f0[p] + fd[p]) / (h * h), 1e-4 * (1 + std::abs(d2)))
              << octaves << " octaves, d2 " << k << " " << p;
        }
      }
    }
  }
}

// The residual's parameter gradient (autograd through the jets and the
// encoding) against central differences in f64, for the first and last
// layers' weights.
TEST(ThermalPinnSoft, ResidualParameterGradientsThroughTheEncodingGradcheck) {
  auto net = std::make_shared<TemperatureNet>(6, 2, 3.0, 2, 2, fk::DType::F64);
  const PinnGeometry g{{10, 10, 1}, {0.5, 1.0}, 2.0, true};
  const SoftPinnSurface op(net, g);
  fk::Generator gen(4);
  const fk::Tensor alpha = fk::uniform({4, 4, 3}, 0.05, 0.2, {fk::DType::F64}, &gen);
  const std::vector<double> xyz{1.3, 7.1, 0.4, 8.2, 2.5, 0.7, 4.4, 4.9, 0.2};
  const std::vector<double> t{0.3, 1.1, 1.7};
  auto loss = [&] {
    const fk::Tensor r = nefi::thermal::pde_residual(op, alpha, xyz, t);
    return fk::sum(fk::mul(r, r));
  };
  loss().backward();
  const auto& params = net->parameters();
  for (size_t pi : {size_t{0}, params.size() - 2}) {
    fk::Tensor w = params[pi];
    const std::vector<double> grad = values(w.grad());
    for (int64_t e : {int64_t{0}, int64_t{5}, w.numel() - 1}) {
      const double h = 1e-6;
      auto at = [&](double delta) {
        fk::autograd::NoGradGuard ng;
        double* v = w.data<double>() + e;
        const double v0 = *v;
        *v = v0 + delta;
        const double f = values(loss())[0];
        *v = v0;
        return f;
      };
      const double fd = (at(h) - at(-h)) / (2 * h);
      EXPECT_NEAR(grad[e], fd, 1e-6 * (1 + std::abs(fd))) << "param " << pi << " element " << e;
    }
  }
}

// A linear field is reproduced exactly between the outer cell centres, with
// its gradient; across the periodic seam the value is the two edge cells'
// mean; beyond the outer centres in depth it is constant.
TEST(ThermalPinnSoft, TrilinearAlphaAndItsGradient) {
  const fk::Dims s{4, 5, 3};
  const std::vector<double> ext{2.0, 5.0, 1.5};
  std::vector<double> v(s.numel());
  auto lin = [](double x, double y, double z) { return 0.1 + 0.02 * x - 0.03 * y + 0.05 * z; };
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j)
      for (int64_t k = 0; k < s[2]; ++k)
        v[(i * s[1] + j) * s[2] + k] = lin((i + 0.5) * 0.5, j + 0.5, (k + 0.5) * 0.5);
  const fk::Tensor vt = fk::from_vector(v, s);
  const std::vector<double> pts{0.6, 1.2, 0.4, 1.1, 3.9, 1.0, 1.6, 4.4, 0.3};
  const auto a = nefi::thermal::trilinear(vt, ext, false, pts);
  for (int p = 0; p < 3; ++p) {
    EXPECT_NEAR(values(a.value)[p], lin(pts[3 * p], pts[3 * p + 1], pts[3 * p + 2]), 1e-12);
    EXPECT_NEAR(values(a.grad[0])[p], 0.02, 1e-12);
    EXPECT_NEAR(values(a.grad[1])[p], -0.03, 1e-12);
    EXPECT_NEAR(values(a.grad[2])[p], 0.05, 1e-12);
  }
  const std::vector<double> seam{0.0, 2.5, 0.1};  // x on the seam, z above the first centre
  const auto w = nefi::thermal::trilinear(vt, ext, true, seam);
  const double first = v[(0 * s[1] + 2) * s[2]], last = v[(3 * s[1] + 2) * s[2]];
  EXPECT_NEAR(values(w.value)[0], 0.5 * (first + last), 1e-12);
  EXPECT_NEAR(values(w.grad[0])[0], (first - last) / 0.5, 1e-12);
  EXPECT_EQ(values(w.grad[2])[0], 0.0);
}

// The residual ∂_t T − α ΔT − ∇α·∇T against central differences of T in
// physical units with a uniform α (∇α = 0) and a linear one.
TEST(ThermalPinnSoft, ResidualMatchesADirectEvaluation) {
  auto net = std::make_shared<TemperatureNet>(16, 3, 100.0, 3);
  const PinnGeometry g{{4.0, 4.0, 1.0}, {0.5, 1.0}, 2.0, true};
  const SoftPinnSurface op(net, g);
  const fk::Dims s{4, 4, 4};
  std::vector<double> lin(s.numel());
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j)
      for (int64_t k = 0; k < s[2]; ++k) lin[(i * 4 + j) * 4 + k] = 0.1 + 0.04 * (k + 0.5) * 0.25;
  const std::vector<double> xyz{1.3, 2.2, 0.45, 2.7, 0.9, 0.6}, t{0.7, 1.4};
  const auto r = values(nefi::thermal::pde_residual(op, fk::from_vector(lin, s), xyz, t));
  const double h = 2e-2;
  for (int p = 0; p < 2; ++p) {
    auto T = [&](double dx, double dy, double dz, double dt) {
      return values(net->value(g.normalise(
          {xyz[3 * p] + dx, xyz[3 * p + 1] + dy, xyz[3 * p + 2] + dz}, {t[p] + dt})))[0];
    };
    const double t0 = T(0, 0, 0, 0);
    const double tt = (T(0, 0, 0, h) - T(0, 0, 0, -h)) / (2 * h);
    const double lap = (T(h, 0, 0, 0) - 2 * t0 + T(-h, 0, 0, 0)) / (h * h) +
                       (T(0, h, 0, 0) - 2 * t0 + T(0, -h, 0, 0)) / (h * h) +
                       (T(0, 0, h, 0) - 2 * t0 + T(0, 0, -h, 0)) / (h * h);
    const double tz = (T(0, 0, h, 0) - T(0, 0, -h, 0)) / (2 * h);
    const double z = xyz[3 * p + 2];
    const double alpha = 0.1 + 0.04 * z, dalpha_dz = 0.04;  // linear between the centres
    const double direct = tt - alpha * lap - dalpha_dz * tz;
    EXPECT_NEAR(r[p], direct, 0.02 * (std::abs(tt) + alpha * std::abs(lap)) + 0.5) << p;
  }
}

// The smoke config (the reference's pinn_hidden 64, depth 4, 1024 points,
// 150 steps): the surrogate fits the surface data and the residual falls,
// while α stays near its uniform start and finds no defect (IoU 0) — the
// reference reports the data loss 33x lower after 150 steps, α std 0.0025.
// Seed 0 here: data loss 1108 -> 80 (13.8x), residual 0.037 -> 0.0065
// (5.7x), α std 0.020 (the bulk-defect contrast is ~0.15), IoU 0.
TEST(ThermalPinnSoft, SmokeFitsTheSurrogateButNotAlpha) {
  fk::set_num_threads(1);
  nefi::RunConfig c =
      nefi::load_run_config_file(nefi::test::config_path("thermal_tomography_smoke.yaml"));
  auto inst = nefi::find_instance("thermal_tomography");
  const nefi::RunOutput out = inst->run(c.config, "pinn_soft", 0, {});
  const auto data = out.result.history.column("data_loss");
  const auto pde = out.result.history.column("pde");
  ASSERT_EQ(data.size(), 150u);
  ASSERT_EQ(pde.size(), 150u);
  EXPECT_LT(data.back(), data.front() / 10);
  EXPECT_LT(pde.back(), pde.front() / 3);
  const std::vector<double> a = out.reconstruction.to_vector<double>();
  double mean = 0, var = 0;
  for (double v : a) mean += v / a.size();
  for (double v : a) var += (v - mean) * (v - mean) / a.size();
  EXPECT_LT(std::sqrt(var), 0.04);
  EXPECT_EQ(out.metrics.at("iou"), 0.0);
}

// With the Fourier encoding on (4 octaves) the baseline runs: the surrogate
// fits the data and the residual, which starts large (second derivatives of
// the top octave scale with (8π)²), falls by orders of magnitude. Seed 0, the
// full 150 steps: data loss 3100 -> 450, residual 6631 -> 1.9; α is driven
// away from uniform (PSNR 3.9 dB, IoU 0.04) — no better a baseline.
TEST(ThermalPinnSoft, SmokeWithFourierFeaturesFitsTheSurrogate) {
  fk::set_num_threads(1);
  nefi::RunConfig c =
      nefi::load_run_config_file(nefi::test::config_path("thermal_tomography_smoke.yaml"));
  nefi::apply_set(c, "pinn_n_octaves=4");
  nefi::apply_set(c, "pinn_steps=60");
  auto inst = nefi::find_instance("thermal_tomography");
  const nefi::RunOutput out = inst->run(c.config, "pinn_soft", 0, {});
  const auto data = out.result.history.column("data_loss");
  const auto pde = out.result.history.column("pde");
  ASSERT_EQ(data.size(), 60u);
  EXPECT_LT(data.back(), data.front() / 3);
  EXPECT_LT(pde.back(), pde.front() / 100);
  for (double v : out.reconstruction.to_vector<double>()) ASSERT_TRUE(std::isfinite(v));
}

TEST(ThermalPinnSoft, BadKeysAreClearErrors) {
  auto inst = nefi::find_instance("thermal_tomography");
  for (const char* set : {"pinn_n_octaves=-1", "pinn_n_octaves=17", "pinn_collocation=0",
                          "pinn_lambda_pde=-1", "pinn_hidden=0", "pinn_lr=0", "pinn_steps=0"}) {
    nefi::RunConfig c =
        nefi::load_run_config_file(nefi::test::config_path("thermal_tomography_smoke.yaml"));
    nefi::apply_set(c, set);
    const std::string key = std::string(set).substr(0, std::string(set).find('='));
    try {
      inst->setup(c.config, "pinn_soft", 0);
      ADD_FAILURE() << set;
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

}  // namespace
