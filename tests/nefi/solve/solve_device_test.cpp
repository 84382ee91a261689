// SolverOptions::device refusals that need no GPU: a field without a device
// path, the optimizer (SGD) and options that stay on the host, a host-only
// operator (before the first step), and a device this process cannot use
// (every device on a CPU-only build). The device solve
// itself is tests/nefi/cuda/solver_device_test.cpp.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/test_util.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/heads.h"
#include "nefi/host_only_field.h"
#include "nefi/instances/instance.h"
#include "nefi/solve/solver.h"

namespace {

nefi::Params small_toy1d() {
  nefi::Params p = nefi::find_instance("toy1d")->default_config();
  p.set("n", "32");
  p.set("hidden", "16");
  p.set("depth", "2");
  p.set_value("steps", std::vector<double>{3});
  return p;
}

// The fk::Error message of constructing and running the solve, "" if none
// (method "host_only": the grid method's problem with a field without a
// device path, host_only_field.h).
std::string refusal(const std::string& method, const std::string& optimizer, bool ema,
                    fk::Device device) {
  auto su = nefi::find_instance("toy1d")->setup(small_toy1d(),
                                                method == "host_only" ? "grid" : method, 0);
  if (method == "host_only") {
    const auto& grid = dynamic_cast<const nefi::GridField&>(*su->problem.field);
    su->problem.field = std::make_shared<nefi::test::HostOnlyField>(grid.shape());
  }
  if (!optimizer.empty()) su->curriculum.optim.optimizer = optimizer;
  if (ema) su->curriculum.optim.ema = 0.9;
  nefi::SolverOptions so;
  so.device = device;
  try {
    nefi::Solver(su->problem, su->curriculum, so).run();
  } catch (const fk::Error& e) {
    return e.what();
  }
  return "";
}

TEST(NefiSolverDeviceOption, HostOnlyPartsAreRefusedByName) {
  const fk::Device gpu = fk::cuda_device(0);
  EXPECT_NE(refusal("host_only", "", false, gpu)
                .find("a field with a device path (every kind nefi makes has one; a field of your "
                      "own overrides Field::has_device_path and to), got a host_only field"),
            std::string::npos);
  EXPECT_NE(refusal("neural", "sgd", false, gpu).find("SGD has no device step"), std::string::npos);
  // L-BFGS trains there (its evaluations on the device, its recursion on the
  // host): it runs where a device is usable, and elsewhere only the device
  // itself is refused, not the optimizer.
  const std::string lbfgs = refusal("neural", "lbfgs", false, gpu);
  if (fk::cuda::device_count() > 0) {
    EXPECT_EQ(lbfgs, "");
  } else {
    EXPECT_NE(lbfgs.find("cuda:0"), std::string::npos) << lbfgs;
    EXPECT_EQ(lbfgs.find("optimizer"), std::string::npos) << lbfgs;
  }
  EXPECT_NE(refusal("neural", "", true, gpu).find("EMA"), std::string::npos);
}

// darcy_flow's elliptic solve with the banded Cholesky runs on host vectors
// only: constructing the device solve refuses it, naming the operator, the
// device and the setting, before any step.
TEST(NefiSolverDeviceOption, AHostOnlyOperatorIsRefusedAtConstruction) {
  nefi::Params p = nefi::find_instance("darcy_flow")->default_config();
  p.set("n", "16");
  p.set("n_configs", "2");
  p.set("hidden", "16");  // nothing trains: the solve is only constructed
  p.set("linear_solver", "banded");
  auto su = nefi::find_instance("darcy_flow")->setup(p, "neural", 0);
  nefi::SolverOptions so;
  so.device = fk::cuda_device(0);
  std::string e;
  try {
    nefi::Solver(su->problem, su->curriculum, so);
  } catch (const fk::Error& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("operator elliptic on cuda:0"), std::string::npos) << e;
  EXPECT_NE(e.find("linear_solver banded"), std::string::npos) << e;
}

TEST(NefiSolverDeviceOption, AnUnusableDeviceIsRefusedByName) {
  const fk::Device missing = fk::cuda_device(fk::cuda::device_count());
  const std::string e = refusal("neural", "", false, missing);
  EXPECT_NE(e.find(missing.str()), std::string::npos) << e;
  if (!fk::cuda::built_with_cuda()) {
    EXPECT_NE(e.find("no CUDA backend"), std::string::npos) << e;
  }
}

// thermal_tomography's pinn_soft trains its operator's weights with the
// field, which a device solve now takes (they follow the field there): the
// solve is constructed without a refusal; run on a device this process
// cannot use, it fails naming the device, the weights still on the CPU.
TEST(NefiSolverDeviceOption, PinnSoftIsNotRefusedAndAnUnusableDeviceIsNamed) {
  nefi::Params p = nefi::find_instance("thermal_tomography")->default_config();
  p.set_value("grid", std::vector<double>{4, 4, 3});
  p.set("n_frames", "4");
  p.set("pinn_hidden", "8");
  p.set("pinn_depth", "1");
  p.set("pinn_collocation", "16");
  auto su = nefi::find_instance("thermal_tomography")->setup(p, "pinn_soft", 0);
  ASSERT_TRUE(su.has_value());
  nefi::SolverOptions so;
  so.device = fk::cuda_device(fk::cuda::device_count());
  std::string e;
  try {
    nefi::Solver solver(su->problem, su->curriculum, so);
    (void)solver.run();
  } catch (const fk::Error& err) {
    e = err.what();
  }
  EXPECT_EQ(e.find("operator soft_pinn_surface"), std::string::npos) << e;
  EXPECT_NE(e.find(so.device.str()), std::string::npos) << e;
  for (const auto& w : su->problem.op->parameters()) EXPECT_TRUE(w.device().is_cpu());
}

// Field::to: a field without a device path refuses a device by its kind
// (the CPU is always fine); one with a path refuses a device this process
// cannot use.
TEST(NefiSolverDeviceOption, FieldsMoveOnlyWhereTheyHaveAPath) {
  const std::vector<nefi::HeadPtr> heads{nefi::make_head("identity", "x", 0.5)};
  nefi::test::HostOnlyField host_only(fk::Dims{16, 16});
  EXPECT_FALSE(host_only.has_device_path());
  host_only.to(fk::kCPU);
  std::string e = fk::test::error_of([&] { host_only.to(fk::cuda_device(0)); });
  EXPECT_NE(e.find("the cpu for a 'host_only' field"), std::string::npos) << e;
  nefi::GridField grid(fk::Dims{16, 16}, heads);
  EXPECT_TRUE(grid.has_device_path());
  const fk::Device absent = fk::cuda_device(fk::cuda::device_count());
  e = fk::test::error_of([&] { grid.to(absent); });
  EXPECT_NE(e.find(absent.str()), std::string::npos) << e;
}

TEST(NefiSolverDeviceOption, TheCpuDefaultRuns) {
  EXPECT_EQ(refusal("neural", "", false, fk::kCPU), "");
}

}  // namespace
