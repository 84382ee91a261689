// The CUDA-graph switch of a device solve, where no GPU is needed: the knob
// NEFI_CUDA_GRAPH and SolverOptions::cuda_graph (option over knob, default
// on, a malformed value naming the knob), the config key solver.cuda_graph
// (--set and YAML; absent from the YAML unless set, so run hashes stay), the
// refusals a stage knows up front (a host device, an operator that is not
// graph-capturable), and the pieces that need a CUDA device refusing one
// they cannot use. The capture itself is tests/nefi/cuda/step_graph_test.cpp.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/knobs.h"
#include "fk/test_util.h"
#include "nefi/io/run_config.h"
#include "nefi/operators/operator.h"
#include "nefi/solve/device_step_block.h"
#include "nefi/solve/fused_optimizer.h"
#include "nefi/solve/step_graph.h"

namespace {

using fk::test::error_of;

// An identity operator that may or may not be captured.
class Identity : public nefi::Operator {
 public:
  explicit Identity(bool capturable) : capturable_(capturable) {}
  fk::Tensor apply(const fk::Tensor& x) const override { return x; }
  std::shared_ptr<nefi::Operator> at_resolution(const fk::Dims&) const override {
    return std::make_shared<Identity>(capturable_);
  }
  bool graph_capturable() const override { return capturable_; }
  std::string kind() const override { return capturable_ ? "identity" : "host_identity"; }

 private:
  bool capturable_;
};

TEST(NefiStepGraphSwitch, TheOptionOverridesTheKnobWhichDefaultsOn) {
  {
    fk::KnobOverride unset("NEFI_CUDA_GRAPH", std::nullopt);
    EXPECT_TRUE(nefi::cuda_graph_enabled(std::nullopt));
    EXPECT_FALSE(nefi::cuda_graph_enabled(false));
  }
  {
    fk::KnobOverride off("NEFI_CUDA_GRAPH", "0");
    EXPECT_FALSE(nefi::cuda_graph_enabled(std::nullopt));
    EXPECT_TRUE(nefi::cuda_graph_enabled(true));
  }
  {
    fk::KnobOverride on("NEFI_CUDA_GRAPH", "1");
    EXPECT_TRUE(nefi::cuda_graph_enabled(std::nullopt));
  }
}

// NEFI_CUDA_GRAPH in the environment for the scope (no override in force).
class KnobEnvironment {
 public:
  explicit KnobEnvironment(const char* value) {
    if (const char* was = std::getenv("NEFI_CUDA_GRAPH")) was_ = was;
    setenv("NEFI_CUDA_GRAPH", value, 1);
  }
  ~KnobEnvironment() {
    if (was_)
      setenv("NEFI_CUDA_GRAPH", was_->c_str(), 1);
    else
      unsetenv("NEFI_CUDA_GRAPH");
  }
  KnobEnvironment(const KnobEnvironment&) = delete;
  KnobEnvironment& operator=(const KnobEnvironment&) = delete;

 private:
  std::optional<std::string> was_;
};

TEST(NefiStepGraphSwitch, AMalformedKnobNamesItself) {
  fk::KnobOverride none("NEFI_CUDA_GRAPH", std::nullopt);
  {
    KnobEnvironment off("off");
    EXPECT_FALSE(nefi::cuda_graph_enabled(std::nullopt));
  }
  KnobEnvironment bad("sometimes");
  const std::string e = error_of([] { nefi::cuda_graph_enabled(std::nullopt); });
  EXPECT_NE(e.find("NEFI_CUDA_GRAPH"), std::string::npos) << e;
  EXPECT_NE(e.find("sometimes"), std::string::npos) << e;
  // An explicit option does not read the knob at all.
  EXPECT_TRUE(nefi::cuda_graph_enabled(true));
  // Nor can an override be malformed.
  EXPECT_THROW(fk::KnobOverride("NEFI_CUDA_GRAPH", "maybe"), fk::Error);
}

TEST(NefiStepGraphSwitch, TheConfigKeyReachesTheSolverOptions) {
  nefi::RunConfig c = nefi::default_run_config("toy1d");
  EXPECT_FALSE(nefi::solver_options(c).cuda_graph.has_value());
  EXPECT_EQ(nefi::to_yaml(c).find("cuda_graph"), std::string::npos);  // hashes unchanged
  nefi::apply_set(c, "solver.cuda_graph=false");
  ASSERT_TRUE(c.cuda_graph.has_value());
  EXPECT_FALSE(*c.cuda_graph);
  EXPECT_EQ(nefi::solver_options(c).cuda_graph, std::optional<bool>(false));
  EXPECT_NE(nefi::to_yaml(c).find("cuda_graph: false"), std::string::npos);
  const std::string e = error_of([&] { nefi::apply_set(c, "solver.cuda_graph=maybe"); });
  EXPECT_NE(e.find("solver.cuda_graph"), std::string::npos) << e;
  EXPECT_NE(e.find("maybe"), std::string::npos) << e;
}

TEST(NefiStepGraphSwitch, RefusalsKnownBeforeAStep) {
  const Identity capturable(true), host_only(false);
  const std::string cpu = nefi::step_graph_refusal(capturable, fk::kCPU);
  EXPECT_NE(cpu.find("host"), std::string::npos) << cpu;
  const fk::Device gpu = fk::cuda_device(0);
  EXPECT_EQ(nefi::step_graph_refusal(capturable, gpu), "");
  const std::string op = nefi::step_graph_refusal(host_only, gpu);
  EXPECT_NE(op.find("host_identity"), std::string::npos) << op;
  EXPECT_NE(op.find("not graph-capturable"), std::string::npos) << op;
}

TEST(NefiStepGraphSwitch, DevicePiecesRefuseTheHost) {
  EXPECT_NE(error_of([] { nefi::StepGraph g(fk::kCPU, ""); }).find("a CUDA device"),
            std::string::npos);
  EXPECT_NE(error_of([] { nefi::DeviceStepBlock b(fk::kCPU, 1); }).find("a CUDA device"),
            std::string::npos);
  nefi::FusedOptimizer host_adam({fk::zeros({3})}, nefi::OptimizerOptions{});
  EXPECT_NE(error_of([&] { host_adam.begin_device_step(1e-3); }).find("a CUDA device"),
            std::string::npos);
  if (fk::cuda::device_count() > 0) return;
  // Without a usable device the block's buffer cannot be made.
  const std::string e = error_of([] { nefi::DeviceStepBlock b(fk::cuda_device(0), 1); });
  EXPECT_NE(e.find("cuda:0"), std::string::npos) << e;
}

TEST(NefiStepGraphSwitch, ARefusedGraphRunsEveryStepEagerly) {
  // A refused StepGraph never touches the device: its steps are the callable.
  nefi::StepGraph g(fk::cuda_device(0), "a reason given up front");
  int ran = 0;
  for (int i = 0; i < 3; ++i) g.run([&] { ++ran; }, i);
  EXPECT_EQ(ran, 3);
  EXPECT_EQ(g.eager_steps(), 3);
  EXPECT_EQ(g.graph_steps(), 0);
  EXPECT_NE(g.note().find("a reason given up front"), std::string::npos) << g.note();
}

}  // namespace
