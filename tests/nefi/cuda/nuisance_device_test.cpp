// A nuisance operator's trained gain and offset on a CUDA device: the move
// reaches every resolution (they share the leaves), and a grid field's fit
// through a weight map with an unknown gain and background follows the CPU
// fit on the device, its stage captured as one CUDA graph, the gain and
// offset coming back to the CPU. Without a usable device the tests skip
// (scripts/gpu-check runs them on one).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/cuda/device_follows_cpu.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/field/heads.h"
#include "nefi/operators/composite.h"
#include "nefi/operators/pointwise.h"
#include "nefi/solve/solver.h"

namespace {

using nefi::cuda_test::kGpu;

TEST(NefiNuisanceDevice, TrainedLeavesMoveForEveryResolution) {
  NEFI_SKIP_WITHOUT_GPU();
  auto inner = std::make_shared<nefi::IdentityOperator>();
  nefi::NuisanceOperator op(inner, 2.0, 0.5, true, true);
  const auto coarse = op.at_resolution({4, 4});
  op.parameters_to(kGpu);
  for (const nefi::Operator* o : {static_cast<const nefi::Operator*>(&op),
                                  static_cast<const nefi::Operator*>(coarse.get())}) {
    const auto p = o->parameters();
    ASSERT_EQ(p.size(), 2u);
    for (const fk::Tensor& leaf : p) {
      EXPECT_EQ(leaf.device(), kGpu);
      EXPECT_TRUE(leaf.requires_grad());
    }
  }
  EXPECT_NEAR(op.gain(), 2.0, 1e-6);  // values kept (f32 leaves)
  EXPECT_DOUBLE_EQ(op.offset(), 0.5);
  const fk::Tensor y = op.apply(fk::ones({4, 4}, {fk::DType::F32}).to(kGpu));
  EXPECT_EQ(y.device(), kGpu);
  EXPECT_NEAR(y.to_vector<double>()[0], 2.5, 1e-6);
  op.parameters_to(fk::kCPU);
  for (const fk::Tensor& leaf : coarse->parameters()) EXPECT_TRUE(leaf.device().is_cpu());
}

// data = 1.7 w * truth + 0.3 with w a known weight map; the fit starts at
// gain 1, offset 0 and trains them with the grid's values.
TEST(NefiNuisanceDevice, AFitWithAnUnknownGainAndOffsetFollowsTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  const fk::Dims grid{12, 10};
  fk::Generator gen(3);
  const fk::Tensor weights = fk::uniform(grid, 0.5, 1.5, {fk::DType::F32}, &gen);
  const fk::Tensor truth = fk::uniform(grid, 0.0, 1.0, {fk::DType::F32}, &gen);
  auto solve = [&](fk::Device device, std::vector<double>* leaves) {
    auto op = std::make_shared<nefi::NuisanceOperator>(
        std::make_shared<nefi::PointwiseOperator>(weights), 1.0, 0.0, true, true);
    const nefi::InverseProblem problem = nefi::cuda_test::grid_mse_problem(
        "gain and offset", nefi::Domain(grid), op,
        nefi::NuisanceOperator(std::make_shared<nefi::PointwiseOperator>(weights), 1.7, 0.3)
            .apply(truth),
        nefi::identity_head("x", 0.5));
    const nefi::Curriculum cur = nefi::cuda_test::one_adam_stage(30, 0.03);
    const nefi::Result r = nefi::cuda_test::solve_on(problem, cur, device, 0);
    for (const fk::Tensor& leaf : op->parameters()) {
      EXPECT_TRUE(leaf.device().is_cpu());  // back with the field
      leaves->push_back(leaf.item());
    }
    return r;
  };
  std::vector<double> cpu_leaves, gpu_leaves;
  const nefi::Result cpu = solve(fk::kCPU, &cpu_leaves);
  const nefi::Result gpu = solve(kGpu, &gpu_leaves);
  nefi::cuda_test::expect_losses_follow(gpu, cpu, 1e-3, 1e-12);
  ASSERT_EQ(gpu_leaves.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(gpu_leaves[i], cpu_leaves[i], 1e-4) << i;
  EXPECT_NE(gpu_leaves[0], 0.0);  // the log gain moved from log 1 = 0
  EXPECT_NE(gpu_leaves[1], 0.0);  // and the offset from 0
  ASSERT_EQ(gpu.stages.size(), 1u);
  EXPECT_GE(gpu.stages[0].graph_steps, 28) << gpu.stages[0].device_note;
  EXPECT_LT(gpu.history.rows.back()[6], 0.2 * gpu.history.rows.front()[6]);
}

}  // namespace
