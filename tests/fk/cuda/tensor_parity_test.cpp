// Tensor-level parity: fk ops on CUDA tensors against the same ops on the CPU,
// through the dispatch in src/fk/ops (the launcher-level harness is
// parity_test.cpp). Skips itself where no GPU is present.
#include <gtest/gtest.h>

#include "../test_util.h"
#include "fk/cuda/runtime.h"

namespace fk {
namespace {

#define SKIP_WITHOUT_GPU() \
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device"

const Device kGpu = cuda_device(0);

void expect_same(const Tensor& gpu, const Tensor& cpu, double tol) {
  ASSERT_TRUE(gpu.device().is_cuda());
  ASSERT_EQ(gpu.shape(), cpu.shape());
  ASSERT_EQ(gpu.dtype(), cpu.dtype());
  auto g = gpu.to(kCPU).to_vector<double>(), c = cpu.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], c[i], tol * (1 + std::abs(c[i]))) << i;
}

TEST(CudaTensor, CopiesFillAndConversions) {
  SKIP_WITHOUT_GPU();
  Tensor x = test::random_tensor({5, 7}, DType::F32);
  Tensor g = x.to(kGpu);
  expect_same(g, x, 0);
  expect_same(g.t().contiguous(), x.t().contiguous(), 0);
  for (DType dt : {DType::F16, DType::BF16, DType::F64, DType::I32}) {
    expect_same(g.to(dt), x.to(dt), 0);
  }
  expect_same(full({3, 2}, 2.5, {DType::F64, kGpu}), full({3, 2}, 2.5, {DType::F64}), 0);
}

TEST(CudaTensor, UnaryBinaryWhereSum) {
  SKIP_WITHOUT_GPU();
  Tensor a = test::random_tensor({4, 6}, DType::F32, 0.5, 2, 1);
  Tensor b = test::random_tensor({6}, DType::F32, 0.5, 2, 2);
  Tensor ga = a.to(kGpu), gb = b.to(kGpu);
  for (UnaryOp op : {UnaryOp::Exp, UnaryOp::Log, UnaryOp::Tanh, UnaryOp::Gelu, UnaryOp::Sqrt}) {
    expect_same(unary(op, ga.t()), unary(op, a.t()), 1e-5);
  }
  for (BinaryOp op : {BinaryOp::Add, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Maximum}) {
    expect_same(binary(op, ga, gb), binary(op, a, b), 1e-6);
  }
  expect_same(lt(ga, gb).to(DType::F32), lt(a, b).to(DType::F32), 0);
  expect_same(where(gt(ga, gb), ga, gb), where(gt(a, b), a, b), 0);
  expect_same(addcmul(ga, ga, gb, 0.5), addcmul(a, a, b, 0.5), 1e-6);
  expect_same(sum(ga, {0}), sum(a, {0}), 1e-5);
  expect_same(sum(ga), sum(a), 1e-5);
}

TEST(CudaTensor, ReductionsAndSoftmax) {
  SKIP_WITHOUT_GPU();
  Tensor a = test::random_tensor({5, 9}, DType::F32, -2, 2, 5);
  Tensor g = a.to(kGpu);
  expect_same(mean(g, {1}), mean(a, {1}), 1e-6);
  expect_same(amax(g, {0}, true), amax(a, {0}, true), 0);
  expect_same(amin(g), amin(a), 0);
  auto [gv, gi] = max(g, 1);
  auto [cv, ci] = max(a, 1);
  expect_same(gv, cv, 0);
  expect_same(gi, ci, 0);
  expect_same(argmin(g, 0), argmin(a, 0), 0);
  expect_same(softmax(g, 0), softmax(a, 0), 1e-6);
  expect_same(log_softmax(g, 1), log_softmax(a, 1), 1e-6);
  // Gradients of max along a dim and of softmax match the CPU's.
  auto grads = [&](Device d) {
    Tensor x = a.to(d).detach().set_requires_grad(true);
    Tensor y = add(sum(max(x, 1).first), sum(mul(softmax(x, 0), x)));
    y.backward();
    return x.grad();
  };
  expect_same(grads(kGpu), grads(kCPU), 1e-5);
}

TEST(CudaTensor, MatmulAndAutograd) {
  SKIP_WITHOUT_GPU();
  Tensor a = test::random_tensor({3, 5}, DType::F64, -1, 1, 3);
  Tensor w = test::random_tensor({4, 5}, DType::F64, -1, 1, 4);
  expect_same(matmul(a.to(kGpu), w.to(kGpu).t()), matmul(a, w.t()), 1e-12);
  // The same small graph on both devices gives the same gradients.
  auto grads = [&](Device d) {
    Tensor x = a.to(d).detach().set_requires_grad(true);
    Tensor y = sum(tanh(linear(x, w.to(d))));
    y.backward();
    return x.grad();
  };
  expect_same(grads(kGpu), grads(kCPU), 1e-10);
}

}  // namespace
}  // namespace fk
