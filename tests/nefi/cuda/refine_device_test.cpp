// refine_edges with its refit on a CUDA device (SolverOptions::device): a
// blurred sharp disk's smooth fit sharpened by every mode (levelset,
// voxels, tv_sharpen, phasefield) on the device as on the CPU: the refit's
// field trained there, the same decision, chi within 2 %, the levels within
// 0.02, the refined field within 0.05 of the CPU's in all but a few
// interface cells (f32 refits of 150 Adam steps part by round-off), and the
// first 20 steps' losses within 1e-3; the voxel refits replay a captured
// graph, the annealing ones run eagerly. A refit whose model has no device
// path is refused by name. Without a usable device the tests skip
// (scripts/gpu-check runs them).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/random.h"
#include "fk/test_util.h"
#include "nefi/byop/byop_test_models.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/field/grid_field.h"
#include "nefi/losses/data_losses.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/solve/refine.h"

namespace {

using nefi::cuda_test::kGpu;

struct Disk {
  nefi::InverseProblem problem;
  fk::Tensor smooth;
};

// A sharp disk (0.8 on 0.1) under a blur, 1 % noise; the smooth fit is the
// truth blurred once more.
Disk disk() {
  const int64_t n = 24;
  const nefi::Domain d({n, n});
  std::vector<double> x(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      x[i * n + j] = std::hypot(i + 0.5 - 11.0, j + 0.5 - 13.0) < 6 ? 0.8 : 0.1;
  const fk::Tensor truth = fk::from_vector(x, d.shape());
  auto blur = std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(2.0 / n), d);
  Disk p;
  p.problem.domain = d;
  p.problem.op = blur;
  p.problem.field = std::make_shared<nefi::GridField>(
      d.shape(), std::vector<nefi::HeadPtr>{nefi::identity_head("x")});
  p.problem.losses.add(nefi::mse_loss(), 1.0);
  fk::Generator g(7);
  p.problem.measurement.data =
      fk::add(blur->apply(truth), fk::mul(fk::randn(d.shape(), {fk::DType::F64}, &g), 0.01))
          .to(fk::DType::F32);
  p.problem.measurement.noise_std = 0.01;
  p.smooth = blur->apply(truth);
  return p;
}

TEST(NefiRefineDevice, EveryModeRefitsOnTheDeviceAsOnTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  nefi::cuda_test::NoTf32 no_tf32;
  const Disk p = disk();
  for (const std::string mode : {"levelset", "voxels", "tv_sharpen", "phasefield"}) {
    SCOPED_TRACE(mode);
    nefi::RefineOptions o;
    o.mode = mode;
    o.levels = 2;
    o.steps = 150;
    o.lr = 2e-2;
    nefi::SolverOptions cpu_so, gpu_so;
    gpu_so.device = kGpu;
    std::string refit_device;  // where the refit's field trained
    gpu_so.on_stage_start = [&](const nefi::StageView& v) {
      refit_device = v.field->params().flat().device().str();
    };
    std::vector<double> loss[2];
    for (nefi::SolverOptions* so : {&cpu_so, &gpu_so}) {
      std::vector<double>& rows = loss[so == &gpu_so];
      so->callbacks.push_back([&rows](const nefi::StepInfo& s) {
        rows.push_back(s.total);
        return true;
      });
    }
    const nefi::RefineReport cpu = nefi::refine_edges(p.problem, p.smooth, o, cpu_so);
    const nefi::RefineReport gpu = nefi::refine_edges(p.problem, p.smooth, o, gpu_so);
    EXPECT_EQ(refit_device, kGpu.str());
    // The voxel field retargets, so its refits replay one captured graph
    // after the warm-up and capture steps; the level set's width and the
    // phase energy's weight move every step, so theirs are eager.
    EXPECT_EQ(gpu.refit_steps, 150);
    EXPECT_EQ(cpu.refit_graph_steps, 0);
    const bool replays = mode == "voxels" || mode == "tv_sharpen";
    if (replays) {
      EXPECT_GE(gpu.refit_graph_steps, 148);
    } else {
      EXPECT_EQ(gpu.refit_graph_steps, 0);
    }
    EXPECT_TRUE(cpu.accepted) << cpu.reason;
    EXPECT_EQ(gpu.accepted, cpu.accepted) << gpu.reason;
    EXPECT_NEAR(gpu.chi_refined, cpu.chi_refined, 0.02 * cpu.chi_refined);
    ASSERT_EQ(gpu.levels.size(), cpu.levels.size());
    for (size_t k = 0; k < cpu.levels.size(); ++k) EXPECT_NEAR(gpu.levels[k], cpu.levels[k], 0.02);
    ASSERT_TRUE(gpu.refined.defined());
    EXPECT_TRUE(gpu.refined.device().is_cpu());
    const std::vector<double> a = cpu.refined.to_vector<double>(),
                              b = gpu.refined.to_vector<double>();
    ASSERT_EQ(a.size(), b.size());
    int apart = 0;
    for (size_t i = 0; i < a.size(); ++i) apart += std::abs(a[i] - b[i]) > 0.05;
    EXPECT_LE(apart, 6) << "cells more than 0.05 from the CPU's refit";
    // The first steps follow the CPU's.
    ASSERT_EQ(loss[1].size(), loss[0].size());
    for (size_t t = 0; t < std::min<size_t>(loss[0].size(), 20); ++t)
      EXPECT_NEAR(loss[1][t], loss[0][t], 1e-3 * std::abs(loss[0][t])) << "step " << t;
  }
}

TEST(NefiRefineDevice, AModelWithoutADevicePathIsRefusedByName) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::test::Blur1D host_model(32, 0.01);
  nefi::InverseProblem problem;
  problem.domain = nefi::Domain({host_model.n});
  problem.op = host_model.op;
  problem.field = std::make_shared<nefi::GridField>(
      fk::Dims{host_model.n}, std::vector<nefi::HeadPtr>{nefi::identity_head("x")});
  problem.losses.add(nefi::mse_loss(), 1.0);
  problem.measurement = host_model.measurement();
  nefi::RefineOptions o;
  o.levels = 2;
  o.steps = 5;
  nefi::SolverOptions so;
  so.device = kGpu;
  const std::string e = fk::test::error_of([&] {
    (void)nefi::refine_edges(problem, fk::from_vector(host_model.gt, {host_model.n}), o, so);
  });
  EXPECT_NE(e.find("an operator with a device path"), std::string::npos) << e;
}

}  // namespace
