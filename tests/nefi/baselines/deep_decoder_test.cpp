#include "nefi/baselines/deep_decoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "fk/testing.h"
#include "fk/thread_count.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/test_files.h"

namespace {

using Vec = std::vector<double>;

// Linear interpolation reproduces constants everywhere and linear functions
// away from the clamped edges: x = i (the input cell index) resizes to the
// source position (j + 1/2) m / n - 1/2 of each output cell.
TEST(NefiDeepDecoder, BilinearResizeIsExactOnLinearFunctions) {
  const int64_t m0 = 4, m1 = 5, n0 = 9, n1 = 7;
  Vec v(2 * m0 * m1);
  for (int64_t i = 0; i < m0; ++i)
    for (int64_t j = 0; j < m1; ++j) {
      v[i * m1 + j] = static_cast<double>(i);            // channel 0: linear along axis 1
      v[m0 * m1 + i * m1 + j] = static_cast<double>(j);  // channel 1: along axis 2
    }
  const Vec r =
      nefi::bilinear_resize(fk::from_vector(v, fk::Dims{2, m0, m1}), n0, n1).to_vector<double>();
  ASSERT_EQ(r.size(), static_cast<size_t>(2 * n0 * n1));
  for (int64_t i = 0; i < n0; ++i)
    for (int64_t j = 0; j < n1; ++j) {
      const double s0 = std::clamp((i + 0.5) * m0 / n0 - 0.5, 0.0, m0 - 1.0);
      const double s1 = std::clamp((j + 0.5) * m1 / n1 - 0.5, 0.0, m1 - 1.0);
      EXPECT_NEAR(r[i * n1 + j], s0, 1e-14) << i << " " << j;
      EXPECT_NEAR(r[n0 * n1 + i * n1 + j], s1, 1e-14) << i << " " << j;
    }
  const Vec ones =
      nefi::bilinear_resize(fk::full({3, 2, 3}, 1.0, {fk::DType::F64}), 5, 4).to_vector<double>();
  for (double x : ones) EXPECT_NEAR(x, 1.0, 1e-15);
  EXPECT_THROW(nefi::bilinear_resize(fk::full({2, 2}, 1.0, {fk::DType::F64}), 3, 3), fk::Error);
}

// The 3-D resize against a plainly written trilinear loop (clamped
// cell-centred sources), growing two axes and shrinking one.
TEST(NefiDeepDecoder, LinearResize3dMatchesPlainTrilinearLoop) {
  fk::Generator gen(3);
  const fk::Dims from{2, 3, 4, 5}, to{5, 7, 4};
  const fk::Tensor x = fk::uniform(from, -1.0, 1.0, {fk::DType::F64}, &gen);
  const Vec xv = x.to_vector<double>(), r = nefi::linear_resize(x, to).to_vector<double>();
  ASSERT_EQ(r.size(), static_cast<size_t>(2 * to.numel()));
  // Source cells and weights of output cell j along an axis of m -> n cells.
  const auto taps = [](int64_t j, int64_t m, int64_t n) {
    const double s = std::clamp((j + 0.5) * m / n - 0.5, 0.0, m - 1.0);
    const auto i0 = static_cast<int64_t>(s);
    return std::array<std::pair<int64_t, double>, 2>{
        {{i0, 1 - (s - i0)}, {std::min(i0 + 1, m - 1), s - i0}}};
  };
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < to[0]; ++i)
      for (int64_t j = 0; j < to[1]; ++j)
        for (int64_t k = 0; k < to[2]; ++k) {
          double want = 0;
          for (auto [a, wa] : taps(i, from[1], to[0]))
            for (auto [b, wb] : taps(j, from[2], to[1]))
              for (auto [d, wd] : taps(k, from[3], to[2]))
                want += wa * wb * wd * xv[((c * from[1] + a) * from[2] + b) * from[3] + d];
          EXPECT_NEAR(r[((c * to[0] + i) * to[1] + j) * to[2] + k], want, 1e-14);
        }
  EXPECT_THROW(nefi::linear_resize(x, fk::Dims{5, 7}), fk::Error);
}

// The 3-D generator against central differences in f64, in every weight
// (convolutions, normalisation scales and shifts, output).
TEST(NefiDeepDecoder, Render3dGradchecksInF64) {
  fk::Generator gen(11);
  const fk::Tensor input = fk::uniform({2, 2, 2, 2}, 0.0, 1.0, {fk::DType::F64}, &gen);
  std::vector<fk::Tensor> w;
  for (fk::Dims s : {fk::Dims{2, 2}, fk::Dims{2}, fk::Dims{2}, fk::Dims{2, 2}, fk::Dims{2},
                     fk::Dims{2}, fk::Dims{1, 2}}) {
    w.push_back(fk::randn(s, {fk::DType::F64}, &gen));
    w.back().set_requires_grad(true);
  }
  EXPECT_EQ(fk::testing::gradcheck(
                [&](const std::vector<fk::Tensor>& in) {
                  return nefi::deep_decoder_render(input, in, {4, 3, 5});
                },
                w, {1e-6, 1e-7, 1e-5}),
            "");
}

// The generator (1x1 convolutions, ReLU, channel normalisation, bilinear
// upsampling) against central differences in f64, in every weight.
TEST(NefiDeepDecoder, RenderGradchecksInF64) {
  fk::Generator gen(7);
  const fk::Tensor input = fk::uniform({3, 2, 2}, 0.0, 1.0, {fk::DType::F64}, &gen);
  std::vector<fk::Tensor> w;
  for (fk::Dims s : {fk::Dims{3, 3}, fk::Dims{3}, fk::Dims{3}, fk::Dims{3, 3}, fk::Dims{3},
                     fk::Dims{3}, fk::Dims{1, 3}}) {
    w.push_back(fk::randn(s, {fk::DType::F64}, &gen));
    w.back().set_requires_grad(true);
  }
  EXPECT_EQ(fk::testing::gradcheck(
                [&](const std::vector<fk::Tensor>& in) {
                  return nefi::deep_decoder_render(input, in, {5, 4});
                },
                w, {1e-6, 1e-7, 1e-5}),
            "");
}

TEST(NefiDeepDecoder, FieldShapesAndBadValues) {
  nefi::DeepDecoderField f(nefi::softplus_head("x", 0.05), 2, 8, 3, 1);
  EXPECT_EQ(f.n_parameters(), 3 * (64 + 16) + 8);
  for (fk::Dims s : {fk::Dims{16, 16}, fk::Dims{32, 24}}) {
    const auto x = f.forward(nefi::Domain(s, {1.0, 1.0}), 1.0).at("x");
    EXPECT_EQ(x.shape(), s);
    for (double v : x.to_vector<double>()) ASSERT_GT(v, 0.0);
  }
  EXPECT_THROW(nefi::DeepDecoderField(nefi::identity_head("x"), 2, 0, 3, 1), fk::Error);
  EXPECT_THROW(f.forward(nefi::Domain({4, 4, 4}, {1.0, 1.0, 1.0}), 1.0), fk::Error);
  nefi::DeepDecoderField f3(nefi::softplus_head("x", 0.05), 3, 8, 2, 1);
  const auto x3 = f3.forward(nefi::Domain({10, 6, 5}, {1.0, 1.0, 0.5}), 1.0).at("x");
  EXPECT_EQ(x3.shape(), (fk::Dims{10, 6, 5}));
  EXPECT_THROW(nefi::DeepDecoderField(nefi::identity_head("x"), 4, 8, 2, 1), fk::Error);
}

// Every instance with the baseline rejects bad dd_* values with the key's name.
TEST(NefiDeepDecoder, InstancesRejectBadKeys) {
  for (const char* name :
       {"deconvolution", "sparse_view_ct", "poisson_source", "ct3d", "deconvolution3d", "dot3d"}) {
    auto inst = nefi::find_instance(name);
    for (const char* bad : {"dd_width=0", "dd_stages=0", "dd_stages=9", "dd_lr=0"}) {
      nefi::RunConfig rc = nefi::default_run_config(name);
      nefi::apply_set(rc, bad);
      try {
        inst->run(rc.config, "deep_decoder", 0, {});
        ADD_FAILURE() << name << ": " << bad << " accepted";
      } catch (const fk::Error& e) {
        const std::string key = std::string(bad).substr(0, std::string(bad).find('='));
        EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
      }
    }
  }
}

// Smoke seed 0: the decoder fitted through the blur beats the blurred input.
TEST(NefiDeepDecoder, DeconvolutionSmokeBeatsBlurred) {
  const fk::test::ThreadCount one_thread(1);
  nefi::RunConfig c =
      nefi::load_run_config_file(nefi::test::config_path("deconvolution_smoke.yaml"));
  auto inst = nefi::find_instance("deconvolution");
  const auto out = inst->run(c.config, "deep_decoder", 0, {});
  EXPECT_GT(out.metrics.at("psnr"), out.metrics.at("blurred_psnr") + 2.0);  // measured +3.19
}

// Smoke seed 0 (16 views): the decoder fitted through the Radon transform
// beats FBP (21.93 dB) by far; measured 25.84 dB (reference 27.19).
TEST(NefiDeepDecoder, SparseViewCtSmokeBeatsFbp) {
  const fk::test::ThreadCount one_thread(1);
  nefi::RunConfig c =
      nefi::load_run_config_file(nefi::test::config_path("sparse_view_ct_smoke.yaml"));
  const auto out = nefi::find_instance("sparse_view_ct")->run(c.config, "deep_decoder", 0, {});
  EXPECT_GT(out.metrics.at("psnr"), 25.0);
}

// The other instances' smokes, seed 0: the decoder's PSNR against a floor
// (measured minus a margin; the figures are in docs/performance.md).
double smoke_psnr(const std::string& name) {
  const fk::test::ThreadCount one_thread(1);
  nefi::RunConfig c = nefi::load_run_config_file(nefi::test::config_path(name + "_smoke.yaml"));
  return nefi::find_instance(name)->run(c.config, "deep_decoder", 0, {}).metrics.at("psnr");
}

TEST(NefiDeepDecoder, PoissonSourceSmokeAboveFloor) {
  EXPECT_GT(smoke_psnr("poisson_source"), 26.5);  // measured 27.44
}

TEST(NefiDeepDecoder, Ct3dSmokeAboveFloor) {
  EXPECT_GT(smoke_psnr("ct3d"), 24.3);  // measured 25.05
}

TEST(NefiDeepDecoder, Deconvolution3dSmokeAboveFloor) {
  EXPECT_GT(smoke_psnr("deconvolution3d"), 22.2);  // measured 22.96 (session-11 scenes)
}

TEST(NefiDeepDecoder, Dot3dSmokeAboveFloor) {
  // measured 27.11 (session-11 scenes, the reference's detector tiling)
  EXPECT_GT(smoke_psnr("dot3d"), 26.3);
}

}  // namespace
