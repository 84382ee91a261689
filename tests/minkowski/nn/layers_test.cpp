// Every layer's backward through the module API (f64, module_gradcheck over
// the input features and every parameter; Broadcast over both of its
// inputs), BatchNorm's running statistics
// against a plain computation, Dropout's mask, and layer input errors.
#include <gtest/gtest.h>

#include <cmath>

#include "fk/fk.h"
#include "minkowski/nn/blocks.h"
#include "minkowski/nn/conv.h"
#include "minkowski/nn/layers.h"
#include "minkowski/nn/module_gradcheck.h"
#include "minkowski/nn/nn_test_util.h"
#include "minkowski/nn/norm.h"
#include "minkowski/ops/conv.h"

namespace minkowski::nn {
namespace {

using testing::module_gradcheck;
using testing::random_sparse;

constexpr fk::DType kF64 = fk::DType::F64;

// x with its features made a fresh leaf that requires grad.
SparseTensor leaf_input(const SparseTensor& x) {
  return with_features(x, x.F().detach().clone().set_requires_grad(true));
}

// Checks `m` on x: the gradient of the features and of every parameter.
void expect_gradients(SparseModule& m, const SparseTensor& x0) {
  const SparseTensor x = leaf_input(x0);
  std::vector<fk::Tensor> leaves{x.F()};
  for (auto& p : m.parameters()) leaves.push_back(p);
  EXPECT_EQ(module_gradcheck([&] { return m.forward(x).F(); }, leaves), "");
}

ConvOptions conv_options(int64_t in, int64_t out, int32_t k, int32_t s, bool bias) {
  return {in, out, k, s, 1, bias, 2, kF64};
}

TEST(NnLayers, ConvolutionGradients) {
  const SparseTensor x = random_sparse(12, 2, 2, 5);
  auto sub = make_conv(conv_options(2, 3, 3, 1, true));
  expect_gradients(*sub, x);
  auto strided = make_conv(conv_options(2, 3, 2, 2, false));
  expect_gradients(*strided, x);
  auto matrix = make_conv(conv_options(2, 3, 1, 1, true));
  EXPECT_EQ(matrix->weight().dim(), 2);
  expect_gradients(*matrix, x);
}

TEST(NnLayers, TransposedConvolutionGradients) {
  const SparseTensor x = random_sparse(12, 2, 2, 6);
  fk::Tensor w = fk::test::random_tensor({4, 2, 2}, kF64);
  const SparseTensor coarse = convolution(x, w, fk::Tensor(), KernelRegion::cube({2}), {2});
  auto up = make_conv_transpose(conv_options(2, 3, 2, 2, true));
  expect_gradients(*up, coarse);
  EXPECT_EQ(up->forward(coarse).key(), x.key());  // back onto the encoder's map
  auto generative = make_generative_conv_transpose(conv_options(2, 2, 2, 2, false));
  expect_gradients(*generative, coarse);
  ChannelwiseConvolution cw(conv_options(2, 2, 3, 1, true));
  expect_gradients(cw, x);
  // A 1x1 unit-stride layer keeps a 2-D weight transposed too (the reference's
  // and fieldkit.minkowski's shape, so their checkpoints load), and runs on a
  // map other than the identity: onto given coordinates.
  for (auto one : {make_conv_transpose(conv_options(2, 3, 1, 1, true)),
                   make_generative_conv_transpose(conv_options(2, 3, 1, 1, false)),
                   make_conv(conv_options(2, 3, 1, 1, false))}) {
    EXPECT_EQ(one->weight().shape(), (fk::Dims{2, 3}));
    expect_gradients(*one, x);
  }
  const SparseTensor other = random_sparse(9, 2, 2, 7, 11);  // other rows, x's manager below
  const SparseTensor onto(fk::zeros({other.size(), 2}, {kF64}), other.C(), {1},
                          QuantizationMode::RandomSubsample, x.manager());
  ASSERT_NE(onto.key(), x.key());
  auto pointwise = make_conv(conv_options(2, 3, 1, 1, false));
  const SparseTensor y = pointwise->forward(x, onto.map_ref());
  EXPECT_EQ(y.key(), onto.key());
  EXPECT_EQ(y.size(), onto.size());
}

TEST(NnLayers, FeatureLayerGradients) {
  const SparseTensor x = random_sparse(10, 3, 2, 5);
  Linear linear(3, 2, true, kF64);
  expect_gradients(linear, x);
  BatchNorm bn(3, 1e-5, 0.1, kF64);
  expect_gradients(bn, x);
  bn.eval();
  expect_gradients(bn, x);
  InstanceNorm in(3, 1e-5, kF64);
  expect_gradients(in, random_sparse(8, 3, 2, 5, 4, kF64, 2));
  auto relu = make_leaky_relu(0.1);
  expect_gradients(*relu, x);
}

TEST(NnLayers, PoolingGradients) {
  const SparseTensor x = random_sparse(14, 2, 2, 6);
  Pooling avg(PoolingMode::Average, 2, 2);
  expect_gradients(avg, x);
  Pooling max(PoolingMode::Max, 3, 1);
  expect_gradients(max, x);
  GlobalPooling global(PoolingMode::Average);
  expect_gradients(global, random_sparse(6, 2, 2, 4, 3, kF64, 2));
  const SparseTensor coarse = avg.forward(x);
  Pooling unpool(PoolingMode::Average, 2, 2, true);
  expect_gradients(unpool, coarse);
  EXPECT_EQ(unpool.forward(coarse).key(), x.key());
}

TEST(NnLayers, ResidualBlockGradients) {
  const SparseTensor x = random_sparse(10, 2, 2, 5);
  ResidualBlock basic(BlockKind::Basic, {2, 3, 2, 1, 0.1, 2, kF64});
  expect_gradients(basic, x);
  ResidualBlock identity(BlockKind::Basic, {2, 2, 1, 1, 0.1, 2, kF64});
  expect_gradients(identity, x);
  ResidualBlock bottleneck(BlockKind::Bottleneck, {2, 1, 1, 1, 0.1, 2, kF64});
  expect_gradients(bottleneck, x);
}

TEST(NnLayers, BatchNormStatisticsMatchAPlainComputation) {
  const SparseTensor x = random_sparse(9, 2, 2, 5);
  BatchNorm bn(2, 1e-3, 0.25, kF64);
  const auto y = bn.forward(x).F().to_vector<double>();
  const auto f = x.F().to_vector<double>();
  const int64_t n = x.size();
  for (int c = 0; c < 2; ++c) {
    double mean = 0, ss = 0;
    for (int64_t i = 0; i < n; ++i) mean += f[i * 2 + c];
    mean /= n;
    for (int64_t i = 0; i < n; ++i) ss += (f[i * 2 + c] - mean) * (f[i * 2 + c] - mean);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(y[i * 2 + c], (f[i * 2 + c] - mean) / std::sqrt(ss / n + 1e-3), 1e-12);
    }
    EXPECT_NEAR(bn.running_mean().to_vector<double>()[c], 0.25 * mean, 1e-14);
    EXPECT_NEAR(bn.running_var().to_vector<double>()[c], 0.75 + 0.25 * ss / (n - 1), 1e-14);
  }
  bn.eval();
  const auto z = bn.forward(x).F().to_vector<double>();
  const auto rm = bn.running_mean().to_vector<double>();
  const auto rv = bn.running_var().to_vector<double>();
  for (int64_t i = 0; i < n * 2; ++i) {
    EXPECT_NEAR(z[i], (f[i] - rm[i % 2]) / std::sqrt(rv[i % 2] + 1e-3), 1e-12);
  }
  EXPECT_EQ(bn.named_buffers()[2].second.item(), 1.0);  // eval forward does not count
}

TEST(NnLayers, DropoutDropsInTrainModeOnly) {
  const SparseTensor x = with_features(random_sparse(200, 4, 2, 40), fk::ones({200, 4}, {kF64}));
  Dropout d(0.25);
  const auto y = d.forward(x).F().to_vector<double>();
  int64_t zeros = 0;
  for (double v : y) {
    if (v == 0.0) {
      ++zeros;
    } else {
      EXPECT_DOUBLE_EQ(v, 1.0 / 0.75);
    }
  }
  EXPECT_GT(zeros, 120);  // 800 draws at p = 0.25: 200 expected, sd 12
  EXPECT_LT(zeros, 280);
  d.eval();
  EXPECT_EQ(d.forward(x).F().to_vector<double>(), x.F().to_vector<double>());
  EXPECT_THROW(Dropout(1.5), fk::Error);
  EXPECT_THROW(Dropout(-0.1), fk::Error);
  const auto all = Dropout(1.0).forward(x).F().to_vector<double>();  // torch's: every one dropped
  EXPECT_EQ(all, std::vector<double>(all.size(), 0.0));
}

// Broadcast's backward in f64 over both inputs, and its values against a
// plain per-row computation.
TEST(NnLayers, BroadcastGradientsAndValues) {
  const SparseTensor x = leaf_input(random_sparse(9, 2, 2, 4, 3, kF64, 2));
  const SparseTensor pooled = GlobalPooling(PoolingMode::Average).forward(x);
  const SparseTensor glob = with_features(
      pooled,
      fk::test::random_tensor(pooled.F().shape(), kF64, -1.0, 1.0, 8).set_requires_grad(true));
  const auto xb = x.C().to_vector<int32_t>();
  const auto gb = glob.C().to_vector<int32_t>();
  const auto xf = x.F().to_vector<double>(), gf = glob.F().to_vector<double>();
  for (BroadcastMode mode :
       {BroadcastMode::Add, BroadcastMode::Multiply, BroadcastMode::Concatenate}) {
    Broadcast b(mode);
    EXPECT_EQ(module_gradcheck([&] { return b(x, glob).F(); }, {x.F(), glob.F()}), "");
    const fk::Tensor y = b(x, glob).F();
    EXPECT_EQ(y.size(1), mode == BroadcastMode::Concatenate ? 4 : 2);
    const auto yv = y.to_vector<double>();
    for (int64_t i = 0; i < x.size(); ++i) {
      int64_t g = 0;
      while (gb[3 * g] != xb[3 * i]) ++g;  // the glob row of i's batch item
      for (int c = 0; c < 2; ++c) {
        const double a = xf[2 * i + c], v = gf[2 * g + c];
        switch (mode) {
          case BroadcastMode::Add:
            EXPECT_EQ(yv[2 * i + c], a + v);
            break;
          case BroadcastMode::Multiply:
            EXPECT_EQ(yv[2 * i + c], a * v);
            break;
          case BroadcastMode::Concatenate:
            EXPECT_EQ(yv[4 * i + c], a);
            EXPECT_EQ(yv[4 * i + 2 + c], v);
            break;
        }
      }
    }
  }
  const SparseTensor other = random_sparse(9, 2, 2, 4, 5, kF64, 2);
  EXPECT_THROW(Broadcast(BroadcastMode::Add)(other, glob), fk::Error);  // another manager
}

TEST(NnLayers, WrongInputsThrow) {
  const SparseTensor x = random_sparse(10, 3, 2, 5);
  auto conv = make_conv(conv_options(2, 3, 3, 1, false));
  EXPECT_THROW(conv->forward(x), fk::Error);
  EXPECT_THROW(make_conv(conv_options(0, 3, 3, 1, false)), fk::Error);
  EXPECT_THROW(BatchNorm(4).forward(x), fk::Error);
  EXPECT_THROW(Linear(4, 2).forward(x), fk::Error);
  const SparseTensor other = random_sparse(10, 3, 2, 5, 9);
  EXPECT_THROW(add(x, other), fk::Error);                                       // another manager
  EXPECT_THROW(cat(x, Pooling(PoolingMode::Sum, 2, 2).forward(x)), fk::Error);  // another map
}

}  // namespace
}  // namespace minkowski::nn
