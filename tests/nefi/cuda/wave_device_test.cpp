// WaveOperator on a CUDA device against its CPU path: traces and velocity
// gradients of 1-, 2- and 3-D operators with every absorbing layer, f64 and
// f32, checkpointed and full-memory, equal to the CPU's generic build
// (FK_CPU_ISA=generic, no FMA) to the bit (the kernels repeat its loops
// product by product, wave.cu is built with --fmad=false), each run of
// leapfrog steps as one cooperative launch (NEFI_WAVE_FUSED=1) and as a
// launch per phase, with the fused launch counts; the device's discrete
// adjoint against central differences of device applies (the
// operator is nonlinear in c: the dot test of its linearisation); the
// velocity check on the device; the tables' cache; and a wave_fwi stage
// captured as one CUDA graph replaying its eager solve bitwise. The same for
// the photoacoustic map (WaveInitialConditionOperator, linear: a plain dot
// test) and a photoacoustic3d stage. Without a
// usable device the tests skip (scripts/gpu-check runs them on one).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/profile.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/cuda/stage_graph_replay.h"
#include "nefi/losses/band_limited_mse.h"
#include "nefi/operators/wave/wave_initial_condition.h"
#include "nefi/operators/wave/wave_operator.h"

namespace {

namespace wave = nefi::wave;
using nefi::WaveOperator;
using nefi::WaveOperatorConfig;
using nefi::cuda_test::expect_adjoint_on_device;
using nefi::cuda_test::expect_captured_stage_replays_eager;
using nefi::cuda_test::host;
using nefi::cuda_test::kGpu;
using nefi::cuda_test::KnobOverride;

struct Case {
  fk::Dims shape;
  wave::Absorbing absorbing;
  int order;
};

const std::vector<Case> kCases = {
    {{14, 12}, wave::Absorbing::kPml, 4},    {{12, 11}, wave::Absorbing::kSponge, 2},
    {{11, 12}, wave::Absorbing::kCerjan, 4}, {{7, 6, 6}, wave::Absorbing::kSponge, 2},
    {{24}, wave::Absorbing::kPml, 4},        {{10, 9}, wave::Absorbing::kNone, 4},
};

WaveOperatorConfig config_for(const Case& c, const std::string& grad_mode) {
  const int nd = static_cast<int>(c.shape.size());
  WaveOperatorConfig cfg;
  cfg.wave.extent.assign(nd, 1.0);
  cfg.wave.order = c.order;
  cfg.wave.absorbing = c.absorbing;
  cfg.wave.absorb_width = c.absorbing == wave::Absorbing::kNone ? 0.0 : 0.25;
  cfg.wave.c_max = 2.5;
  cfg.wave.dt_obs = 0.02;
  cfg.wave.n_t = 25;
  cfg.f0 = 4.0;
  cfg.sources = {std::vector<double>(nd, 0.3), std::vector<double>(nd, 0.62)};
  cfg.receivers = {std::vector<double>(nd, 0.8), std::vector<double>(nd, 0.15),
                   std::vector<double>(nd, 0.47)};
  cfg.receivers[1][0] = 0.9;
  cfg.grad_mode = grad_mode;
  return cfg;
}

fk::Tensor random_tensor(const fk::Dims& shape, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(shape.numel());
  for (double& x : v) x = u(rng);
  return fk::from_vector(v, shape);
}

// Each run of steps fused in one cooperative launch (NEFI_WAVE_FUSED=1) and
// launched per phase (0).
TEST(NefiWaveDevice, TracesAndGradientEqualTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  KnobOverride generic("FK_CPU_ISA", "generic");
  for (const Case& cs : kCases)
    for (const std::string mode : {"checkpoint", "full"}) {
      const WaveOperator op(config_for(cs, mode), cs.shape);
      const fk::Tensor c = random_tensor(cs.shape, 5, 1.6, 2.4);
      const fk::Tensor g = random_tensor(op.output_shape(cs.shape), 6, -1.0, 1.0);
      for (fk::DType dt : {fk::DType::F64, fk::DType::F32})
        for (const char* fused : {"1", "0"}) {
          KnobOverride runs("NEFI_WAVE_FUSED", fused);
          SCOPED_TRACE(op.fidelity_tag() + " " + cs.shape.str() + " " + mode + " " + fk::name(dt) +
                       " NEFI_WAVE_FUSED=" + fused);
          // Fresh leaves (c.to(dt) is c itself for f64: marking it would make
          // the f32 iteration's conversion a recorded non-leaf).
          fk::Tensor cc = c.detach().to(dt), cd = c.detach().to(dt).to(kGpu);
          cc.set_requires_grad(true);
          cd.set_requires_grad(true);
          const fk::Tensor yc = op.apply(cc), yd = op.apply(cd);
          ASSERT_EQ(yd.device(), kGpu);
          ASSERT_EQ(yd.dtype(), dt);
          ASSERT_EQ(yd.shape(), yc.shape());
          EXPECT_EQ(host(yd), host(yc));
          yc.backward(g.to(dt));
          yd.backward(g.to(dt).to(kGpu));
          ASSERT_EQ(cd.grad().device(), kGpu);
          ASSERT_EQ(cd.grad().dtype(), dt);
          EXPECT_EQ(host(cd.grad()), host(cc.grad()));
        }
    }
}

// Launches of an apply and of its backward, fused against per phase (the
// fills of the buffers and the velocity's kernels are the same in both).
// Per phase, a PML step is 3 kernels (the step, ψ, the sources) and each
// sample one; backward, each step is recomputed (3) and run in reverse (3),
// with one trace injection per sample but the first. Fused, the forward is
// one launch, and each checkpoint block two (its recomputation, its
// adjoint run).
TEST(NefiWaveDevice, FusedRunsAreOneLaunchEach) {
  NEFI_SKIP_WITHOUT_GPU();
  const Case cs = kCases[0];  // 2-D, PML
  const WaveOperator op(config_for(cs, "checkpoint"), cs.shape);
  const wave::WaveGrid& gr = op.geometry().grid;
  const int64_t steps = gr.n_steps(), every = op.checkpoint_every();
  ASSERT_EQ(steps, (gr.n_t - 1) * gr.substeps);
  ASSERT_GT(steps, 2 * every);  // several blocks
  const int64_t blocks = (steps + every - 1) / every;
  const fk::Tensor g = random_tensor(op.output_shape(cs.shape), 6, -1.0, 1.0).to(kGpu);
  auto launches = [&](const char* fused) {
    KnobOverride runs("NEFI_WAVE_FUSED", fused);
    fk::Tensor c = random_tensor(cs.shape, 5, 1.6, 2.4).to(kGpu);
    c.set_requires_grad(true);
    const int64_t before = fk::profile::counters().launches;
    const fk::Tensor y = op.apply(c);
    const int64_t forward = fk::profile::counters().launches - before;
    y.backward(g);
    return std::pair<int64_t, int64_t>{forward,
                                       fk::profile::counters().launches - before - forward};
  };
  launches("1");  // the first apply uploads the operator's tables
  const auto [fused_forward, fused_backward] = launches("1");
  const auto [phase_forward, phase_backward] = launches("0");
  EXPECT_EQ(phase_forward - fused_forward, 3 * steps + gr.n_t - 1);
  EXPECT_EQ(phase_backward - fused_backward, 6 * steps + gr.n_t - 1 - 2 * blocks);
}

// <J dc, y> = <dc, Jᵀ y> with Jᵀ y the device's discrete adjoint (vjp) and
// J dc central differences of device applies (f64, step 1e-5: truncation
// and rounding both near 1e-9 relative).
TEST(NefiWaveDevice, AdjointDotTestOnTheDevice) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const Case& cs : kCases) {
    const WaveOperator op(config_for(cs, "checkpoint"), cs.shape);
    SCOPED_TRACE(op.fidelity_tag() + " " + cs.shape.str());
    const fk::Tensor c = random_tensor(cs.shape, 7, 1.6, 2.4).to(kGpu);
    const fk::Tensor dc = random_tensor(cs.shape, 8, -0.5, 0.5).to(kGpu);
    const fk::Tensor y = random_tensor(op.output_shape(cs.shape), 9, -1.0, 1.0).to(kGpu);
    const fk::Tensor aty = op.vjp(c, y);
    ASSERT_EQ(aty.device(), kGpu);
    auto inner = [](const fk::Tensor& a, const fk::Tensor& b) {
      const std::vector<double> u = host(a), v = host(b);
      double s = 0;
      for (size_t i = 0; i < u.size(); ++i) s += u[i] * v[i];
      return s;
    };
    const double eps = 1e-5;
    const double jdc =
        (inner(op.apply(fk::add(c, dc, eps)), y) - inner(op.apply(fk::sub(c, dc, eps)), y)) /
        (2 * eps);
    ASSERT_NE(jdc, 0.0);  // else both sides vanish and the test cannot fail
    EXPECT_NEAR(inner(dc, aty), jdc, 1e-6 * std::abs(jdc));
  }
}

// A velocity above c_max, at or below 0, or non-finite is refused on the
// device as on the CPU (the step was sized for c_max).
TEST(NefiWaveDevice, BadVelocityIsAClearError) {
  NEFI_SKIP_WITHOUT_GPU();
  const Case& cs = kCases[0];
  const WaveOperator op(config_for(cs, "checkpoint"), cs.shape);
  const fk::Tensor ok = random_tensor(cs.shape, 5, 1.6, 2.4);
  EXPECT_THROW(op.apply(fk::add(ok, 1.0).to(kGpu)), fk::Error);
  EXPECT_THROW(op.apply(fk::sub(ok, 2.4).to(kGpu)), fk::Error);
  std::vector<double> v = ok.to_vector<double>();
  v[3] = std::nan("");
  EXPECT_THROW(op.apply(fk::from_vector(v, cs.shape).to(kGpu)), fk::Error);
  EXPECT_NO_THROW(op.apply(ok.to(kGpu)));
}

// The backward reads the velocity the forward ran with (an alias of a
// contiguous input): changed in place in between, the backward refuses
// rather than return the gradient at a velocity the traces never saw.
TEST(NefiWaveDevice, VelocityChangedInPlaceBeforeBackwardIsAClearError) {
  NEFI_SKIP_WITHOUT_GPU();
  const Case& cs = kCases[0];
  const WaveOperator op(config_for(cs, "checkpoint"), cs.shape);
  fk::Tensor c = random_tensor(cs.shape, 5, 1.6, 2.4).to(kGpu);
  c.set_requires_grad(true);
  const fk::Tensor y = op.apply(c);
  fk::Tensor alias = c.detach();
  fk::add_(alias, fk::full(cs.shape, 0.01, {fk::DType::F64, kGpu}));
  try {
    y.backward(fk::ones(y.shape(), {y.dtype(), kGpu}));
    FAIL() << "no error";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("modified by an in-place op"), std::string::npos)
        << e.what();
  }
}

// One upload per (resolution, device, dtype): the same buffers on a second
// call and from a copy of the operator, others for f32 and at another grid.
TEST(NefiWaveDevice, TablesAreCachedPerDeviceAndDtype) {
  NEFI_SKIP_WITHOUT_GPU();
  const Case& cs = kCases[0];
  const WaveOperator op(config_for(cs, "checkpoint"), cs.shape);
  const auto a = op.tables_on(kGpu, fk::DType::F64), b = op.tables_on(kGpu, fk::DType::F64);
  EXPECT_EQ(a.get(), b.get());
  const WaveOperator copy = op;
  EXPECT_EQ(copy.tables_on(kGpu, fk::DType::F64).get(), a.get());
  EXPECT_NE(op.tables_on(kGpu, fk::DType::F32).get(), a.get());
  const auto coarse = op.at_resolution({8, 8});
  EXPECT_NE(static_cast<const WaveOperator&>(*coarse).tables_on(kGpu, fk::DType::F64).get(),
            a.get());
  EXPECT_EQ(a->q2.device(), kGpu);
  EXPECT_EQ(a->wavelet.numel(), op.geometry().grid.n_steps());
  EXPECT_TRUE(op.graph_capturable());
  EXPECT_EQ(op.host_only_reason(), "");
}

// A neural wave_fwi stage on the device: the step (field, leapfrog forward
// with checkpoints, discrete adjoint, relative MSE, TV) captured as one CUDA
// graph replays bitwise the eager solve.
TEST(NefiWaveDevice, WaveFwiStageIsCapturedAndReplaysBitwise) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_captured_stage_replays_eager("wave_fwi",
                                      {{"n", "16"},
                                       {"n_sources", "2"},
                                       {"n_receivers", "8"},
                                       {"t_max", "0.4"},
                                       {"supersample", "1"}},
                                      "x");
}

// wave_fwi's fit_lo on the device: the filter made there, the denominator
// left there; value and trace gradient against the CPU (cuBLAS and OpenBLAS
// sum the filtering GEMM in their own orders: 1e-12 relative in f64).
TEST(NefiWaveDevice, BandLimitedFitMatchesTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  const fk::Dims shape{2, 3, 24};
  const fk::Tensor y = random_tensor(shape, 31, -1.0, 1.0);
  const fk::Tensor p = random_tensor(shape, 32, -1.0, 1.0);
  std::vector<double> mask(shape.numel(), 1.0);
  for (int64_t j = 0; j < 24; ++j) mask[(1 * 3 + 2) * 24 + j] = 0;  // one muted trace
  const auto loss = nefi::band_limited_mse_loss(0.01, 8.0);
  const nefi::Domain d({4, 4});
  auto run = [&](fk::Device dev, std::vector<double>& grad) {
    nefi::Measurement m;
    m.data = y.to(dev);
    m.mask = fk::from_vector(mask, shape).to(dev);
    fk::Tensor x = p.detach().to(dev);  // a fresh leaf: p.to(kCPU) is p itself
    x.set_requires_grad(true);
    nefi::LossContext c{nullptr, x, &m, &d, nullptr, 0, 0, 1.0};
    const fk::Tensor v = loss->forward(c);
    EXPECT_EQ(v.device(), dev);
    v.backward();
    grad = host(x.grad());
    return host(v)[0];
  };
  std::vector<double> gc, gd;
  const double vc = run(fk::kCPU, gc), vd = run(kGpu, gd);
  EXPECT_NEAR(vd, vc, 1e-12 * vc);
  nefi::cuda_test::expect_close(gd, gc, 1e-12, "band-limited gradient");
}

nefi::WaveInitialConditionConfig initial_config(wave::Absorbing a, double sensor_fc) {
  nefi::WaveInitialConditionConfig cfg;
  cfg.wave.extent = {1.0, 1.2};
  cfg.wave.order = 4;
  cfg.wave.absorbing = a;
  cfg.wave.absorb_width = 0.2;
  cfg.wave.c_max = 1.5;
  cfg.wave.dt_obs = 0.04;
  cfg.wave.n_t = 16;
  cfg.receivers = {{0.1, 0.3}, {0.1, 0.62}, {0.9, 0.95}};
  cfg.sensor_fc = sensor_fc;
  return cfg;
}

TEST(NefiWaveInitialDevice, TracesAndAdjointEqualTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  KnobOverride generic("FK_CPU_ISA", "generic");
  for (wave::Absorbing a : {wave::Absorbing::kPml, wave::Absorbing::kSponge})
    for (double fc : {0.0, 9.0}) {
      const nefi::WaveInitialConditionOperator op(initial_config(a, fc), {12, 14});
      const fk::Tensor p0 = random_tensor({12, 14}, 15, -1.0, 1.0);
      const fk::Tensor g = random_tensor(op.output_shape({12, 14}), 16, -1.0, 1.0);
      for (fk::DType dt : {fk::DType::F64, fk::DType::F32})
        for (const char* fused : {"1", "0"}) {
          KnobOverride runs("NEFI_WAVE_FUSED", fused);
          SCOPED_TRACE(op.fidelity_tag() + " fc " + std::to_string(fc) + " " + fk::name(dt) +
                       " NEFI_WAVE_FUSED=" + fused);
          fk::Tensor xc = p0.detach().to(dt), xd = p0.detach().to(dt).to(kGpu);  // fresh leaves
          xc.set_requires_grad(true);
          xd.set_requires_grad(true);
          const fk::Tensor yc = op.apply(xc), yd = op.apply(xd);
          ASSERT_EQ(yd.device(), kGpu);
          ASSERT_EQ(yd.dtype(), dt);
          EXPECT_EQ(host(yd), host(yc));
          yc.backward(g.to(dt));
          yd.backward(g.to(dt).to(kGpu));
          ASSERT_EQ(xd.grad().device(), kGpu);
          EXPECT_EQ(host(xd.grad()), host(xc.grad()));
        }
    }
}

TEST(NefiWaveInitialDevice, AdjointDotTestOnTheDevice) {
  NEFI_SKIP_WITHOUT_GPU();
  for (double fc : {0.0, 9.0}) {
    const nefi::WaveInitialConditionOperator op(initial_config(wave::Absorbing::kPml, fc),
                                                {12, 14});
    const fk::Tensor x = random_tensor({12, 14}, 17, -1.0, 1.0).to(kGpu);
    const fk::Tensor y = random_tensor(op.output_shape({12, 14}), 18, -1.0, 1.0).to(kGpu);
    expect_adjoint_on_device(op, x, y);
  }
}

// A neural photoacoustic3d stage (a coarse grid and a 6 x 6 array) on the
// device, captured as one CUDA graph, replays the eager solve bitwise.
TEST(NefiWaveInitialDevice, Photoacoustic3dStageIsCapturedAndReplaysBitwise) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_captured_stage_replays_eager(
      "photoacoustic3d",
      {{"grid", "[16, 16, 12]"}, {"sensor_grid", "[6, 6]"}, {"t_max", "4.0"}, {"supersample", "1"}},
      "x");
}

}  // namespace
