// batch_invert on a CUDA device (BatchOptions::device): a batch of 3 toy1d
// (neural fields; grid fields in the first and the captured-vs-eager
// checks) and of 3 deconvolution problems against (a) the same batch on the CPU
// and (b) each problem solved alone by a Solver on the device, and that a step reads the host once
// (FK_SYNC_DEBUG=error), and that the step captured as one CUDA graph per stage and replayed equals
// the eager step bit for bit (the same kernels on the same buffers). Without a usable device the
// tests skip (scripts/gpu-check runs them on one).
//
// Tolerances. (a) CPU batch vs device batch: f32 round-off from the first
// step (the CPU's batched MLP against cuBLAS, the CPU FFT against cuFFT, f64
// host sums against device reductions), amplified by Adam's normalised steps
// on near-zero gradients: 1e-3 relative on every loss of the history and 1e-3
// of the field's range on the final field, as the single-problem device
// solve's test allows (solver_device_test.cpp). (b) device batch vs device
// solve alone: the same heads and Adam kernel, but the batch's fields are one
// grouped MLP (cuBLAS strided-batched GEMMs, grouped_mlp.h) where the Solver
// runs the fused MLP kernel (its own f32 sum order), besides the operator on
// (3, *shape) against (*shape) and the losses' batched row reductions: f32
// round-off from the first step again, so (a)'s 1e-3.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "fk/amp.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/test_util.h"
#include "nefi/cuda/device_run.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/instances/instance.h"
#include "nefi/losses/data_losses.h"
#include "nefi/solve/batch.h"
#include "nefi/solve/batch_test_setups.h"
#include "nefi/solve/solver.h"
#include "nefi/solve/split_rows.h"

namespace {

using nefi::cuda_test::NoTf32;

nefi::Params params(const std::string& instance, const std::string& activation = "") {
  nefi::Params p = nefi::batch_test::smoke_params(
      instance, instance == "toy1d" ? std::vector<double>{15, 15} : std::vector<double>{10, 10});
  if (!activation.empty()) p.set("activation", activation);
  return p;
}

const std::vector<uint64_t> kSeeds{0, 1, 2};

std::vector<nefi::Result> batch(const std::string& instance, fk::Device device,
                                std::optional<bool> cuda_graph = std::nullopt,
                                const std::string& method = "neural",
                                const std::string& activation = "") {
  const nefi::batch_test::Setups s =
      nefi::batch_test::setups(instance, params(instance, activation), kSeeds, method);
  nefi::BatchOptions bo;
  bo.seeds = kSeeds;
  bo.device = device;
  bo.cuda_graph = cuda_graph;
  return nefi::batch_invert(s.problems, s.curriculum, bo);
}

nefi::Result alone(const std::string& instance, uint64_t seed, fk::Device device,
                   const std::string& method = "neural", const std::string& activation = "") {
  auto su = nefi::find_instance(instance)->setup(params(instance, activation), method, seed);
  nefi::SolverOptions so;
  so.seed = seed;
  so.device = device;
  return nefi::Solver(su->problem, su->curriculum, so).run();
}

// Every history row and the final field of `got` against `want`.
void expect_close(const nefi::Result& want, const nefi::Result& got, double tol) {
  ASSERT_EQ(want.stages.size(), got.stages.size());
  for (size_t s = 0; s < want.stages.size(); ++s) {
    EXPECT_EQ(want.stages[s].stop, got.stages[s].stop);
    EXPECT_EQ(want.stages[s].steps, got.stages[s].steps);
  }
  ASSERT_EQ(want.history.rows.size(), got.history.rows.size());
  for (size_t r = 0; r < want.history.rows.size(); ++r) {
    const auto& a = want.history.rows[r];
    const auto& b = got.history.rows[r];
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < 5; ++k) EXPECT_EQ(a[k], b[k]) << "row " << r << " column " << k;
    for (size_t k = 5; k < a.size(); ++k)
      EXPECT_NEAR(b[k], a[k], tol * std::abs(a[k]) + 1e-12) << "row " << r << " column " << k;
  }
  EXPECT_TRUE(got.fields.at("x").device().is_cpu());
  const auto x = want.fields.at("x").to_vector<double>();
  const auto y = got.fields.at("x").to_vector<double>();
  ASSERT_EQ(x.size(), y.size());
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  EXPECT_LE(nefi::cuda_test::max_abs_diff(x, y), tol * (*hi - *lo));
  EXPECT_EQ(got.error, "");
}

void expect_device_batch_matches(const std::string& instance, const std::string& method = "neural",
                                 const std::string& activation = "") {
  NoTf32 no_tf32;
  const auto cpu = batch(instance, fk::kCPU, std::nullopt, method, activation);
  const auto gpu = batch(instance, fk::cuda_device(0), std::nullopt, method, activation);
  ASSERT_EQ(gpu.size(), kSeeds.size());
  for (size_t b = 0; b < kSeeds.size(); ++b) {
    SCOPED_TRACE(instance + " " + method + " problem " + std::to_string(b));
    EXPECT_EQ(gpu[b].batch_size, 3);
    expect_close(cpu[b], gpu[b], 1e-3);
    // The run learned something.
    EXPECT_LT(gpu[b].history.rows.back()[5], gpu[b].history.rows.front()[5]);
    expect_close(alone(instance, kSeeds[b], fk::cuda_device(0), method, activation), gpu[b], 1e-3);
  }
}

TEST(NefiBatchDevice, Toy1dBatchOnTheDeviceMatchesCpuBatchAndDeviceSolves) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_device_batch_matches("toy1d");
}

// Grid fields: the (3, P) block's values, resampled on the host at the
// second stage's start (a finer grid).
TEST(NefiBatchDevice, Toy1dGridBatchOnTheDeviceMatchesCpuBatchAndDeviceSolves) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_device_batch_matches("toy1d", "grid");
}

// A gelu trunk: the grouped MLP's unary after each product, its derivative
// from the saved input.
TEST(NefiBatchDevice, Toy1dGeluBatchOnTheDeviceMatchesCpuBatchAndDeviceSolves) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_device_batch_matches("toy1d", "neural", "gelu");
}

TEST(NefiBatchDevice, DeconvolutionBatchOnTheDeviceMatchesCpuBatchAndDeviceSolves) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_device_batch_matches("deconvolution");
}

// A step's only host read is the one gathered copy after the backward:
// under FK_SYNC_DEBUG=error any other read of a device tensor inside a step
// (the loop marks the step with a DeviceStepScope) throws, and the run
// equals the unmarked one bitwise.
TEST(NefiBatchDevice, Toy1dBatchStepsReadTheHostOncePerStep) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  const auto plain = batch("toy1d", fk::cuda_device(0));
  std::vector<nefi::Result> marked;
  {
    const nefi::cuda_test::KnobOverride error("FK_SYNC_DEBUG", "error");
    ASSERT_NO_THROW(marked = batch("toy1d", fk::cuda_device(0)));
  }
  ASSERT_EQ(marked.size(), plain.size());
  for (size_t b = 0; b < plain.size(); ++b) {
    EXPECT_EQ(marked[b].history.rows, plain[b].history.rows) << "problem " << b;
    EXPECT_EQ(marked[b].fields.at("x").to_vector<float>(),
              plain[b].fields.at("x").to_vector<float>());
  }
}

// Captured (the default) against eager (BatchOptions::cuda_graph false): every
// history value and final cell bitwise, and each stage's note says how its
// steps ran, as a Solver's device stage reports it.
void expect_captured_equals_eager(const std::string& instance,
                                  const std::string& method = "neural") {
  NoTf32 no_tf32;
  const auto captured = batch(instance, fk::cuda_device(0), true, method);
  const auto eager = batch(instance, fk::cuda_device(0), false, method);
  ASSERT_EQ(captured.size(), eager.size());
  for (size_t b = 0; b < captured.size(); ++b) {
    SCOPED_TRACE(instance + " " + method + " problem " + std::to_string(b));
    nefi::cuda_test::expect_bitwise_equal(captured[b], eager[b], "x");
    for (size_t s = 0; s < captured[b].stages.size(); ++s) {
      const nefi::StageResult& c = captured[b].stages[s];
      const nefi::StageResult& e = eager[b].stages[s];
      EXPECT_GT(c.graph_steps, 0) << c.device_note;
      EXPECT_NE(c.device_note.find("CUDA graph: "), std::string::npos) << c.device_note;
      EXPECT_EQ(e.graph_steps, 0);
      EXPECT_NE(
          e.device_note.find("CUDA graph off: NEFI_CUDA_GRAPH=0 or BatchOptions::cuda_graph off"),
          std::string::npos)
          << e.device_note;
    }
  }
}

TEST(NefiBatchDevice, Toy1dCapturedBatchEqualsTheEagerBatchBitwise) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_captured_equals_eager("toy1d");
}

TEST(NefiBatchDevice, Toy1dGridCapturedBatchEqualsTheEagerBatchBitwise) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_captured_equals_eager("toy1d", "grid");
}

TEST(NefiBatchDevice, DeconvolutionCapturedBatchEqualsTheEagerBatchBitwise) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_captured_equals_eager("deconvolution");
}

// Degenerate observations in one problem of a device batch: the device
// losses read nothing back, so without the setup check (the CPU batch's,
// tests/nefi/solve/batch_device_check_test.cpp) that problem's row would be
// NaN. An all-zero mask under Huber, and data without energy under relative
// MSE, each refused naming the problem.
TEST(NefiBatchDevice, DegenerateObservationsAreRefusedNamingTheProblem) {
  NEFI_SKIP_WITHOUT_GPU();
  nefi::batch_test::Setups s = nefi::batch_test::setups("toy1d", params("toy1d"), kSeeds);
  nefi::BatchOptions bo;
  bo.device = fk::cuda_device(0);
  for (size_t b = 0; b < s.problems.size(); ++b) {
    nefi::Measurement& m = s.problems[b].measurement;
    m.mask = b == 2 ? fk::zeros(m.data.shape(), {m.data.dtype()})
                    : fk::ones(m.data.shape(), {m.data.dtype()});
    s.problems[b].losses = nefi::LossSet();
    s.problems[b].losses.add(nefi::huber_loss(), 1.0);
  }
  EXPECT_EQ(fk::test::error_of([&] { nefi::batch_invert(s.problems, s.curriculum, bo); }),
            "nefi::batch_invert: expected a mask with at least one observed cell, got an "
            "all-zero mask in problem 2");
  for (size_t b = 0; b < s.problems.size(); ++b) {
    nefi::Measurement& m = s.problems[b].measurement;
    m.mask = fk::Tensor();
    if (b == 1) m.data = fk::zeros(m.data.shape(), {m.data.dtype()});
    s.problems[b].losses = nefi::LossSet();
    s.problems[b].losses.add(nefi::relative_mse_loss(), 1.0);
  }
  EXPECT_EQ(fk::test::error_of([&] { nefi::batch_invert(s.problems, s.curriculum, bo); }),
            "nefi::RelativeMSE: expected observations with non-zero energy, got all zeros in "
            "problem 1");
}

// split_rows of a device tensor: its backward scatters the rows' gradients
// on that device (it copied them into a host buffer from device memory). Row
// 1 gets none: its gradient is 0; rows 0 and 2 get their cotangents.
TEST(NefiBatchDevice, SplitRowsOfADeviceTensorGivesItsGradientThere) {
  NEFI_SKIP_WITHOUT_GPU();
  fk::Tensor x = fk::zeros({3, 2}, {fk::DType::F64, nefi::cuda_test::kGpu});
  x.set_requires_grad(true);
  const std::vector<fk::Tensor> rows = nefi::split_rows(x);
  ASSERT_EQ(rows.size(), 3u);
  const fk::Tensor c0 = fk::from_vector(std::vector<double>{1, 2}, {2}, nefi::cuda_test::kGpu);
  const fk::Tensor c2 = fk::from_vector(std::vector<double>{3, 4}, {2}, nefi::cuda_test::kGpu);
  fk::add(fk::sum(fk::mul(rows[0], c0)), fk::sum(fk::mul(rows[2], c2))).backward();
  EXPECT_EQ(x.grad().device(), nefi::cuda_test::kGpu);
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1, 2, 0, 0, 3, 4}));
}

}  // namespace
