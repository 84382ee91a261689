// The autograd engine across devices: a backward seed on another device than
// its output, and a backward node that hands an input a gradient on another
// device than the input's (a host buffer for a CUDA tensor: the bug class of
// docs/performance.md "Device inputs that reached host allocations or host
// loops (session 17)"), are refused by name where they enter, naming the
// node, not found later as a host read of device memory by the next node's
// kernel or an optimizer. A well-behaved graph across devices (to() both
// ways) still gives each leaf its gradient on its own device. Skips without a
// usable device (scripts/gpu-check runs it on one).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/test_util.h"
#include "parity.h"

namespace fk {
namespace {

using cuda_parity::kGpu;
using test::error_of;

// A node that hands its input a gradient made on the host, whatever the
// input's device: the mistake the engine must name.
struct HostGradientNode : autograd::Node {
  Dims shape;
  const char* name() const override { return "HostGradientNode"; }
  std::vector<Tensor> apply(std::vector<Tensor>&&) override { return {ones(shape)}; }
};

Tensor through_host_gradient_node(const Tensor& x) {
  Tensor out = x.detach().clone();
  auto node = std::make_shared<HostGradientNode>();
  node->shape = x.shape();
  autograd::record(node, {x}, out);
  return out;
}

TEST(AutogradDevice, AGradientOnAnotherDeviceThanItsLeafIsRefused) {
  FK_SKIP_WITHOUT_GPU();
  Tensor w = full(Dims{3}, 2.0, {DType::F32, kGpu}).set_requires_grad(true);
  const std::string msg = error_of([&] { sum(through_host_gradient_node(w)).backward(); });
  EXPECT_NE(msg.find("backward of HostGradientNode"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the gradient of input 0 on its device cuda:0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("one on cpu"), std::string::npos) << msg;
  EXPECT_FALSE(w.grad().defined());
}

// The same between two nodes: the node after it (a device op's backward,
// which launches a kernel on its gradient's pointer) never sees it.
TEST(AutogradDevice, AGradientOnAnotherDeviceThanItsInputNodeIsRefused) {
  FK_SKIP_WITHOUT_GPU();
  Tensor w = full(Dims{3}, 2.0, {DType::F32, kGpu}).set_requires_grad(true);
  const std::string msg = error_of([&] { sum(through_host_gradient_node(exp(w))).backward(); });
  EXPECT_NE(msg.find("backward of HostGradientNode"), std::string::npos) << msg;
  EXPECT_NE(msg.find("on its device cuda:0"), std::string::npos) << msg;
  EXPECT_FALSE(w.grad().defined());
}

TEST(AutogradDevice, ASeedOnAnotherDeviceThanItsOutputIsRefused) {
  FK_SKIP_WITHOUT_GPU();
  Tensor w = full(Dims{3}, 2.0, {DType::F32, kGpu}).set_requires_grad(true);
  const Tensor y = mul(w, w);
  const std::string msg = error_of([&] { y.backward(ones(Dims{3})); });
  EXPECT_NE(msg.find("a gradient on the output's device cuda:0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("one on cpu"), std::string::npos) << msg;
  y.backward(ones(Dims{3}, {DType::F32, kGpu}));
  EXPECT_EQ(w.grad().device(), kGpu);
  EXPECT_EQ(w.grad().to_vector<float>(), std::vector<float>(3, 4.f));  // d(w^2)/dw = 2w
}

// Leaves on both devices joined by to(): each gradient arrives on its leaf's
// device with the values of d/da sum(a * b) = b and d/db = a.
TEST(AutogradDevice, LeavesOnBothDevicesGetTheirGradientsWhereTheyLive) {
  FK_SKIP_WITHOUT_GPU();
  Tensor a = from_vector(std::vector<float>{1, 2, 3}).set_requires_grad(true);
  Tensor b = from_vector(std::vector<float>{4, 5, 6}, Dims{3}, kGpu).set_requires_grad(true);
  sum(mul(a.to(kGpu), b)).backward();
  EXPECT_EQ(a.grad().device(), kCPU);
  EXPECT_EQ(b.grad().device(), kGpu);
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(b.grad().to_vector<float>(), (std::vector<float>{1, 2, 3}));
}

}  // namespace
}  // namespace fk
