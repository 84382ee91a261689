// Operator::prepare_tables on a CUDA device: after it, an operator's forward
// and gradient can be recorded in a CUDA graph capture, i.e. they copy
// nothing from the host (a capture refuses such a copy, and a table made
// inside one would be one). As in a solve, an eager step on the capture's
// stream comes first (cuBLAS bound there, cuFFT plans made), here by a twin
// operator so that op's own tables come from prepare_tables alone. Without it, an operator whose
// constant lives on the host (the pointwise weight map) fails the capture: the failure the solver's
// call at every stage start prevents. Without a usable device the tests skip (scripts/gpu-check
// runs them on one).
#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "fk/cuda/graph.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/instances/instance.h"
#include "nefi/operators/angular_spectrum.h"
#include "nefi/operators/depth_compensated.h"
#include "nefi/operators/elliptic/diffuse_optical.h"
#include "nefi/operators/elliptic/elliptic_operator.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/operators/magnetostatics.h"
#include "nefi/operators/nv_relaxometry.h"
#include "nefi/operators/pointwise.h"
#include "nefi/operators/poisson_dst.h"
#include "nefi/operators/radon.h"
#include "nefi/operators/reaction_diffusion/reaction_diffusion_operator.h"
#include "nefi/operators/scattering.h"
#include "nefi/operators/wave/wave_initial_condition.h"
#include "nefi/operators/wave/wave_operator.h"

namespace {

using nefi::cuda_test::kGpu;

// Builds one operator; called twice, it gives two with tables of their own.
using MakeOperator = std::function<nefi::OperatorPtr()>;

// op's forward and backward at x (f64, host values) recorded in a capture on
// a stream of its own; "" when the capture ended cleanly, else why not.
// First, on that stream, one eager forward and backward of `twin` (built as
// op was, with its own tables): the solver's warm-up step, which binds cuBLAS
// to the stream and makes the cuFFT plans (neither can happen inside a
// capture: fk refuses the first, the second is a cudaMalloc) without making
// any of op's tables.
std::string capture_error(const nefi::Operator& op, const nefi::Operator& twin,
                          const fk::Tensor& x_host) {
  const int dev = kGpu.index;
  fk::Tensor x = x_host.to(kGpu);
  x.set_requires_grad(true);
  fk::Tensor xw = x_host.to(kGpu);
  xw.set_requires_grad(true);
  fk::cuda::synchronize(dev);
  void* previous = fk::cuda::current_stream(dev);
  void* stream = fk::cuda::create_stream(dev);
  fk::cuda::set_current_stream(dev, stream);
  std::string error;
  try {
    {
      const fk::Tensor warm = fk::sum(twin.apply(xw));
      warm.backward(fk::ones(fk::Dims{}, {warm.dtype(), kGpu}));
    }
    fk::cuda::synchronize(dev);
    fk::cuda::begin_capture(dev);
    {  // everything made inside dies inside (the graph owns it)
      const fk::Tensor total = fk::sum(op.apply(x));
      total.backward(fk::ones(fk::Dims{}, {total.dtype(), kGpu}));
      x.set_grad(fk::Tensor());
    }
    fk::cuda::GraphExec g = fk::cuda::end_capture(dev);
    // Launched once before it goes: what the capture allocated and op keeps
    // (the elliptic solve's warm-start buffers) exists only once its graph
    // has run, and op frees it later.
    fk::cuda::launch_graph(g);
    fk::cuda::synchronize(dev);
    fk::cuda::destroy_graph(g);
  } catch (const std::exception& e) {
    fk::cuda::abort_capture(dev);
    error = e.what();
  }
  fk::cuda::synchronize(dev);
  fk::cuda::set_current_stream(dev, previous);
  fk::cuda::destroy_stream(dev, stream);
  return error;
}

void expect_captures_after_prepare(const MakeOperator& make, const fk::Tensor& x_host) {
  const nefi::OperatorPtr op = make(), twin = make();
  op->prepare_tables(kGpu, x_host.dtype());
  EXPECT_EQ(capture_error(*op, *twin, x_host), "") << op->kind();
}

fk::Tensor randn(const fk::Dims& shape, uint64_t seed) {
  fk::Generator gen(seed);
  return fk::randn(shape, {fk::DType::F64}, &gen);
}

// Values in [lo, hi) (f64, host): a velocity, a rate, a conductivity.
fk::Tensor uniform(const fk::Dims& shape, double lo, double hi, uint64_t seed) {
  fk::Generator gen(seed);
  return fk::uniform(shape, lo, hi, {fk::DType::F64}, &gen);
}

TEST(NefiPrepareTablesDevice, WithoutItAHostWeightMapFailsTheCapture) {
  NEFI_SKIP_WITHOUT_GPU();
  fk::Generator gen(3);
  const MakeOperator make = [&] {
    return std::make_shared<nefi::PointwiseOperator>(
        fk::uniform({6, 5}, 0.5, 2.0, {fk::DType::F64}, &gen));
  };
  const fk::Tensor x = randn({6, 5}, 1);
  EXPECT_NE(capture_error(*make(), *make(), x), "");
  expect_captures_after_prepare(make, x);
}

TEST(NefiPrepareTablesDevice, EveryTableIsMadeBeforeTheCapture) {
  NEFI_SKIP_WITHOUT_GPU();
  fk::Generator gen(7);
  {
    expect_captures_after_prepare(
        [&] {
          return std::make_shared<nefi::RadonOperator>(nefi::Domain({10, 10}, {1.2, 1.2}),
                                                       nefi::RadonGeometry{5, 2.0, 2, 1});
        },
        randn({10, 10}, 2));
  }
  {
    expect_captures_after_prepare(
        [&] {
          return std::make_shared<nefi::PoissonOperator>(nefi::Domain({12, 9}, {1.0, 0.75}),
                                                         nefi::PoissonSpectrum::kContinuous, 0.8);
        },
        randn({2, 12, 9}, 3));
  }
  {
    nefi::ScatteringGeometry geometry;
    geometry.n_angles = 4;
    geometry.n_receivers = 8;
    expect_captures_after_prepare(
        [&] {
          return std::make_shared<nefi::BornOperator>(nefi::Domain({8, 8}, {2.0, 2.0}), geometry);
        },
        randn({8, 8}, 4));
  }
  {
    expect_captures_after_prepare(
        [&] {
          return std::make_shared<nefi::HolographyOperator>(nefi::Domain({12, 10}, {6.0, 5.0}),
                                                            std::vector<double>{0.0, 20.0},
                                                            nefi::PropagationOptions{});
        },
        randn({12, 10}, 5));
  }
  {
    expect_captures_after_prepare(
        [&] {
          return std::make_shared<nefi::MagnetostaticsOperator>(nefi::Domain({10, 12}, {5.0, 6.0}),
                                                                nefi::MagnetostaticsOptions{});
        },
        randn({10, 12}, 6));
  }
  {
    expect_captures_after_prepare(
        [&] {
          return std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(0.05),
                                                        nefi::Domain({40, 36}));
        },
        randn({40, 36}, 7));
  }
  {
    nefi::NVPhysics phys;
    for (int f = 0; f < 5; ++f) phys.freqs.push_back(1.0 + 0.5 * f);
    phys.z0 = 25;
    expect_captures_after_prepare(
        [&] {
          return std::make_shared<nefi::NVOperator>(nefi::Domain({9, 12}, {180.0, 240.0}), phys,
                                                    nefi::NVMode::kF2);
        },
        fk::uniform({9, 12}, 0.0, 1.0, {fk::DType::F64}, &gen));
  }
  {
    const fk::Dims shape{4, 3, 5};
    nefi::DepthCompensation o;
    o.gamma = 1.0;
    expect_captures_after_prepare(
        [&] {
          // an inner operator per build: the twin shares no table with op
          auto inner = std::make_shared<nefi::PointwiseOperator>(
              fk::uniform(shape, 0.2, 1.0, {fk::DType::F64}, &gen));
          return std::make_shared<nefi::DepthCompensatedOperator>(inner, shape, o);
        },
        randn(shape, 8));
  }
}

// The solvers that gained prepare_tables: the wave equation (velocity and
// photoacoustic maps), Gray-Scott's checkpointed solve, the elliptic solve
// (darcy-like and diffuse optical) and the eit instance's operator.
TEST(NefiPrepareTablesDevice, EverySolverTableIsMadeBeforeTheCapture) {
  NEFI_SKIP_WITHOUT_GPU();
  {
    nefi::WaveOperatorConfig cfg;
    cfg.wave.extent = {1.0, 1.0};
    cfg.wave.absorbing = nefi::wave::Absorbing::kPml;
    cfg.wave.absorb_width = 0.25;
    cfg.wave.c_max = 2.5;
    cfg.wave.dt_obs = 0.02;
    cfg.wave.n_t = 20;
    cfg.f0 = 4.0;
    cfg.sources = {{0.3, 0.3}, {0.62, 0.62}};
    cfg.receivers = {{0.8, 0.8}, {0.9, 0.15}};
    cfg.grad_mode = "checkpoint";
    expect_captures_after_prepare(
        [&] {
          return std::make_shared<nefi::WaveOperator>(cfg, fk::Dims{12, 11});
        },
        uniform({12, 11}, 1.6, 2.4, 9));
  }
  {
    nefi::WaveInitialConditionConfig cfg;
    cfg.wave.extent = {1.0, 1.2};
    cfg.wave.absorbing = nefi::wave::Absorbing::kPml;
    cfg.wave.absorb_width = 0.2;
    cfg.wave.c_max = 1.5;
    cfg.wave.dt_obs = 0.04;
    cfg.wave.n_t = 16;
    cfg.receivers = {{0.1, 0.3}, {0.9, 0.95}};
    cfg.sensor_fc = 9.0;
    expect_captures_after_prepare(
        [&] {
          return std::make_shared<nefi::WaveInitialConditionOperator>(cfg, fk::Dims{12, 14});
        },
        randn({12, 14}, 10));
  }
  {
    nefi::ReactionDiffusionOptions o;
    o.obs_times = {2, 5};
    o.grad_mode = nefi::RDGradMode::kCheckpoint;
    o.field_max = 0.07;
    expect_captures_after_prepare(
        [&] {
          return std::make_shared<nefi::ReactionDiffusionOperator>(
              nefi::Domain({12, 9}, {0.24, 0.18}), o);
        },
        uniform({12, 9}, 0.02, 0.06, 11));
  }
  nefi::EllipticOperatorOptions eo;
  eo.boundary = "neumann";
  eo.solve.cg.tol = 1e-10;
  eo.warm_start = true;
  {
    eo.sigma_transform = "exp";
    const nefi::Domain dom({12, 10}, {1.0, 0.8});
    expect_captures_after_prepare(
        [&] {
          return std::make_shared<nefi::EllipticOperator>(
              dom,
              [](const nefi::Domain& d) {
                return randn({3, d.shape()[0], d.shape()[1]}, 12);
              },
              [](const nefi::Domain& d) {
                return randn({5, d.numel()}, 13);
              },
              eo);
        },
        uniform(dom.shape(), 0.2, 1.0, 14));
  }
  {
    eo.sigma_transform = "identity";
    nefi::DiffuseOpticalOptions o;
    o.reference_absorption = 0.05;
    o.elliptic = eo;
    const nefi::Domain dom({8, 7, 5}, {1.0, 1.0, 1.0});
    expect_captures_after_prepare(
        [&] {
          return std::make_shared<nefi::DiffuseOpticalOperator>(
              dom,
              [](const nefi::Domain& d) {
                return uniform({2, d.shape()[0], d.shape()[1], d.shape()[2]}, 0.0, 1.0, 15);
              },
              [](const nefi::Domain& d) { return uniform(d.shape(), 0.05, 0.25, 16); },
              [](const nefi::Domain& d) {
                return uniform({6, d.numel()}, 0.0, 1.0, 17);
              },
              o);
        },
        uniform(dom.shape(), 0.025, 0.125, 18));
  }
  {
    auto inst = nefi::find_instance("eit");
    nefi::Params p = inst->default_config();
    for (auto [key, value] : std::vector<std::pair<const char*, const char*>>{
             {"n", "16"}, {"n_patterns", "4"}, {"electrodes", "12"}, {"linear_solver", "cg"}})
      p.set(key, value);
    expect_captures_after_prepare([&] { return inst->setup(p, "grid", 0).value().problem.op; },
                                  uniform({16, 16}, 0.3, 2.3, 19));
  }
}

}  // namespace
