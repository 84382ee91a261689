// thermal_tomography's pinn_soft on a CUDA device against the CPU: the
// surface prediction, the residual and initial-condition terms and their
// gradients (network weights and α) at the same weights and the same
// collocation points, and a short solve (the weights train on the
// device with the field, come back to the CPU, and no step reads the host
// under FK_SYNC_DEBUG=error). Without a usable device the tests skip
// (scripts/gpu-check runs them on one).
//
// Tolerance: f32 throughout; cuBLAS products against the CPU's GEMM and
// device sums against the host's differ by ~1e-6 relative per op, and the
// residual's second derivatives pass through a few layers of them, so we
// allow 1e-4 of the largest value on the terms and 1e-3 on the gradients.
// The solve's history rows may drift further through Adam's normalised
// steps: 2e-2 relative over 20 steps.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "nefi/cuda/device_follows_cpu.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/domain.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/thermal/pinn_soft.h"
#include "nefi/solve/solver.h"

namespace {

using nefi::cuda_test::expect_close;
using nefi::cuda_test::expect_losses_follow;
using nefi::cuda_test::host;
using nefi::cuda_test::kGpu;
using nefi::cuda_test::NoTf32;
using nefi::cuda_test::solve_on;
using nefi::thermal::PinnGeometry;
using nefi::thermal::SoftPinnSurface;
using nefi::thermal::TemperatureNet;

struct Terms {
  std::vector<double> values;                  // surface sum of squares, residual, ic
  std::vector<std::vector<double>> gradients;  // each weight, then α
};

// The three terms and their gradients with the network and α on `device`.
Terms terms_on(fk::Device device, int octaves) {
  const fk::Dims grid{4, 3, 3};
  const PinnGeometry g{{4.0, 3.0, 1.0}, {0.5, 1.0}, 2.0, true};
  auto net = std::make_shared<TemperatureNet>(16, 3, 50.0, 3, octaves);
  net->to(device);
  const auto op = std::make_shared<SoftPinnSurface>(net, g)->at_resolution(grid);
  op->prepare_tables(device, fk::DType::F32);
  fk::Generator gen(5);
  fk::Tensor alpha = fk::uniform(grid, 0.05, 0.2, {fk::DType::F32}, &gen).to(device);
  alpha.set_requires_grad(true);
  const nefi::Domain domain(grid, g.extent);
  nefi::thermal::FlashSpec flash;
  flash.amplitude = 50;
  const nefi::thermal::PdeResidualLoss pde(256, 11);
  const nefi::thermal::InitialConditionLoss ic(flash);
  const nefi::FieldMap fields{{"alpha", alpha}};
  const fk::Tensor pred = op->apply(alpha);
  EXPECT_EQ(pred.device(), device);
  const nefi::LossContext ctx{&fields, pred, nullptr, &domain, op.get(), 0, 0, 1.0};
  const fk::Tensor t[3] = {fk::sum(fk::mul(pred, pred)), pde.forward(ctx), ic.forward(ctx)};
  fk::add(fk::add(t[0], t[1]), t[2]).backward();
  Terms out;
  for (const auto& x : t) out.values.push_back(host(x)[0]);
  for (const auto& p : net->parameters()) out.gradients.push_back(host(p.grad()));
  out.gradients.push_back(host(alpha.grad()));
  return out;
}

TEST(NefiPinnSoftDevice, TermsAndGradientsFollowTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  for (int octaves : {0, 2}) {
    const Terms cpu = terms_on(fk::kCPU, octaves);
    const Terms gpu = terms_on(kGpu, octaves);
    const std::string what = std::to_string(octaves) + " octaves";
    // Each term on its own scale: the surface sum is ~1e4 here and the
    // residual and initial-condition terms ~1, so one scale for the three
    // would leave the latter two unchecked.
    static const char* const kTerms[] = {"surface", "residual", "initial condition"};
    ASSERT_EQ(gpu.values.size(), 3u);
    for (size_t k = 0; k < 3; ++k)
      expect_close({gpu.values[k]}, {cpu.values[k]}, 1e-4, what + ", " + kTerms[k] + " term");
    ASSERT_EQ(gpu.gradients.size(), cpu.gradients.size());
    for (size_t i = 0; i < cpu.gradients.size(); ++i)
      expect_close(gpu.gradients[i], cpu.gradients[i], 1e-3,
                   what + ", gradient " + std::to_string(i));
  }
}

// A small thermal_tomography (8 x 8 x 4, 6 frames) with a small network.
nefi::Result pinn_solve(fk::Device device, std::shared_ptr<nefi::Operator>* op_out) {
  nefi::Params p = nefi::find_instance("thermal_tomography")->default_config();
  p.set_value("extent", std::vector<double>{4, 4, 1});
  p.set_value("grid", std::vector<double>{8, 8, 4});
  p.set("n_frames", "6");
  p.set("flash_width_xy", "1.0");
  p.set("pinn_hidden", "32");
  p.set("pinn_depth", "3");
  p.set("pinn_collocation", "256");
  p.set("pinn_steps", "20");
  auto su = nefi::find_instance("thermal_tomography")->setup(p, "pinn_soft", 0);
  EXPECT_TRUE(su.has_value());
  *op_out = su->problem.op;
  return solve_on(su->problem, su->curriculum, device, 0);
}

TEST(NefiPinnSoftDevice, SolveFollowsTheCpuAndReadsNothingBack) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  std::shared_ptr<nefi::Operator> cpu_op, gpu_op;
  const nefi::Result cpu = pinn_solve(fk::kCPU, &cpu_op);
  nefi::Result gpu;
  {
    const nefi::cuda_test::KnobOverride error("FK_SYNC_DEBUG", "error");
    ASSERT_NO_THROW(gpu = pinn_solve(kGpu, &gpu_op));
  }
  ASSERT_EQ(cpu.history.rows.size(), 20u);
  ASSERT_EQ(gpu.history.rows.size(), cpu.history.rows.size());
  expect_losses_follow(gpu, cpu, 2e-2, 1e-9);
  // The weights trained on the device and came back before the final evaluation.
  for (const auto& p : gpu_op->parameters()) EXPECT_TRUE(p.device().is_cpu());
  expect_close(host(gpu_op->parameters().back()), host(cpu_op->parameters().back()), 5e-2,
               "the output bias");
  ASSERT_FALSE(gpu.stages.empty());
  EXPECT_EQ(gpu.stages[0].graph_steps, 0);
  EXPECT_NE(gpu.stages[0].device_note.find("not graph-capturable"), std::string::npos)
      << gpu.stages[0].device_note;
  EXPECT_NE(gpu.stages[0].device_note.find("collocation points are resampled"), std::string::npos)
      << gpu.stages[0].device_note;
  EXPECT_TRUE(gpu.fields.at("alpha").device().is_cpu());
}

}  // namespace
