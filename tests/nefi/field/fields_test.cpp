#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <limits>
#include <numbers>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/profile.h"
#include "fk/random.h"
#include "fk/testing.h"
#include "nefi/field/fast_tanh.h"
#include "nefi/field/fourier_features.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/heads.h"
#include "nefi/field/neural_field.h"

namespace {

TEST(NefiFourierFeatures, ValuesGatesAndCache) {
  nefi::FourierFeatures enc(1, 3, /*include_input=*/true, /*annealed=*/true);
  EXPECT_EQ(enc.out_dim(), 7);
  fk::Tensor x = fk::from_vector(std::vector<float>{-0.5f, 0.25f}, fk::Dims{2, 1});
  // Finished annealing: all gates 1, values sin/cos(2^k pi x).
  auto f = enc.forward(x, 1.0).to_vector<double>();
  for (int i = 0; i < 2; ++i) {
    const double xi = i == 0 ? -0.5 : 0.25;
    EXPECT_NEAR(f[i * 7], xi, 1e-7);
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(f[i * 7 + 1 + 2 * k], std::sin(std::ldexp(std::numbers::pi, k) * xi), 1e-6);
      EXPECT_NEAR(f[i * 7 + 2 + 2 * k], std::cos(std::ldexp(std::numbers::pi, k) * xi), 1e-6);
    }
  }
  // Gate: beta = progress * K; band k weight (1 - cos(pi clip(beta - k))) / 2.
  EXPECT_DOUBLE_EQ(enc.band_weight(0, 0.0), 0.0);
  EXPECT_NEAR(enc.band_weight(1, 0.5), 0.5, 1e-12);  // beta 1.5: half open
  EXPECT_DOUBLE_EQ(enc.band_weight(2, 1.0), 1.0);
  auto g = enc.forward(x, 0.5).to_vector<double>();
  EXPECT_NEAR(g[1], f[1], 1e-7);        // band 0 fully open at beta 1.5
  EXPECT_NEAR(g[3], 0.5 * f[3], 1e-7);  // band 1 half
  EXPECT_NEAR(g[5], 0.0, 1e-7);         // band 2 closed
  // Cached: an annealing forward costs one op, a finished one none.
  {
    fk::profile::ProfileScope p;
    enc.forward(x, 0.3);
    EXPECT_EQ(p.report().counts.ops, 1);
  }
  {
    fk::profile::ProfileScope p;
    enc.forward(x, 1.0);
    EXPECT_EQ(p.report().counts.ops, 0);
  }
  EXPECT_THROW(nefi::FourierFeatures(1, 0, false), fk::Error);
  EXPECT_THROW(enc.forward(fk::zeros({2, 2}), 1.0), fk::Error);
}

// A periodic axis: its raw slot is 0, so a point and its image one domain
// length (2) along that axis have the same features; along the other axis
// they differ. A neural field of them repeats with the domain.
TEST(NefiFourierFeatures, PeriodicAxesRepeatWithTheDomain) {
  nefi::FourierFeatures enc(2, 4, true, false, {1});
  EXPECT_EQ(enc.out_dim(), 2 + 16);
  const std::vector<double> p{-0.9, 0.7, 0.3, -0.35};
  auto shifted = [&](int axis) {
    std::vector<double> q = p;
    q[axis] += 2.0;
    q[2 + axis] += 2.0;
    return fk::from_vector(q, fk::Dims{2, 2});
  };
  const auto f = enc.forward(fk::from_vector(p, fk::Dims{2, 2}), 1.0).to_vector<double>();
  EXPECT_EQ(f[1], 0.0);
  EXPECT_EQ(f[0], p[0]);
  nefi::FourierFeatures enc1(2, 4, true, false, {1});
  const auto g = enc1.forward(shifted(1), 1.0).to_vector<double>();
  for (size_t i = 0; i < f.size(); ++i) EXPECT_NEAR(g[i], f[i], 1e-12) << i;
  nefi::FourierFeatures enc0(2, 4, true, false, {1});
  EXPECT_NE(enc0.forward(shifted(0), 1.0).to_vector<double>()[0], f[0]);
  EXPECT_THROW(nefi::FourierFeatures(2, 4, true, true, {2}), fk::Error);
  // The field built on them: the config's axes reach the encoding.
  nefi::NeuralFieldConfig cfg;
  cfg.hidden = 8;
  cfg.depth = 2;
  cfg.n_octaves = 3;
  cfg.periodic_axes = {0};
  nefi::NeuralField field(1, {nefi::identity_head("x")}, cfg, 1);
  const fk::Tensor at = fk::from_vector(std::vector<float>{-0.75f, 1.25f}, fk::Dims{2, 1});
  const auto e = field.encoding().forward(at, 1.0).to_vector<float>();
  EXPECT_EQ(e[0], 0.0f);
  for (int i = 0; i < 7; ++i) EXPECT_NEAR(e[i], e[7 + i], 1e-6) << i;
}

// retarget keeps a captured device forward valid; on the host there is no
// graph to keep, and a later forward computes its own gate as before.
TEST(NefiFourierFeatures, RetargetIsForDeviceForwardsOnly) {
  nefi::FourierFeatures enc(1, 3);
  fk::Tensor x = fk::from_vector(std::vector<float>{-0.5f, 0.25f}, fk::Dims{2, 1});
  EXPECT_FALSE(enc.retarget(0.2));  // nothing ran yet
  const auto a = enc.forward(x, 0.2).to_vector<float>();
  EXPECT_FALSE(enc.retarget(0.4));
  nefi::FourierFeatures fresh(1, 3);
  EXPECT_EQ(enc.forward(x, 0.4).to_vector<float>(), fresh.forward(x, 0.4).to_vector<float>());
  EXPECT_NE(a, fresh.forward(x, 0.4).to_vector<float>());
}

TEST(NefiFastTanh, MatchesTanhAndGradchecks) {
  std::vector<float> xs;
  for (int i = -2000; i <= 2000; ++i) xs.push_back(i * 0.01f);
  xs.push_back(50.f);
  xs.push_back(-50.f);
  fk::Tensor x = fk::from_vector(xs);
  auto y = nefi::fast_tanh(x).to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_NEAR(y[i], std::tanh(xs[i]), 3e-7) << xs[i];  // ~2 ulp near +-1
  fk::Tensor xd = fk::from_vector(std::vector<double>{-2.0, -0.3, 0.1, 1.7}, fk::Dims{2, 2});
  xd.set_requires_grad(true);
  EXPECT_EQ(fk::testing::gradcheck(
                [](const std::vector<fk::Tensor>& in) { return nefi::fast_tanh(in[0].t()); }, {xd}),
            "");
  EXPECT_THROW(nefi::fast_tanh(fk::zeros({2}, {fk::DType::I32})), fk::Error);
  // NaN stays NaN wherever it lies: in the 8-wide body or the scalar tail.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto z = nefi::fast_tanh(fk::from_vector(std::vector<float>{nan, 0, 0, 0, 0, 0, 0, 0, nan}))
                     .to_vector<float>();
  EXPECT_TRUE(std::isnan(z[0]));
  EXPECT_TRUE(std::isnan(z[8]));
}

TEST(NefiHeads, TransformsAndInitialValues) {
  fk::Tensor z = fk::zeros({3});
  nefi::FieldMap none;
  auto at_bias = [&](const nefi::HeadPtr& h) {
    std::vector<fk::Tensor> cols;
    for (double b : h->init_bias()) cols.push_back(fk::full({3}, b));
    return h->transform(cols, none).to_vector<double>()[0];
  };
  EXPECT_NEAR(at_bias(nefi::softplus_head("x", 0.05)), 0.05, 1e-6);
  EXPECT_NEAR(at_bias(nefi::exp_head("x", 2.0)), 2.0, 1e-6);
  EXPECT_NEAR(at_bias(nefi::bounded_head("x", 1.0, 3.0, 2.5)), 2.5, 1e-6);
  EXPECT_NEAR(at_bias(nefi::log_bounded_head("x", 0.01, 100.0, 1.0)), 1.0, 1e-5);
  EXPECT_NEAR(at_bias(nefi::gated_softplus_head("x", 0.2, 0.8)), 0.2, 1e-6);
  EXPECT_NEAR(at_bias(nefi::affine_head(nefi::identity_head("x", 1.0), 2.0, 3.0)), 5.0, 1e-9);
  // ZeroMean: exact zero mean.
  auto zm = nefi::zero_mean_head(nefi::identity_head("x"));
  auto v = zm->transform({fk::from_vector(std::vector<float>{1, 2, 6})}, none).to_vector<double>();
  EXPECT_NEAR(v[0] + v[1] + v[2], 0.0, 1e-6);
  // SupportMasked: inner * 1{rho > tau max rho}.
  nefi::FieldMap done{{"rho", fk::from_vector(std::vector<float>{0.1f, 1.0f, 0.5f})}};
  auto sm = nefi::support_masked_head(nefi::identity_head("x"), "rho", 0.3);
  auto m = sm->transform({fk::from_vector(std::vector<float>{4, 5, 6})}, done).to_vector<double>();
  EXPECT_EQ(m, (std::vector<double>{0, 5, 6}));
  EXPECT_THROW(sm->transform({z}, none), fk::Error);
  EXPECT_THROW(nefi::bounded_head("x", 1.0, 0.0, 0.5), fk::Error);
  EXPECT_THROW(nefi::make_head("nope", "x", 1.0), fk::Error);
}

// MultiPhase: the start bias mixes the values to v0 exactly; the map is sum_k v_k softmax(h /
// eps)_k (written out, and its gradient by finite differences in f64); sharp at the end, each cell
// takes the value of its largest channel; bad values are refused by name.
TEST(NefiHeads, MultiPhaseMixesItsValuesAndSharpens) {
  const std::vector<double> values = {0.0, 0.5, 2.0};
  const nefi::HeadPtr h = nefi::multi_phase_head("x", values, 0.8, 1.0, 0.05);
  EXPECT_EQ(h->n_in(), 3);
  EXPECT_TRUE(h->reads_progress());
  nefi::FieldMap none;
  std::vector<fk::Tensor> start;
  for (double b : h->init_bias()) start.push_back(fk::full({2}, b, {fk::DType::F64}));
  EXPECT_NEAR(h->transform(start, none, 0.0).to_vector<double>()[0], 0.8, 1e-12);
  const std::vector<double> a = {0.3, -1.0}, b = {1.2, 0.4}, c = {-0.5, 0.9};
  auto raw = [&] {
    return std::vector<fk::Tensor>{fk::from_vector(a, {2}), fk::from_vector(b, {2}),
                                   fk::from_vector(c, {2})};
  };
  const double eps = std::sqrt(0.05);  // progress 1/2
  const auto got = h->transform(raw(), none, 0.5).to_vector<double>();
  for (int i = 0; i < 2; ++i) {
    const double ea = std::exp(a[i] / eps), eb = std::exp(b[i] / eps), ec = std::exp(c[i] / eps);
    EXPECT_NEAR(got[i], (0.0 * ea + 0.5 * eb + 2.0 * ec) / (ea + eb + ec), 1e-12) << i;
  }
  std::vector<fk::Tensor> in = raw();
  for (fk::Tensor& t : in) t.set_requires_grad(true);
  EXPECT_EQ(fk::testing::gradcheck(
                [&](const std::vector<fk::Tensor>& r) { return h->transform(r, none, 0.5); }, in),
            "");
  // Sharp: cell 0's largest channel is the second (0.5), cell 1's the third (2).
  const auto sharp = nefi::multi_phase_head("x", values, 0.8, 1.0, 1e-3)
                         ->transform(raw(), none, 1.0)
                         .to_vector<double>();
  EXPECT_NEAR(sharp[0], 0.5, 1e-9);
  EXPECT_NEAR(sharp[1], 2.0, 1e-9);
  // The start is the most even mix giving v0: 0.5 of (0, 0.5, 1) is a third
  // each, so every phase starts with cells' share of the slope.
  const nefi::HeadPtr even = nefi::multi_phase_head("x", {0.0, 0.5, 1.0}, 0.5);
  const std::vector<double> eb = even->init_bias();
  EXPECT_NEAR(eb[0], eb[1], 1e-9);
  EXPECT_NEAR(eb[1], eb[2], 1e-9);
  // A leak keeps the values and gives a saturated cell's channels a slope.
  const nefi::HeadPtr leaky = nefi::multi_phase_head("x", values, 0.8, 1.0, 1e-3, 0.01);
  std::vector<fk::Tensor> flat = raw();
  for (fk::Tensor& t : flat) t.set_requires_grad(true);
  const fk::Tensor out = leaky->transform(flat, none, 1.0);
  EXPECT_EQ(out.to_vector<double>(), sharp);
  fk::sum(out).backward();
  EXPECT_GT(std::abs(flat[0].grad().to_vector<double>()[0]), 1.0);  // 0.01 |0 - 5/6| / 1e-3
  EXPECT_THROW(nefi::multi_phase_head("x", {}, 0.5), fk::Error);
  EXPECT_THROW(nefi::multi_phase_head("x", {1.0, 0.0}, 0.5), fk::Error);       // not ascending
  EXPECT_THROW(nefi::multi_phase_head("x", {0.0, 1.0}, 1.0), fk::Error);       // v0 on a value
  EXPECT_THROW(nefi::multi_phase_head("x", {0.0, 1.0, 1.0}, 0.5), fk::Error);  // repeated
}

TEST(NefiNeuralField, FlatBufferGradientsAndInit) {
  nefi::NeuralFieldConfig cfg;
  cfg.hidden = 8;
  cfg.depth = 3;
  cfg.skip_at = 1;
  cfg.n_octaves = 2;
  nefi::NeuralField f(1, {nefi::softplus_head("x", 0.3)}, cfg, 7);
  nefi::Domain d({16});
  // out_init_scale 0.1 + head bias: near-uniform at the head's initial value.
  auto x0 = f.forward(d, 1.0).at("x").to_vector<double>();
  for (double v : x0) EXPECT_NEAR(v, 0.3, 0.1);
  // One leaf, gradient lands in one flat buffer; check against finite differences.
  fk::Tensor loss = fk::sum(fk::square(f.forward(d, 0.7).at("x")));
  loss.backward();
  fk::Tensor g = f.params().flat().grad();
  ASSERT_TRUE(g.defined());
  ASSERT_EQ(g.numel(), f.n_parameters());
  auto gv = g.to_vector<double>();
  fk::Tensor flat = f.params().flat();
  for (int64_t idx : {int64_t{0}, int64_t{40}, f.n_parameters() - 1}) {
    auto eval = [&](double delta) {
      fk::autograd::NoGradGuard ng;
      float* p = flat.data<float>();
      const float old = p[idx];
      p[idx] = static_cast<float>(old + delta);
      flat.bump_version();
      double s = 0;
      for (double v : f.forward(d, 0.7).at("x").to_vector<double>()) s += v * v;
      p[idx] = old;
      flat.bump_version();
      return s;
    };
    const double fd = (eval(1e-2) - eval(-1e-2)) / 2e-2;
    EXPECT_NEAR(gv[idx], fd, 2e-3 + 2e-2 * std::abs(fd)) << idx;
  }
  // Same seed, same parameters.
  nefi::NeuralField f2(1, {nefi::softplus_head("x", 0.3)}, cfg, 7);
  EXPECT_EQ(f2.params().flat().to_vector<float>(), f.params().flat().to_vector<float>());
  cfg.activation = "swish";
  EXPECT_THROW(nefi::NeuralField(1, {nefi::identity_head("x")}, cfg), fk::Error);
}

// Initial weight ranges per activation (the reference's rule): uniform
// bounds Xavier sqrt(6 / (in + out)) for tanh / softplus, He sqrt(6 / in) for
// relu / gelu / silu, SIREN 1 / in then sqrt(6 / in) / 30 for sine; hidden
// biases 0; the output layer Xavier times out_init_scale with the head bias.
TEST(NefiNeuralField, InitialisationBoundsPerActivation) {
  for (const char* act : {"tanh", "softplus", "relu", "gelu", "silu", "sine"}) {
    nefi::NeuralFieldConfig cfg;
    cfg.hidden = 48;
    cfg.depth = 2;
    cfg.skip_at = 0;
    cfg.n_octaves = 2;  // encoding width 1 + 2 * 2 = 5
    cfg.activation = act;
    nefi::NeuralField f(1, {nefi::softplus_head("x", 0.3)}, cfg, 3);
    const std::string a = act;
    const double fans[3][2] = {{5, 48}, {48, 48}, {48, 1}};  // (in, out) per layer
    for (int i = 0; i < 3; ++i) {
      const double in = fans[i][0], out = fans[i][1];
      double bound = std::sqrt(6.0 / (in + out));
      if (i < 2 && (a == "relu" || a == "gelu" || a == "silu")) bound = std::sqrt(6.0 / in);
      if (i < 2 && a == "sine") bound = i == 0 ? 1.0 / in : std::sqrt(6.0 / in) / 30.0;
      if (i == 2) bound *= 0.1;
      double mx = 0;
      for (double w : f.params().raw(2 * i).to_vector<double>()) mx = std::max(mx, std::abs(w));
      EXPECT_LE(mx, bound * (1 + 1e-6)) << a << " layer " << i;
      EXPECT_GT(mx, 0.8 * bound) << a << " layer " << i;
      const auto b = f.params().raw(2 * i + 1).to_vector<double>();
      if (i < 2)
        for (double v : b) EXPECT_EQ(v, 0.0) << a << " layer " << i;
      else
        EXPECT_NEAR(std::log1p(std::exp(b[0])), 0.3, 1e-6);
    }
  }
}

TEST(NefiGridField, ResamplesAtStageStart) {
  nefi::GridField g({4}, {nefi::identity_head("x", 0.5)});
  EXPECT_EQ(g.forward(nefi::Domain({4}), 1.0).at("x").to_vector<double>(),
            (std::vector<double>(4, 0.5)));
  {
    fk::autograd::NoGradGuard ng;
    fk::Tensor v = g.params().raw(0);
    v.copy_(fk::from_vector(std::vector<float>{1, 2, 3, 4}, fk::Dims{1, 4}));
  }
  // Refining: linear interpolation between cell centres, edges clamped.
  g.on_stage_start(nefi::Domain({8}));
  EXPECT_EQ(g.forward(nefi::Domain({8}), 1.0).at("x").to_vector<double>(),
            (std::vector<double>{1, 1.25, 1.75, 2.25, 2.75, 3.25, 3.75, 4}));
  EXPECT_THROW(g.forward(nefi::Domain({4}), 1.0), fk::Error);
  // Coarsening: block means.
  g.on_stage_start(nefi::Domain({4}));
  EXPECT_EQ(g.forward(nefi::Domain({4}), 1.0).at("x").to_vector<double>(),
            (std::vector<double>{1.125, 2, 3, 3.875}));
}

// 2-D refinement against the bilinear formula at each new cell centre.
TEST(NefiGridField, BilinearRefinementMatchesPointFormula) {
  const std::vector<float> v{0, 1, 5, 2, -1, 3};  // (2, 3)
  nefi::GridField g({2, 3}, {nefi::identity_head("x")});
  {
    fk::autograd::NoGradGuard ng;
    g.params().raw(0).copy_(fk::from_vector(v, fk::Dims{1, 2, 3}));
  }
  g.on_stage_start(nefi::Domain({4, 5}));
  const auto got = g.forward(nefi::Domain({4, 5}), 1.0).at("x").to_vector<double>();
  auto coord = [](int64_t j, int64_t n, int64_t m, int64_t& i0, int64_t& i1, double& t) {
    const double s = std::max(0.0, (j + 0.5) * n / static_cast<double>(m) - 0.5);
    i0 = std::min<int64_t>(static_cast<int64_t>(s), n - 1);
    i1 = std::min<int64_t>(i0 + 1, n - 1);
    t = s - static_cast<double>(i0);
  };
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 5; ++c) {
      int64_t r0, r1, c0, c1;
      double tr, tc;
      coord(r, 2, 4, r0, r1, tr);
      coord(c, 3, 5, c0, c1, tc);
      const double want = (1 - tr) * (1 - tc) * v[r0 * 3 + c0] + (1 - tr) * tc * v[r0 * 3 + c1] +
                          tr * (1 - tc) * v[r1 * 3 + c0] + tr * tc * v[r1 * 3 + c1];
      EXPECT_NEAR(got[r * 5 + c], want, 1e-6) << r << "," << c;
    }
}

}  // namespace

#include "fk/ops/linalg.h"
#include "nefi/field/dense.h"

namespace {

TEST(NefiDense, MatchesLinearTanhAndGradchecks) {
  fk::Generator g(5);
  fk::Tensor x = fk::randn({7, 5}, {fk::DType::F64}, &g),
             w = fk::randn({3, 5}, {fk::DType::F64}, &g), b = fk::randn({3}, {fk::DType::F64}, &g);
  auto ref = fk::tanh(fk::linear(x, w, b)).to_vector<double>();
  auto got = nefi::dense(x, w, b, nefi::DenseActivation::Tanh).to_vector<double>();
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(got[i], ref[i], 1e-12);
  auto xf = x.to(fk::DType::F32), wf = w.to(fk::DType::F32), bf = b.to(fk::DType::F32);
  auto got32 = nefi::dense(xf, wf, bf, nefi::DenseActivation::None).to_vector<double>();
  auto ref32 = fk::linear(x, w, b).to_vector<double>();
  for (size_t i = 0; i < ref32.size(); ++i) EXPECT_NEAR(got32[i], ref32[i], 1e-5);
  // Gradients for x (non-contiguous: a transposed view), w and b, every activation.
  fk::Tensor xt = fk::randn({5, 7}, {fk::DType::F64}, &g);
  for (auto act :
       {nefi::DenseActivation::None, nefi::DenseActivation::Tanh, nefi::DenseActivation::Relu}) {
    std::vector<fk::Tensor> in{xt.clone(), w.clone(), b.clone()};
    for (auto& t : in) t.set_requires_grad(true);
    EXPECT_EQ(fk::testing::gradcheck(
                  [act](const std::vector<fk::Tensor>& v) {
                    return nefi::dense(v[0].t(), v[1], v[2], act);
                  },
                  in),
              "");
  }
  EXPECT_THROW(nefi::dense(x, w.t(), b, nefi::DenseActivation::None), fk::Error);
  EXPECT_THROW(nefi::dense(x, wf, b, nefi::DenseActivation::None), fk::Error);
}

}  // namespace
