// Operator::parameters_follow_device and parameters_to through the operators
// built from others (Sequential, Sum, Nuisance, DepthCompensated): a device
// solve asks the outermost operator only, so a composite follows the device
// when a part does and no part's parameters stay behind, and it moves every
// distinct part. Checked on the host with recording fakes (the move is a
// plain virtual call for any device; the fakes move nothing), and through
// device_solve_refusal, the check a device solve makes before its first step.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fk/device.h"
#include "fk/factory.h"
#include "nefi/operators/composite.h"
#include "nefi/operators/depth_compensated.h"
#include "nefi/operators/operator.h"
#include "nefi/operators/pointwise.h"

namespace {

using Log = std::vector<std::string>;

// The identity with one trainable scalar whose parameters follow the device
// or not (`follows`), logging "<name> <device>" at every parameters_to.
class RecordingParameters : public nefi::Operator {
 public:
  RecordingParameters(std::string name, bool follows, std::shared_ptr<Log> log)
      : name_(std::move(name)), follows_(follows), log_(std::move(log)) {
    leaf_ = fk::scalar_tensor(1.0, {fk::DType::F32});
    leaf_.set_requires_grad(true);
  }
  fk::Tensor apply(const fk::Tensor& x) const override { return x; }
  std::shared_ptr<nefi::Operator> at_resolution(const fk::Dims&) const override {
    return std::make_shared<RecordingParameters>(name_, follows_, log_);
  }
  std::optional<double> homogeneity() const override { return 1.0; }
  std::string kind() const override { return "recording_parameters"; }
  std::vector<fk::Tensor> parameters() const override { return {leaf_}; }
  bool parameters_follow_device() const override { return follows_; }
  void parameters_to(fk::Device device) override { log_->push_back(name_ + " " + device.str()); }

 private:
  std::string name_;
  bool follows_;
  std::shared_ptr<Log> log_;
  fk::Tensor leaf_;
};

const fk::Device kGpu = fk::cuda_device(0);

using Parts = std::vector<nefi::OperatorPtr>;

TEST(NefiCompositeParametersDevice, SequentialAndSumFollowAPartThatFollows) {
  auto log = std::make_shared<Log>();
  auto a = std::make_shared<RecordingParameters>("a", true, log);
  auto none = std::make_shared<nefi::IdentityOperator>();  // no parameters: no say
  nefi::SequentialOperator seq(Parts{none, a});
  nefi::SumOperator sum(Parts{a, none});
  EXPECT_TRUE(seq.parameters_follow_device());
  EXPECT_TRUE(sum.parameters_follow_device());
  EXPECT_EQ(nefi::device_solve_refusal(seq, kGpu), "");
  EXPECT_EQ(nefi::device_solve_refusal(sum, kGpu), "");
  // Parts with no parameters at all: nothing follows (the default).
  EXPECT_FALSE(nefi::SumOperator(Parts{none, none}).parameters_follow_device());
}

TEST(NefiCompositeParametersDevice, APartWhoseParametersStayBehindStopsTheComposite) {
  auto log = std::make_shared<Log>();
  auto a = std::make_shared<RecordingParameters>("a", true, log);
  auto stays = std::make_shared<RecordingParameters>("stays", false, log);
  nefi::SumOperator sum(Parts{a, stays});
  EXPECT_FALSE(sum.parameters_follow_device());
  const std::string refusal = nefi::device_solve_refusal(sum, kGpu);
  EXPECT_NE(refusal.find("2 trainable operator parameter(s)"), std::string::npos) << refusal;
  EXPECT_FALSE(nefi::SequentialOperator(Parts{stays, a}).parameters_follow_device());
}

TEST(NefiCompositeParametersDevice, ParametersToReachesEveryDistinctPartInOrder) {
  auto log = std::make_shared<Log>();
  auto a = std::make_shared<RecordingParameters>("a", true, log);
  auto b = std::make_shared<RecordingParameters>("b", true, log);
  nefi::SequentialOperator(Parts{a, b}).parameters_to(kGpu);
  nefi::SumOperator(Parts{b, a, b}).parameters_to(fk::kCPU);  // b listed twice: moved once
  const std::string gpu = kGpu.str(), cpu = fk::kCPU.str();
  EXPECT_EQ(*log, Log({"a " + gpu, "b " + gpu, "b " + cpu, "a " + cpu}));
}

TEST(NefiCompositeParametersDevice, NestedCompositesReachEveryLeaf) {
  auto log = std::make_shared<Log>();
  auto a = std::make_shared<RecordingParameters>("a", true, log);
  auto b = std::make_shared<RecordingParameters>("b", true, log);
  auto c = std::make_shared<RecordingParameters>("c", true, log);
  auto sum = std::make_shared<nefi::SumOperator>(Parts{b, c});
  auto seq = std::make_shared<nefi::SequentialOperator>(Parts{a, sum});
  nefi::NuisanceOperator op(seq, 2.0, 0.5);  // a fixed gain and offset: nothing of its own
  EXPECT_TRUE(op.parameters_follow_device());
  op.parameters_to(kGpu);
  const std::string gpu = kGpu.str();
  EXPECT_EQ(*log, Log({"a " + gpu, "b " + gpu, "c " + gpu}));
}

// A trained gain or offset follows the device (its move is checked on one:
// tests/nefi/cuda/nuisance_device_test.cpp); it cannot when the inner
// operator has parameters that stay behind.
TEST(NefiCompositeParametersDevice, ATrainedNuisanceGainOrOffsetFollowsTheDevice) {
  auto log = std::make_shared<Log>();
  auto a = std::make_shared<RecordingParameters>("a", true, log);
  EXPECT_TRUE(nefi::NuisanceOperator(a, 1.5).parameters_follow_device());
  auto plain = std::make_shared<nefi::IdentityOperator>();
  for (auto [gain, offset] : {std::pair{true, false}, {false, true}, {true, true}}) {
    const nefi::NuisanceOperator around_a(a, 1.5, 0.0, gain, offset);
    const nefi::NuisanceOperator around_plain(plain, 1.5, 0.0, gain, offset);
    EXPECT_TRUE(around_a.parameters_follow_device());
    EXPECT_TRUE(around_plain.parameters_follow_device());
    EXPECT_EQ(nefi::device_solve_refusal(around_plain, kGpu), "");
    EXPECT_EQ(around_plain.parameters().size(), size_t{gain} + size_t{offset});
  }
  auto stays = std::make_shared<RecordingParameters>("s", false, log);
  const nefi::NuisanceOperator gain_around_stays(stays, 1.5, 0.0, true, false);
  EXPECT_FALSE(gain_around_stays.parameters_follow_device());
  const std::string refusal = nefi::device_solve_refusal(gain_around_stays, kGpu);
  EXPECT_NE(refusal.find("2 trainable operator parameter(s)"), std::string::npos) << refusal;
  // Without parameters inside or its own, a fixed nuisance follows nothing.
  EXPECT_FALSE(nefi::NuisanceOperator(plain, 2.0).parameters_follow_device());
  EXPECT_TRUE(log->empty());
}

TEST(NefiCompositeParametersDevice, DepthCompensatedForwardsToItsInnerOperator) {
  auto log = std::make_shared<Log>();
  nefi::DepthCompensatedOperator follows(std::make_shared<RecordingParameters>("in", true, log),
                                         fk::Dims{4, 3}, nefi::DepthCompensation{});
  nefi::DepthCompensatedOperator stays(std::make_shared<RecordingParameters>("out", false, log),
                                       fk::Dims{4, 3}, nefi::DepthCompensation{});
  EXPECT_TRUE(follows.parameters_follow_device());
  EXPECT_FALSE(stays.parameters_follow_device());
  follows.parameters_to(kGpu);
  EXPECT_EQ(*log, Log({"in " + kGpu.str()}));
}

}  // namespace
