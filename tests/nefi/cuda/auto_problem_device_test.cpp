// A bring-your-own problem (nefi fit, from_forward) solved on a CUDA device:
// a built-in Gaussian blur with a nonnegative, TV-regularised grid or neural
// field follows the same solve on the CPU, and a field without a device path
// is refused by name before any step. Without a usable device the tests skip
// (scripts/gpu-check runs them on one).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/random.h"
#include "fk/test_util.h"
#include "nefi/byop/auto_problem.h"
#include "nefi/cuda/device_follows_cpu.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/operators/fft_convolution.h"

namespace {

using nefi::cuda_test::kGpu;
using nefi::cuda_test::NoTf32;

// A square of 1 in a 24 x 24 grid, blurred (sigma 1.5 cells), noise 0.01.
struct Scene {
  nefi::OperatorPtr op;
  nefi::Measurement m;
  fk::Dims shape{24, 24};
};

Scene blurred_square() {
  Scene s;
  const nefi::Domain d(s.shape, {1.0, 1.0});
  s.op = std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(1.5 * d.spacing()[0]), d);
  fk::Tensor truth = fk::zeros(s.shape, {fk::DType::F64});
  for (int64_t i = 8; i < 16; ++i)
    for (int64_t j = 6; j < 14; ++j) truth.data<double>()[i * 24 + j] = 1.0;
  fk::Generator gen(4);
  s.m.data = fk::add(s.op->apply(truth), fk::mul(fk::randn(s.shape, {fk::DType::F64}, &gen), 0.01));
  return s;
}

nefi::AutoProblem problem(const Scene& s, const std::string& representation) {
  nefi::AutoOptions o;
  o.prior = "nonnegative + tv";
  o.representation = representation;
  o.budget = "40";
  o.noise_std = 0.01;
  o.discrepancy = false;  // the same step count on both
  return nefi::auto_problem(s.op, s.shape, s.m, o);
}

TEST(NefiAutoProblemDevice, ABlurFitOnTheDeviceFollowsTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  const Scene s = blurred_square();
  for (const std::string rep : {"grid", "neural"}) {
    SCOPED_TRACE(rep);
    const nefi::AutoProblem ap = problem(s, rep);
    const nefi::Result cpu = ap.solve({});
    nefi::SolverOptions so;
    so.device = kGpu;
    const nefi::Result gpu = ap.solve(so);
    EXPECT_EQ(gpu.device, kGpu.str());
    EXPECT_EQ(cpu.device, "cpu");
    nefi::cuda_test::expect_losses_follow(gpu, cpu, 1e-3, 1e-12);
    EXPECT_TRUE(gpu.fields.at("x").device().is_cpu());
    EXPECT_LT(gpu.history.rows.back()[6], 0.5 * gpu.history.rows.front()[6]) << "data loss";
  }
}

TEST(NefiAutoProblemDevice, AFieldWithoutADevicePathIsRefusedByName) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::AutoProblem ap = problem(blurred_square(), "lowrank");
  nefi::SolverOptions so;
  so.device = kGpu;
  const std::string e = fk::test::error_of([&] { (void)ap.solve(so); });
  EXPECT_NE(e.find("a neural or grid field"), std::string::npos) << e;
}

// A multiscale problem's coarse stage sees the model through the host-side
// prolongation: refused at construction, naming the stage, not mid-solve.
TEST(NefiAutoProblemDevice, AMultiscaleCoarseStageIsRefusedByName) {
  NEFI_SKIP_WITHOUT_GPU();
  const Scene s = blurred_square();
  nefi::AutoOptions o;
  o.representation = "grid";
  o.budget = "40";
  o.multiscale = true;
  const nefi::AutoProblem ap = nefi::auto_problem(s.op, s.shape, s.m, o);
  ASSERT_EQ(ap.curriculum.stages.size(), 2u);
  nefi::SolverOptions so;
  so.device = kGpu;
  const std::string e = fk::test::error_of([&] { (void)ap.solve(so); });
  EXPECT_NE(e.find("at every stage's grid"), std::string::npos) << e;
  EXPECT_NE(e.find("prolongation"), std::string::npos) << e;
}

}  // namespace
