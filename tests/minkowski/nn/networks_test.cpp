// MinkUNet and the sparse ResNet: the named layouts, output shapes and maps,
// parameter counts against a count written out from the layout, and
// gradients through a whole (tiny, f64) U-Net.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fk/fk.h"
#include "fk/test_util.h"
#include "minkowski/nn/minkunet.h"
#include "minkowski/nn/module_gradcheck.h"
#include "minkowski/nn/nn_test_util.h"
#include "minkowski/nn/resnet.h"

namespace minkowski::nn {
namespace {

using testing::random_sparse;

MinkUNetOptions tiny_unet() {
  MinkUNetOptions o = minkunet_options("14", 2, 3, 2);
  o.planes = {3, 4, 4, 5, 4, 4, 3, 3};
  o.init_dim = 3;
  o.dtype = fk::DType::F64;
  return o;
}

// Parameters of a basic block (in -> p): two 3^D convs, two BNs, maybe a shortcut.
int64_t basic_block_params(int64_t in, int64_t p, int64_t k3) {
  return in * p * k3 + p * p * k3 + 4 * p + (in != p ? in * p + 2 * p : 0);
}

TEST(NnNetworks, MinkUNetVariantsFollowTheLayouts) {
  EXPECT_EQ(minkunet_options("34C", 3, 20).layers, (std::array<int, 8>{2, 3, 4, 6, 2, 2, 2, 2}));
  // Depth 34's letters are its own (the reference's): 34C is the default planes.
  EXPECT_EQ(minkunet_options("34C", 3, 20).planes,
            (std::array<int64_t, 8>{32, 64, 128, 256, 256, 128, 96, 96}));
  EXPECT_EQ(minkunet_options("34A", 3, 20).planes,
            (std::array<int64_t, 8>{32, 64, 128, 256, 256, 128, 64, 64}));
  EXPECT_EQ(minkunet_options("34B", 3, 20).planes,
            (std::array<int64_t, 8>{32, 64, 128, 256, 256, 128, 64, 32}));
  EXPECT_EQ(minkunet_options("14C", 3, 20).planes,
            (std::array<int64_t, 8>{32, 64, 128, 256, 192, 192, 128, 128}));
  EXPECT_THROW(minkunet_options("18C", 3, 20), fk::Error);  // not a reference class
  EXPECT_THROW(minkunet_options("34D", 3, 20), fk::Error);
  EXPECT_THROW(minkunet_options("14AB", 3, 20), fk::Error);
  EXPECT_EQ(minkunet_options("18", 3, 20).planes,
            (std::array<int64_t, 8>{32, 64, 128, 256, 256, 128, 96, 96}));
  EXPECT_EQ(minkunet_options("14A", 3, 20).planes[4], 128);
  EXPECT_EQ(minkunet_options("14D", 3, 20).planes[7], 384);
  EXPECT_THROW(minkunet_options("50", 3, 20), fk::Error);
  EXPECT_THROW(minkunet_options("18E", 3, 20), fk::Error);
  EXPECT_THROW(resnet_options("34", 3, 20), fk::Error);
}

TEST(NnNetworks, MinkUNet14ParameterCountMatchesTheLayout) {
  const MinkUNetOptions o = minkunet_options("14A", 3, 20, 3);
  MinkUNet net(o);
  const int64_t k3 = 27, k2 = 8;
  int64_t n = 3 * 32 * 125 + 2 * 32;  // stem conv k5 + BN
  int64_t c = 32;
  std::array<int64_t, 5> skip{32, 0, 0, 0, 0};
  for (int i = 0; i < 4; ++i) {
    n += c * c * k2 + 2 * c + basic_block_params(c, o.planes[i], k3);
    c = skip[i + 1] = o.planes[i];
  }
  for (int i = 0; i < 4; ++i) {
    const int64_t p = o.planes[4 + i];
    n += c * p * k2 + 2 * p + basic_block_params(p + skip[3 - i], p, k3);
    c = p;
  }
  n += c * 20 + 20;  // 1x1 head with bias
  EXPECT_EQ(net.num_parameters(), n);
}

// The reference's weight_initialization: every regular convolution of a
// MinkUNet or ResNet drawn from N(0, 2 / fan_out) (He's: C_out K for a kernel,
// C_in for a 1x1 matrix, as its kaiming_normal_ reads one); the transposed ones
// keep their uniform bound 1 / sqrt(C_out K); a channelwise layer's is
// 1 / sqrt(C K).
TEST(NnNetworks, ConvolutionWeightsStartAsTheReferences) {
  fk::manual_seed(5);
  MinkUNet net(minkunet_options("14A", 3, 20, 3));
  int checked = 0;
  for (const auto& [name, w] : net.named_parameters()) {
    if (name.find("weight") == std::string::npos || w.dim() < 2 || w.numel() < 1500) continue;
    const bool up = name.rfind("up", 0) == 0 && name.find("_conv.weight") == 3;  // upN_conv
    const int64_t fan = w.dim() == 3 ? w.size(0) * w.size(2) : w.size(0);
    const std::vector<double> v = w.to_vector<double>();
    double ss = 0;
    for (double e : v) ss += e * e;
    // A uniform in +-b has rms b / sqrt(3).
    const double want = up ? 1 / std::sqrt(3.0 * static_cast<double>(fan))
                           : std::sqrt(2.0 / static_cast<double>(fan));
    EXPECT_NEAR(std::sqrt(ss / static_cast<double>(v.size())), want, 0.05 * want) << name;
    ++checked;
  }
  EXPECT_GT(checked, 5);
  ChannelwiseConvolution cw({64, 64, 3, 1, 1, false, 3, fk::DType::F64});
  const std::vector<double> v = cw.weight().to_vector<double>();
  double mx = 0;
  for (double e : v) mx = std::max(mx, std::abs(e));
  EXPECT_LE(mx, 1 / std::sqrt(64.0 * 27));
  EXPECT_GT(mx, 0.9 / std::sqrt(64.0 * 27));
}

TEST(NnNetworks, MinkUNetLabelsEveryInputRow) {
  fk::manual_seed(0);
  MinkUNet net(tiny_unet());
  const SparseTensor x = random_sparse(40, 2, 2, 20, 3, fk::DType::F64, 2);
  const SparseTensor y = net.forward(x);
  EXPECT_EQ(y.key(), x.key());
  EXPECT_EQ(y.F().shape(), (fk::Dims{x.size(), 3}));
}

TEST(NnNetworks, MinkUNetGradients) {
  fk::manual_seed(0);
  MinkUNet net(tiny_unet());
  const SparseTensor x0 = random_sparse(16, 2, 2, 40);
  const SparseTensor x =
      SparseTensor(x0.F().detach().clone().set_requires_grad(true), x0.key(), x0.manager());
  std::vector<fk::Tensor> leaves{x.F()};
  // BN biases away from 0 so that no ReLU sits on its kink (a level with one
  // row normalizes it to exactly the bias).
  unsigned seed = 20;
  for (auto& [name, p] : net.named_parameters()) {
    if (name.ends_with("norm.bias")) {
      fk::autograd::NoGradGuard no_grad;
      p.copy_(fk::test::random_tensor(p.shape(), fk::DType::F64, 0.1, 0.5, seed++));
    }
  }
  for (auto& [name, p] : net.named_parameters()) {
    if (name == "stem_conv.weight" || name == "down4_blocks.0.conv2.weight" ||
        name == "up1_norm.bias" || name == "head.weight") {
      leaves.push_back(p);
    }
  }
  ASSERT_EQ(leaves.size(), 5u);
  EXPECT_EQ(testing::module_gradcheck([&] { return net.forward(x).F(); }, leaves), "");
}

TEST(NnNetworks, ResNetGivesOneRowOfLogitsPerItem) {
  fk::manual_seed(0);
  ResNetOptions o = resnet_options("14", 2, 5, 2);
  o.planes = {4, 4, 8, 8};
  o.init_dim = 4;
  ResNet net(o);
  const SparseTensor x = random_sparse(200, 2, 2, 64, 3, fk::DType::F32, 3);
  EXPECT_EQ(net.forward(x).F().shape(), (fk::Dims{3, 5}));
}

}  // namespace
}  // namespace minkowski::nn
