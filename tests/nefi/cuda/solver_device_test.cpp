// A neural toy1d solve (FFT convolution operator, MSE + L1 on the field) on a
// CUDA device against the same solve on the CPU, 30 Adam steps, without and
// with toy1d's TV term; its grid method over two stages with a grid,
// low-rank, spectral or hash-grid field; a grid field beside a loss that
// reads progress. Without a usable device the tests skip (scripts/gpu-check
// runs them on one).
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
#include <memory>
#include <string>
#include <vector>

#include "fk/amp.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/test_util.h"
#include "nefi/cuda/device_follows_cpu.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/hash_grid_field.h"
#include "nefi/field/low_rank_field.h"
#include "nefi/field/spectral_field.h"
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
// device against the CPU, over two stages, with its grid field and with the
// other fields that train on a device in its place (a rank-4 low-rank field,
// a spectral field, a small hash grid): the field is resampled (grid,
// low-rank), rescaled (spectral: the shared modes keep their amplitudes) or
// sampled anew (hash grid: the finer grid's points and their inverse map) at
// the second stage's start and stays on the device. Neither progress (a hash grid's
// levels ramping in) nor the stage change breaks the step's structure, so
// after each stage's first step the steps replay one captured graph.
void expect_fields_follow_across_stages(const std::string& kind) {
  SCOPED_TRACE(kind);
  NoTf32 no_tf32;
  // TV's gradient, sign(x_i+1 - x_i), follows round-off where a field is
  // nearly flat, as the other fields start (a grid starts exactly flat): off
  // for them. On the emulated device the worst loss differences over the 30
  // rows were 3e-4 (grid), 2e-6 (low-rank), 1e-7 (spectral), 6e-6 (hash).
  nefi::Params p = toy1d_params(kind == "grid" ? 1e-4 : 0.0);
  p.set_value("steps", std::vector<double>{15, 15});
  p.set("lr", "0.05");
  auto run = [&](fk::Device device) {
    auto su = nefi::find_instance("toy1d")->setup(p, "grid", 3);
    const auto& grid = dynamic_cast<const nefi::GridField&>(*su->problem.field);
    if (kind == "lowrank") {
      su->problem.field = std::make_shared<nefi::LowRankField>(grid.shape(), grid.heads(), 4);
    } else if (kind == "spectral") {
      su->problem.field = std::make_shared<nefi::SpectralField>(su->problem.domain, grid.heads());
    } else if (kind == "hash") {
      nefi::HashGridConfig cfg;
      cfg.levels = 6;
      cfg.log2_table = 5;  // the finest levels hash
      cfg.hidden = 16;
      su->problem.field = std::make_shared<nefi::HashGridField>(grid.shape(), grid.heads(), cfg);
    }
    EXPECT_EQ(su->problem.field->kind(), kind);
    return solve_on(su->problem, su->curriculum, device, 3);
  };
  const nefi::Result cpu = run(fk::kCPU);
  const nefi::Result gpu = run(fk::cuda_device(0));
  ASSERT_EQ(cpu.history.rows.size(), 30u);
  expect_losses_follow(gpu, cpu, 1e-3, 1e-12);
  ASSERT_EQ(gpu.stages.size(), 2u);
  EXPECT_LT(gpu.stages[0].shape[0], gpu.stages[1].shape[0]);
  for (const auto& st : gpu.stages) EXPECT_GE(st.graph_steps, 13) << st.device_note;
  // Each stage lowered the loss (grid: 0.54 -> 0.46 and 0.46 -> 0.40).
  for (size_t first : {0, 15})
    EXPECT_LT(gpu.history.rows[first + 14][5], 0.9 * gpu.history.rows[first][5]) << first;
  const auto x = cpu.fields.at("x").to_vector<double>();
  const fk::Tensor xg = gpu.fields.at("x");
  EXPECT_TRUE(xg.device().is_cpu());
  const auto y = xg.to_vector<double>();
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  EXPECT_LE(nefi::cuda_test::max_abs_diff(x, y), 1e-3 * (*hi - *lo));
}

TEST(NefiSolverDevice, AGridFieldOnTheDeviceFollowsTheCpuAcrossStages) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_fields_follow_across_stages("grid");
}

TEST(NefiSolverDevice, ALowRankFieldOnTheDeviceFollowsTheCpuAcrossStages) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_fields_follow_across_stages("lowrank");
}

// The spectral field's DCT runs through cuFFT (fk::dct on a device).
TEST(NefiSolverDevice, ASpectralFieldOnTheDeviceFollowsTheCpuAcrossStages) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_fields_follow_across_stages("spectral");
}

TEST(NefiSolverDevice, AHashGridFieldOnTheDeviceFollowsTheCpuAcrossStages) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_fields_follow_across_stages("hash");
}

// A loss whose weight ramps with progress (Loss::reads_progress, as
// refine_edges' phase energy does) beside a grid field, which retargets in
// place: its steps capture anew as progress moves, so every row follows the
// CPU's (a replayed graph would keep its capture's weight: the rows part
// within a few steps).
class RampedSquare : public nefi::Loss {
 public:
  RampedSquare() : Loss("ramped_square") {}
  fk::Tensor forward(const nefi::LossContext& ctx) const override {
    const fk::Tensor& x = ctx.field("x");
    return fk::mul(fk::mean(fk::mul(x, x)), 10.0 * ctx.progress);
  }
  bool reads_progress() const override { return true; }
};

TEST(NefiSolverDevice, ALossThatReadsProgressCapturesAnewAsItMoves) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  nefi::Params p = toy1d_params(0.0);
  p.set("lr", "0.05");
  auto run = [&](fk::Device device) {
    auto su = nefi::find_instance("toy1d")->setup(p, "grid", 3);
    su->problem.losses.add(std::make_shared<RampedSquare>(), 1.0);
    return solve_on(su->problem, su->curriculum, device, 3);
  };
  const nefi::Result cpu = run(fk::kCPU);
  const nefi::Result gpu = run(fk::cuda_device(0));
  ASSERT_EQ(cpu.history.rows.size(), 30u);
  ASSERT_GT(cpu.history.rows.back()[4], cpu.history.rows[1][4]);  // progress moved
  expect_losses_follow(gpu, cpu, 1e-3, 1e-12);
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
