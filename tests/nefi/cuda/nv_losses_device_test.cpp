// The NV terms (losses/nv_losses.h) and the band-limited MSE
// (losses/band_limited_mse.h) on a CUDA device: value and gradient against
// the CPU in f64 and f32; recorded in a CUDA graph after one eager call (the
// one that makes the data-side constants, as a solver's warm-up step does)
// and replayed bitwise (no host read left in a step); degenerate data give a
// non-finite value instead of a host check; an nv_relaxometry stage with its
// neural loss set (log-MSE, noise map, R_ds, scale-free L1, L1, TV) and a
// toy1d stage with the band-limited, scaled relative and scale-free L1 terms
// captured whole and replayed bitwise against eager steps. Without a usable
// device the tests skip (scripts/gpu-check runs them on one).
//
// Tolerances (u = 2^-24 for f32, 2^-53 for f64). The device's reductions
// (fk's sum, mean and amax, cuBLAS's products for the low-pass) add their n
// terms in another order than the CPU's; a recursive sum of n terms of one
// sign is within n u of the exact one (Higham, Accuracy and Stability, Eq.
// 4.4) and each term is a few operations on both sides: values agree to
// (4 n + 64) u relative, gradients (elementwise, through those sums) to
// (2 n + 256) u of the largest entry, neither below 1e-12. TF32 is off.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fk/cuda/graph.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/cuda/stage_graph_replay.h"
#include "nefi/field/heads.h"
#include "nefi/field/neural_field.h"
#include "nefi/instances/instance.h"
#include "nefi/losses/band_limited_mse.h"
#include "nefi/losses/nv_losses.h"

namespace {

using nefi::cuda_test::kGpu;

struct Case {
  std::string label;
  nefi::LossPtr loss;
  bool of_rho;  // differentiated in the field rho, else in the prediction
  bool masked;  // the observation carries a mask (the band-limited MSE reads it)
};

std::vector<Case> cases() {
  return {
      {"noise_map", nefi::noise_map_loss(), false, false},
      {"direct_density", nefi::direct_density_loss(), true, false},
      {"normalized_l1", nefi::normalized_l1_loss(), true, false},
      {"scaled_relative_mse", nefi::scaled_relative_mse_loss(), false, false},
      {"band_limited", nefi::band_limited_mse_loss(0.01, 9.0), false, false},
      {"band_limited_masked", nefi::band_limited_mse_loss(0.01, 9.0), false, true},
  };
}

const fk::Dims kSpectra{5, 9, 12};

// Spectra, a density and a trace mask (one trace muted), on `device` in dt.
struct Inputs {
  nefi::FieldMap fields;
  nefi::Measurement obs;
  fk::Tensor pred;
  const fk::Tensor& x(const Case& c) const { return c.of_rho ? fields.at("rho") : pred; }
};

Inputs inputs(const Case& c, fk::DType dt, fk::Device device, double data_scale = 1.0) {
  fk::Generator g(17);
  Inputs s;
  const fk::Tensor y = fk::uniform(kSpectra, 0.2, 1.5, {fk::DType::F64}, &g);
  s.obs.data = fk::mul(y, data_scale).to(dt).to(device);
  s.pred = fk::uniform(kSpectra, 0.1, 2.0, {fk::DType::F64}, &g).to(dt).to(device);
  s.fields["rho"] = fk::uniform({9, 12}, 0.0, 1.2, {fk::DType::F64}, &g).to(dt).to(device);
  if (c.masked) {
    std::vector<double> w(static_cast<size_t>(kSpectra.numel()), 1.0);
    for (int64_t t = 0; t < kSpectra[2]; ++t) w[static_cast<size_t>(3 * kSpectra[2] + t)] = 0;
    s.obs.mask = fk::from_vector(w, kSpectra).to(dt).to(device);
  }
  s.fields["rho"].set_requires_grad(true);
  s.pred.set_requires_grad(true);
  return s;
}

fk::Tensor forward_backward(const Case& c, Inputs& s) {
  nefi::LossContext ctx{&s.fields, s.pred, &s.obs, nullptr, nullptr, 0, 0, 1.0};
  const fk::Tensor v = c.loss->forward(ctx);
  v.backward(fk::ones(v.shape(), {v.dtype(), v.device()}));
  return v;
}

struct Evaluation {
  std::vector<double> value, grad;
};

Evaluation evaluate(const Case& c, Inputs& s) {
  s.x(c).set_grad(fk::Tensor());
  const fk::Tensor v = forward_backward(c, s);
  EXPECT_EQ(v.device(), s.pred.device());
  EXPECT_EQ(v.dtype(), s.pred.dtype());
  return {v.to(fk::kCPU).to_vector<double>(), s.x(c).grad().to(fk::kCPU).to_vector<double>()};
}

// On a stream of its own, as a solver's StepGraph does: one eager evaluation
// (the warm-up: it makes the data-side constants), then one recorded in a
// stream capture (which throws on a host read or synchronization) and
// replayed, its value and gradient copied into buffers made before it.
struct EagerAndReplay {
  Evaluation eager, replay;
};

EagerAndReplay evaluate_warm_then_captured(const Case& c, Inputs& s) {
  const fk::Tensor& x = s.x(c);
  fk::cuda::synchronize(0);  // the uploads ran on the previous stream
  void* const before = fk::cuda::current_stream(0);
  void* const stream = fk::cuda::create_stream(0);
  fk::cuda::set_current_stream(0, stream);
  EagerAndReplay out;
  out.eager = evaluate(c, s);
  x.set_grad(fk::Tensor());
  fk::Tensor value = fk::empty(fk::Dims{}, {s.pred.dtype(), kGpu});
  fk::Tensor grad = fk::empty(x.shape(), {x.dtype(), kGpu});
  fk::cuda::synchronize(0);
  fk::cuda::GraphExec graph;
  std::string failure;
  fk::cuda::begin_capture(0);
  try {
    {
      const fk::Tensor v = forward_backward(c, s);
      value.copy_(v.detach().reshape(value.shape()));
      grad.copy_(x.grad());
      x.set_grad(fk::Tensor());
    }
    graph = fk::cuda::end_capture(0);
  } catch (const std::exception& e) {
    fk::cuda::abort_capture(0);
    failure = e.what();
  }
  if (failure.empty()) {
    fk::cuda::launch_graph(graph);
    fk::cuda::synchronize(0);
    fk::cuda::destroy_graph(graph);
  }
  fk::cuda::set_current_stream(0, before);
  fk::cuda::destroy_stream(0, stream);
  EXPECT_EQ(failure, "") << "the capture failed";
  if (failure.empty())
    out.replay = {value.to(fk::kCPU).to_vector<double>(), grad.to(fk::kCPU).to_vector<double>()};
  return out;
}

TEST(NefiNvLossesDevice, ValuesAndGradientsMatchTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  nefi::cuda_test::NoTf32 no_tf32;
  for (const Case& c : cases())
    for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
      SCOPED_TRACE(c.label + " " + fk::name(dt));
      Inputs on_cpu = inputs(c, dt, fk::kCPU), on_gpu = inputs(c, dt, kGpu);
      const Evaluation cpu = evaluate(c, on_cpu), gpu = evaluate(c, on_gpu);
      const double u = dt == fk::DType::F64 ? 0x1p-53 : 0x1p-24;
      const double n = static_cast<double>(kSpectra.numel());
      ASSERT_EQ(gpu.value.size(), 1u);
      EXPECT_NEAR(gpu.value[0], cpu.value[0],
                  std::max(1e-12, (4 * n + 64) * u) * std::abs(cpu.value[0]));
      ASSERT_EQ(gpu.grad.size(), cpu.grad.size());
      double scale = 0, worst = 0;
      for (double v : cpu.grad) scale = std::max(scale, std::abs(v));
      for (size_t i = 0; i < cpu.grad.size(); ++i)
        worst = nefi::cuda_test::nan_max(worst, std::abs(gpu.grad[i] - cpu.grad[i]));
      EXPECT_LE(worst, std::max(1e-12, (2 * n + 256) * u) * scale) << "gradient";
      // A second call, from the made constants, gives the same bits.
      const Evaluation again = evaluate(c, on_gpu);
      EXPECT_EQ(again.value, gpu.value);
      EXPECT_EQ(again.grad, gpu.grad);
    }
}

TEST(NefiNvLossesDevice, CapturedAfterTheWarmUpCallAndReplayedBitwise) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const Case& c : cases())
    for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
      SCOPED_TRACE(c.label + " " + fk::name(dt));
      Inputs s = inputs(c, dt, kGpu);
      const EagerAndReplay r = evaluate_warm_then_captured(c, s);
      EXPECT_EQ(r.replay.value, r.eager.value);
      EXPECT_EQ(r.replay.grad, r.eager.grad);
    }
}

// All-zero data: the CPU throws (nv_losses_test.cpp, band_limited_mse_test.cpp);
// the device reads nothing back and gives a non-finite value.
TEST(NefiNvLossesDevice, DegenerateDataGiveANonFiniteValue) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const Case& c : cases()) {
    if (c.label == "normalized_l1") continue;  // reads no data
    SCOPED_TRACE(c.label);
    Inputs s = inputs(c, fk::DType::F64, kGpu, 0.0);
    nefi::LossContext ctx{&s.fields, s.pred, &s.obs, nullptr, nullptr, 0, 0, 1.0};
    EXPECT_FALSE(std::isfinite(c.loss->forward(ctx).to(fk::kCPU).item()));
  }
}

// nv_relaxometry's neural loss set in a captured stage, the field rho alone
// (the operator takes its default Larmor value); the instance's own field,
// with its omega_L head, is the next test.
TEST(NefiNvLossesDevice, AnNvStageWithItsLossesIsCaptured) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::cuda_test::ProblemEdit rho_only = [](const nefi::Params& p, nefi::ProblemSetup& su) {
    su.problem.field = std::make_shared<nefi::NeuralField>(
        2, std::vector<nefi::HeadPtr>{nefi::gated_softplus_head("rho")},
        nefi::neural_field_config_from(p), 3);
    su.problem.postprocess.clear();
    std::vector<std::string> names;
    for (const auto& t : su.problem.losses.terms()) names.push_back(t.loss->name());
    for (const char* want : {"log_mse", "noise_map", "direct_density", "sparsity"})
      ASSERT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  };
  nefi::cuda_test::expect_captured_stage_replays_eager(
      "nv_relaxometry", {{"n", "24"}, {"n_freq", "12"}}, "rho", rho_only);
}

TEST(NefiNvLossesDevice, AToy1dStageWithTheBandLimitedAndScaledTermsIsCaptured) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::cuda_test::ProblemEdit add_terms = [](const nefi::Params&, nefi::ProblemSetup& su) {
    su.problem.losses.add(nefi::band_limited_mse_loss(0.01, 9.0, "fit_lo"), 0.5);
    su.problem.losses.add(nefi::scaled_relative_mse_loss("scaled"), 0.5);
    su.problem.losses.add(nefi::normalized_l1_loss("x", "sparsity"), 1e-3);
  };
  nefi::cuda_test::expect_captured_stage_replays_eager("toy1d", {{"n", "64"}}, "x", add_terms);
}

// nv_relaxometry as set up, its omega_L head (support_masked, thresholded at
// tau max(rho) on the device) included: the eager steps read nothing back
// under FK_SYNC_DEBUG=error (a host read in a marked step throws), and the
// stage is captured and replays the eager one bitwise.
TEST(NefiNvLossesDevice, AnNvStageWithItsOmegaLHeadReadsNothingBack) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::cuda_test::KnobOverride error("FK_SYNC_DEBUG", "error");
  nefi::cuda_test::expect_captured_stage_replays_eager("nv_relaxometry",
                                                       {{"n", "24"}, {"n_freq", "12"}}, "rho");
}

}  // namespace
