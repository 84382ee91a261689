// A neural toy1d solve (FFT convolution operator, MSE + L1 on the field) on a
// CUDA device against the same solve on the CPU, 30 Adam steps, without and
// with toy1d's TV term. Without a usable device the tests skip
// (scripts/gpu-check runs them on one).
//
// Tolerance: the two runs differ by f32 round-off from the first step (cuBLAS
// products against the CPU's GEMM, cuFFT against the CPU FFT, f32 device sums
// against the host's f64 ones, ~1e-6 relative per step); Adam's normalised
// steps can amplify that on coordinates whose gradient is near zero, so over
// 30 steps we allow 1e-3 relative on every loss in the history and 1e-3 of the
// field's range on the final field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fk/amp.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/test_util.h"
#include "nefi/cuda/device_follows_cpu.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/instances/instance.h"
#include "nefi/losses/data_losses.h"
#include "nefi/solve/solver.h"
#include "nefi/solve/toy1d_smoke.h"

namespace {

using nefi::cuda_test::expect_losses_follow;
using nefi::cuda_test::NoTf32;
using nefi::cuda_test::solve_on;

nefi::Params toy1d_params(double tv) {
  nefi::Params p = nefi::toy1d_test::toy1d_smoke_params();
  p.set_value("tv", tv);
  p.set_value("l1", 1e-3);
  p.set_value("steps", std::vector<double>{30});
  return p;
}

nefi::Result solve(const nefi::Params& p, fk::Device device) {
  auto su = nefi::find_instance("toy1d")->setup(p, "neural", 3);
  return solve_on(su->problem, su->curriculum, device, 3);
}

// The solve of `p` on the device against the same solve on the CPU.
void expect_device_follows_cpu(const nefi::Params& p) {
  NoTf32 no_tf32;
  const nefi::Result cpu = solve(p, fk::kCPU);
  const nefi::Result gpu = solve(p, fk::cuda_device(0));
  ASSERT_EQ(cpu.history.rows.size(), 30u);
  ASSERT_EQ(gpu.history.rows.size(), cpu.history.rows.size());
  expect_losses_follow(gpu, cpu, 1e-3, 1e-12);
  // The run learned something, on both.
  EXPECT_LT(gpu.history.rows.back()[5], 0.5 * gpu.history.rows.front()[5]);
  const auto x = cpu.fields.at("x").to_vector<double>();
  const fk::Tensor xg = gpu.fields.at("x");
  EXPECT_TRUE(xg.device().is_cpu());  // the field came back before the final evaluation
  const auto y = xg.to_vector<double>();
  ASSERT_EQ(x.size(), y.size());
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  const double worst = nefi::cuda_test::max_abs_diff(x, y);
  EXPECT_LE(worst, 1e-3 * (*hi - *lo));
}

TEST(NefiSolverDevice, Toy1dOnTheDeviceFollowsTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_device_follows_cpu(toy1d_params(0.0));
}

// toy1d's default regulariser (TV 1e-4) trains on the device too (its fused
// device passes, losses/loss_device.h).
TEST(NefiSolverDevice, Toy1dWithTvOnTheDeviceFollowsTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_device_follows_cpu(toy1d_params(1e-4));
}

// The grid method (free values per cell, toy1d's TV and L1 on them) on the
// device against the CPU, over two stages: the values are resampled to the
// finer grid at the second stage's start and stay on the device. Neither
// progress nor the stage change breaks the step's structure, so after each
// stage's first step the steps replay one captured graph.
TEST(NefiSolverDevice, AGridFieldOnTheDeviceFollowsTheCpuAcrossStages) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  nefi::Params p = toy1d_params(1e-4);
  p.set_value("steps", std::vector<double>{15, 15});
  p.set("lr", "0.05");
  auto run = [&](fk::Device device) {
    auto su = nefi::find_instance("toy1d")->setup(p, "grid", 3);
    EXPECT_EQ(su->problem.field->kind(), "grid");
    return solve_on(su->problem, su->curriculum, device, 3);
  };
  const nefi::Result cpu = run(fk::kCPU);
  const nefi::Result gpu = run(fk::cuda_device(0));
  ASSERT_EQ(cpu.history.rows.size(), 30u);
  expect_losses_follow(gpu, cpu, 1e-3, 1e-12);
  ASSERT_EQ(gpu.stages.size(), 2u);
  EXPECT_LT(gpu.stages[0].shape[0], gpu.stages[1].shape[0]);
  for (const auto& st : gpu.stages) EXPECT_GE(st.graph_steps, 13) << st.device_note;
  // Each stage lowered the loss (0.54 -> 0.46 and 0.46 -> 0.40 here).
  for (size_t first : {0, 15})
    EXPECT_LT(gpu.history.rows[first + 14][5], 0.9 * gpu.history.rows[first][5]) << first;
  const auto x = cpu.fields.at("x").to_vector<double>();
  const fk::Tensor xg = gpu.fields.at("x");
  EXPECT_TRUE(xg.device().is_cpu());
  const auto y = xg.to_vector<double>();
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  EXPECT_LE(nefi::cuda_test::max_abs_diff(x, y), 1e-3 * (*hi - *lo));
}

// Observations the CPU losses refuse are refused by a device solve at its
// setup with the CPU's error (the device losses read nothing back and would
// give NaN): zero-energy data under relative MSE, zero-mean data under
// normalized MSE, an all-zero mask under Huber.
TEST(NefiSolverDevice, DegenerateObservationsAreRefusedAsOnTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  auto su =
      nefi::find_instance("toy1d")->setup(nefi::toy1d_test::toy1d_smoke_params(), "neural", 0);
  nefi::InverseProblem p = su->problem;
  const fk::Tensor data = p.measurement.data;
  auto error_on = [&](fk::Device device) {
    nefi::SolverOptions so;
    so.device = device;
    return fk::test::error_of([&] { nefi::Solver(p, su->curriculum, so).run(); });
  };
  auto only = [&](const nefi::LossPtr& loss) {
    p.losses = nefi::LossSet();
    p.losses.add(loss, 1.0);
  };
  p.measurement.data = fk::zeros(data.shape(), {data.dtype()});
  only(nefi::relative_mse_loss());
  EXPECT_NE(error_on(nefi::cuda_test::kGpu).find("nefi::RelativeMSE"), std::string::npos);
  EXPECT_EQ(error_on(nefi::cuda_test::kGpu), error_on(fk::kCPU));
  only(nefi::normalized_mse_loss());
  EXPECT_NE(error_on(nefi::cuda_test::kGpu).find("nefi::NormalizedMSE"), std::string::npos);
  EXPECT_EQ(error_on(nefi::cuda_test::kGpu), error_on(fk::kCPU));
  p.measurement.data = data;
  p.measurement.mask = fk::zeros(data.shape(), {data.dtype()});
  only(nefi::huber_loss());
  EXPECT_EQ(error_on(nefi::cuda_test::kGpu),
            "nefi::Solver: expected a mask with at least one observed cell, got an all-zero mask");
  EXPECT_EQ(error_on(nefi::cuda_test::kGpu), error_on(fk::kCPU));
}

}  // namespace
