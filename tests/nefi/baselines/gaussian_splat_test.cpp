#include "nefi/baselines/gaussian_splat.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/testing.h"
#include "fk/thread_count.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/solve/metrics.h"
#include "nefi/test_files.h"

namespace {

using Vec = std::vector<double>;

fk::Tensor f64(const Vec& v, fk::Dims shape, bool grad = false) {
  fk::Tensor t = fk::from_vector(v, shape);
  t.set_requires_grad(grad);
  return t;
}

// Every input of the render differentiated by central differences in f64.
TEST(NefiGaussianSplat, RenderGradchecksInF64) {
  const fk::Tensor coords = f64({-0.8, -0.5, -0.1, 0.2, 0.3, 0.9, 0.6, -0.4, 0.0, 0.05}, {5, 2});
  const fk::Tensor c = f64({-0.3, 0.1, 0.4, -0.2, 0.0, 0.5}, {3, 2}, true);
  const fk::Tensor l = f64({-1.0, -0.7, -1.3, -0.9, -0.5, -1.1}, {3, 2}, true);
  const fk::Tensor a = f64({0.7, -0.4, 1.2}, {3}, true);
  EXPECT_EQ(fk::testing::gradcheck(
                [&](const std::vector<fk::Tensor>& in) {
                  return nefi::render_gaussian_splats(coords, in[0], in[1], in[2]);
                },
                {c, l, a}),
            "");
}

// The field equals the sum written out per cell centre, through its head.
TEST(NefiGaussianSplat, FieldIsThePlainSumThroughTheHead) {
  nefi::GaussianSplatField f(2, nefi::identity_head("x", 0.25), 5, 3, fk::DType::F64);
  const nefi::Domain d({6, 4}, {1.0, 2.0});
  const Vec got = f.forward(d, 1.0).at("x").to_vector<double>();
  const Vec c = f.params().raw(0).to_vector<double>(), l = f.params().raw(1).to_vector<double>();
  const Vec a = f.params().raw(2).to_vector<double>();
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      const double r0 = -1.0 + (2.0 * i + 1.0) / 6.0, r1 = -1.0 + (2.0 * j + 1.0) / 4.0;
      double want = 0.25;
      for (int p = 0; p < 5; ++p) {
        const double u0 = (r0 - c[2 * p]) / std::exp(l[2 * p]);
        const double u1 = (r1 - c[2 * p + 1]) / std::exp(l[2 * p + 1]);
        want += a[p] * std::exp(-0.5 * (u0 * u0 + u1 * u1));
      }
      EXPECT_NEAR(got[i * 4 + j], want, 1e-14) << i << " " << j;
    }
  EXPECT_EQ(f.n_parameters(), 5 * 5);
}

TEST(NefiGaussianSplat, BadShapesAndValuesAreErrors) {
  const fk::Tensor coords = f64(Vec(6, 0.0), {3, 2});
  EXPECT_THROW(nefi::render_gaussian_splats(coords, f64(Vec(6, 0.0), {2, 3}),
                                            f64(Vec(6, 0.0), {2, 3}), f64(Vec(2, 0.0), {2})),
               fk::Error);
  EXPECT_THROW(nefi::GaussianSplatField(2, nefi::identity_head("x"), 0, 0), fk::Error);
  nefi::GaussianSplatField f(2, nefi::identity_head("x"), 4, 0);
  EXPECT_THROW(f.forward(nefi::Domain({4, 4, 4}, {1.0, 1.0, 1.0}), 1.0), fk::Error);
  auto inst = nefi::find_instance("deconvolution");
  nefi::RunConfig rc = nefi::default_run_config("deconvolution");
  nefi::apply_set(rc, "splat_primitives=0");
  try {
    inst->run(rc.config, "gaussian_splat", 0, {});
    ADD_FAILURE() << "splat_primitives=0 accepted";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("splat_primitives"), std::string::npos) << e.what();
  }
}

// Smoke seed 0: the splat fit through the blur beats the blurred input.
TEST(NefiGaussianSplat, DeconvolutionSmokeBeatsBlurred) {
  const fk::test::ThreadCount one_thread(1);
  nefi::RunConfig c =
      nefi::load_run_config_file(nefi::test::config_path("deconvolution_smoke.yaml"));
  auto inst = nefi::find_instance("deconvolution");
  const auto out = inst->run(c.config, "gaussian_splat", 0, {});
  EXPECT_GT(out.metrics.at("psnr"), out.metrics.at("blurred_psnr") + 1.5);  // measured +2.44
  const std::vector<double> data = out.result.history.column("data_loss");
  ASSERT_FALSE(data.empty());
  EXPECT_LT(data.back(), 0.5 * data.front());
}

}  // namespace
