// Module bookkeeping: dotted names in registration order, train/eval reaching
// every descendant, zero_grad, to(device) on the CPU side, and the errors of
// bad registrations.
#include "minkowski/nn/module.h"

#include <gtest/gtest.h>

#include "fk/fk.h"
#include "minkowski/nn/blocks.h"
#include "minkowski/nn/layers.h"
#include "minkowski/nn/norm.h"

namespace minkowski::nn {
namespace {

class Leaf : public Module {
 public:
  Leaf() {
    register_parameter("w", fk::zeros({2, 3}));
    register_buffer("count", fk::zeros({1}));
  }
  void add_twice() { register_parameter("w", fk::zeros({1})); }
  void add_dotted() { register_parameter("a.b", fk::zeros({1})); }
};

class Tree : public Module {
 public:
  Tree() {
    register_parameter("bias", fk::zeros({3}));
    register_module("left", std::make_shared<Leaf>());
    register_module("right", std::make_shared<Leaf>());
  }
};

TEST(NnModule, NamesAreDottedPathsInRegistrationOrder) {
  Tree t;
  std::vector<std::string> names;
  for (auto& [n, p] : t.named_parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"bias", "left.w", "right.w"}));
  names.clear();
  for (auto& [n, b] : t.state()) names.push_back(n);
  EXPECT_EQ(names,
            (std::vector<std::string>{"bias", "left.w", "right.w", "left.count", "right.count"}));
  EXPECT_EQ(t.num_parameters(), 3 + 6 + 6);
  for (auto& p : t.parameters()) EXPECT_TRUE(p.requires_grad());
  for (auto& [n, b] : t.named_buffers()) EXPECT_FALSE(b.requires_grad()) << n;
}

TEST(NnModule, TrainAndEvalReachEveryDescendant) {
  Tree t;
  t.eval();
  EXPECT_FALSE(t.training());
  for (auto& [n, c] : t.children()) EXPECT_FALSE(c->training()) << n;
  t.train();
  for (auto& [n, c] : t.children()) EXPECT_TRUE(c->training()) << n;
}

TEST(NnModule, ZeroGradClearsEveryGradient) {
  Linear l(3, 2, true, fk::DType::F64);
  const auto x = fk::ones({4, 3}, {fk::DType::F64});
  fk::sum(l.forward_features(x)).backward();
  for (auto& p : l.parameters()) EXPECT_TRUE(p.grad().defined());
  l.zero_grad();
  for (auto& p : l.parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(NnModule, BadRegistrationsThrow) {
  Leaf l;
  EXPECT_THROW(l.add_twice(), fk::Error);
  EXPECT_THROW(l.add_dotted(), fk::Error);
}

TEST(NnModule, ToTheCpuKeepsEveryHandleAndValue) {
  BatchNorm bn(3, 1e-5, 0.1, fk::DType::F64);
  const NamedTensors before = bn.state();
  const std::vector<double> w = before[0].second.to_vector<double>();
  bn.to(fk::kCPU);
  const NamedTensors after = bn.state();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(after[i].second.is_same(before[i].second));
  EXPECT_EQ(after[0].second.to_vector<double>(), w);
  EXPECT_TRUE(after[0].second.requires_grad());
}

TEST(NnModule, ToAnAbsentDeviceIsAnErrorThatLeavesTheModuleOnTheCpu) {
  // No machine has 64 CUDA devices; a CPU-only build has none.
  Linear l(3, 2, true, fk::DType::F32);
  try {
    l.to(fk::cuda_device(63));
    FAIL() << "no error";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("an available device"), std::string::npos) << e.what();
  }
  for (const auto& p : l.parameters()) EXPECT_TRUE(p.device().is_cpu());
}

TEST(NnModule, BlocksNameTheirLayers) {
  ResidualBlock b(BlockKind::Bottleneck, {4, 2, 2, 1, 0.1, 2, fk::DType::F32});
  std::vector<std::string> names;
  for (auto& [n, p] : b.named_parameters()) names.push_back(n);
  EXPECT_EQ(names,
            (std::vector<std::string>{"conv1.weight", "norm1.weight", "norm1.bias", "conv2.weight",
                                      "norm2.weight", "norm2.bias", "conv3.weight", "norm3.weight",
                                      "norm3.bias", "downsample_conv.weight",
                                      "downsample_norm.weight", "downsample_norm.bias"}));
  EXPECT_EQ(b.out_channels(), 8);
}

}  // namespace
}  // namespace minkowski::nn
