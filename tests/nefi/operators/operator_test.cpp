// device_solve_refusal: which operators a solve on a CUDA device refuses
// before its first step, and what the refusal names. A pure function of the
// operator and the device, so it is checked here without a GPU.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fk/device.h"
#include "fk/factory.h"
#include "nefi/operators/composite.h"
#include "nefi/operators/operator.h"
#include "nefi/operators/pointwise.h"

namespace {

// An operator that computes on host vectors, as the banded or multigrid
// elliptic solves do.
struct HostOnlyOperator : nefi::Operator {
  fk::Tensor apply(const fk::Tensor& x) const override { return x; }
  std::shared_ptr<nefi::Operator> at_resolution(const fk::Dims&) const override {
    return std::make_shared<HostOnlyOperator>();
  }
  std::string kind() const override { return "host_vectors"; }
  std::string host_only_reason() const override { return "its solver loops over host vectors"; }
};

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

const fk::Device kGpu = fk::cuda_device(0);

TEST(NefiDeviceSolveRefusal, TheCpuNeverRefuses) {
  EXPECT_EQ(nefi::device_solve_refusal(HostOnlyOperator(), fk::kCPU), "");
  const nefi::NuisanceOperator trained(std::make_shared<nefi::IdentityOperator>(), 1.0, 0.0, true);
  EXPECT_EQ(nefi::device_solve_refusal(trained, fk::kCPU), "");
}

TEST(NefiDeviceSolveRefusal, OperatorsOfDeviceOpsAreAccepted) {
  EXPECT_EQ(nefi::device_solve_refusal(nefi::IdentityOperator(), kGpu), "");
  EXPECT_EQ(nefi::device_solve_refusal(nefi::SaturationOperator(2.0), kGpu), "");
  // Frozen gain and offset are plain scalars in device ops.
  const nefi::NuisanceOperator frozen(std::make_shared<nefi::IdentityOperator>(), 3.0, 0.5);
  EXPECT_EQ(nefi::device_solve_refusal(frozen, kGpu), "");
}

TEST(NefiDeviceSolveRefusal, AHostOnlyOperatorIsNamedWithTheDevice) {
  const std::string r = nefi::device_solve_refusal(HostOnlyOperator(), kGpu);
  EXPECT_TRUE(has(r, "operator host_vectors")) << r;
  EXPECT_TRUE(has(r, kGpu.str())) << r;
  EXPECT_TRUE(has(r, "its solver loops over host vectors")) << r;
}

TEST(NefiDeviceSolveRefusal, CompositesNameTheirHostOnlyPart) {
  auto host = std::make_shared<HostOnlyOperator>();
  auto id = std::make_shared<nefi::IdentityOperator>();
  const std::vector<std::pair<std::string, std::shared_ptr<nefi::Operator>>> composites = {
      {"sequential",
       std::make_shared<nefi::SequentialOperator>(std::vector<nefi::OperatorPtr>{id, host})},
      {"sum", std::make_shared<nefi::SumOperator>(std::vector<nefi::OperatorPtr>{id, host})},
      {"nuisance", std::make_shared<nefi::NuisanceOperator>(host, 2.0, 1.0)},
  };
  for (const auto& [kind, op] : composites) {
    const std::string r = nefi::device_solve_refusal(*op, kGpu);
    EXPECT_TRUE(has(r, "operator " + kind)) << r;
    EXPECT_TRUE(has(r, "inner operator host_vectors")) << r;
  }
  const nefi::SequentialOperator all_device({id, id});
  EXPECT_EQ(nefi::device_solve_refusal(all_device, kGpu), "");
}

// Trainable parameters that cannot follow the device (the default): their
// leaves and Adam state would stay on the host beside a device field.
struct HostParameterOperator : nefi::Operator {
  fk::Tensor weight = fk::zeros({2}, {fk::DType::F32});
  fk::Tensor apply(const fk::Tensor& x) const override { return x; }
  std::shared_ptr<nefi::Operator> at_resolution(const fk::Dims&) const override {
    return std::make_shared<HostParameterOperator>(*this);
  }
  std::string kind() const override { return "host_parameters"; }
  std::vector<fk::Tensor> parameters() const override { return {weight}; }
};

TEST(NefiDeviceSolveRefusal, TrainableOperatorParametersAreRefused) {
  std::string r = nefi::device_solve_refusal(HostParameterOperator(), kGpu);
  EXPECT_TRUE(has(r, "operator host_parameters")) << r;
  EXPECT_TRUE(has(r, "1 trainable operator parameter")) << r;
  // A trained nuisance gain follows the device, but not around such a part.
  const nefi::NuisanceOperator gain(std::make_shared<HostParameterOperator>(), 1.0, 0.0, true);
  r = nefi::device_solve_refusal(gain, kGpu);
  EXPECT_TRUE(has(r, "operator nuisance")) << r;
  EXPECT_TRUE(has(r, "2 trainable operator parameter")) << r;
  EXPECT_EQ(
      nefi::device_solve_refusal(
          nefi::NuisanceOperator(std::make_shared<nefi::IdentityOperator>(), 1.0, 0.0, true), kGpu),
      "");
}

// An operator whose parameters move with the solve (thermal pinn_soft's
// network) is accepted, and so is a composite around it, which forwards the
// move to it (composite_parameters_device_test.cpp has the other composites).
struct MovableParameterOperator : nefi::Operator {
  fk::Tensor weight = fk::zeros({2}, {fk::DType::F32});
  fk::Tensor apply(const fk::Tensor& x) const override { return x; }
  std::shared_ptr<nefi::Operator> at_resolution(const fk::Dims&) const override {
    return std::make_shared<MovableParameterOperator>(*this);
  }
  std::string kind() const override { return "movable"; }
  std::vector<fk::Tensor> parameters() const override { return {weight}; }
  bool parameters_follow_device() const override { return true; }
  void parameters_to(fk::Device d) override {
    weight = weight.to(d);
    ++moves;
  }
  int moves = 0;
};

TEST(NefiDeviceSolveRefusal, ParametersThatFollowTheDeviceAreAccepted) {
  auto movable = std::make_shared<MovableParameterOperator>();
  EXPECT_EQ(nefi::device_solve_refusal(*movable, kGpu), "");
  nefi::SequentialOperator wrapped({std::make_shared<nefi::IdentityOperator>(), movable});
  EXPECT_EQ(nefi::device_solve_refusal(wrapped, kGpu), "");
  wrapped.parameters_to(fk::kCPU);
  EXPECT_EQ(movable->moves, 1);
}

}  // namespace
