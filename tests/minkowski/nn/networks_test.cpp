// MinkUNet and the sparse ResNet: the named layouts, output shapes and maps,
// parameter counts against a count written out from the layout, and
// gradients through a whole (tiny, f64) U-Net.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

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
  EXPECT_THROW(minkunet_options("18E", 3, 20), fk::Error);
  EXPECT_THROW(minkunet_options("50A", 3, 20), fk::Error);  // the bottlenecks have no letters
  EXPECT_THROW(minkunet_options("1", 3, 20), fk::Error);
  EXPECT_THROW(minkunet_options("", 3, 20), fk::Error);
  EXPECT_EQ(minkunet_options("34", 3, 20).block, BlockKind::Basic);
  EXPECT_EQ(minkunet_options("34A", 3, 20).block, BlockKind::Basic);
  const MinkUNetOptions u50 = minkunet_options("50", 3, 20), u101 = minkunet_options("101", 3, 20);
  EXPECT_EQ(u50.block, BlockKind::Bottleneck);
  EXPECT_EQ(u50.layers, (std::array<int, 8>{2, 3, 4, 6, 2, 2, 2, 2}));
  EXPECT_EQ(u50.planes, (std::array<int64_t, 8>{32, 64, 128, 256, 256, 128, 96, 96}));
  EXPECT_EQ(u101.block, BlockKind::Bottleneck);
  EXPECT_EQ(u101.layers, (std::array<int, 8>{2, 3, 4, 23, 2, 2, 2, 2}));
}

TEST(NnNetworks, ResNetVariantsFollowTheLayouts) {
  const std::vector<std::tuple<std::string, BlockKind, std::array<int, 4>>> named{
      {"14", BlockKind::Basic, {1, 1, 1, 1}},
      {"18", BlockKind::Basic, {2, 2, 2, 2}},
      {"34", BlockKind::Basic, {3, 4, 6, 3}},
      {"50", BlockKind::Bottleneck, {3, 4, 6, 3}},
      {"101", BlockKind::Bottleneck, {3, 4, 23, 3}}};
  for (const auto& [name, block, layers] : named) {
    const ResNetOptions o = resnet_options(name, 3, 10);
    EXPECT_EQ(o.block, block) << name;
    EXPECT_EQ(o.layers, layers) << name;
    EXPECT_EQ(o.planes, (std::array<int64_t, 4>{64, 128, 256, 512})) << name;
  }
  EXPECT_THROW(resnet_options("152", 3, 20), fk::Error);
  EXPECT_THROW(resnet_options("14A", 3, 20), fk::Error);
}

// Parameters of a bottleneck (in -> 4p): 1x1, 3^D, 1x1 convs, three BNs, and
// a 1x1 shortcut with its BN when the block strides or changes the width.
int64_t bottleneck_params(int64_t in, int64_t p, int64_t k3, bool strided) {
  return in * p + p * p * k3 + p * 4 * p + 2 * (p + p + 4 * p) +
         (strided || in != 4 * p ? in * 4 * p + 2 * 4 * p : 0);
}

// A stage of `layers` blocks, the first strided or not (bottlenecks only).
int64_t stage_params(BlockKind block, int64_t in, int64_t p, int layers, int64_t k3,
                     bool strided = false) {
  int64_t n = 0;
  for (int b = 0; b < layers; ++b) {
    n += block == BlockKind::Basic ? basic_block_params(in, p, k3)
                                   : bottleneck_params(in, p, k3, strided && b == 0);
    in = p * block_expansion(block);
  }
  return n;
}

// MinkUNet50's layout on narrow planes (the decoder concatenates 4 x planes
// of the encoder; the head reads 4 x the last planes).
TEST(NnNetworks, MinkUNet50ParameterCountMatchesTheLayout) {
  MinkUNetOptions o = minkunet_options("50", 3, 7, 3);
  o.planes = {4, 4, 8, 8, 8, 4, 4, 4};
  o.init_dim = 6;
  MinkUNet net(o);
  const int64_t k3 = 27, k2 = 8;
  int64_t n = 3 * 6 * 125 + 2 * 6;
  std::array<int64_t, 5> skip{6, 0, 0, 0, 0};
  for (int i = 0; i < 4; ++i) {
    const int64_t c = skip[i];
    n += c * c * k2 + 2 * c + stage_params(o.block, c, o.planes[i], o.layers[i], k3);
    skip[i + 1] = 4 * o.planes[i];
  }
  int64_t c = skip[4];
  for (int i = 0; i < 4; ++i) {
    const int64_t p = o.planes[4 + i];
    n += c * p * k2 + 2 * p + stage_params(o.block, p + skip[3 - i], p, o.layers[4 + i], k3);
    c = 4 * p;
  }
  n += c * 7 + 7;
  EXPECT_EQ(net.num_parameters(), n);
  const SparseTensor x = random_sparse(60, 3, 3, 12, 3, fk::DType::F32, 2);
  EXPECT_EQ(net.forward(x).F().shape(), (fk::Dims{x.size(), 7}));
}

// ResNet50's layout on narrow planes: stem, four bottleneck stages, the
// tail's k3 conv and BN on 4 x the last planes, the linear head. (As named,
// planes 64..512, its tail alone holds 2048^2 x 27 weights, as the
// reference's.)
TEST(NnNetworks, ResNet50ParameterCountMatchesTheLayout) {
  ResNetOptions o = resnet_options("50", 3, 10);
  o.planes = {4, 8, 8, 16};
  o.init_dim = 6;
  const ResNet net(o);
  const int64_t k3 = 27;
  int64_t n = 3 * 6 * k3 + 2 * 6;
  int64_t c = 6;
  for (int i = 0; i < 4; ++i) {
    n += stage_params(o.block, c, o.planes[i], o.layers[i], k3, /*strided=*/true);
    c = 4 * o.planes[i];
  }
  EXPECT_EQ(c, 64);
  n += c * c * k3 + 2 * c + c * 10 + 10;
  EXPECT_EQ(net.num_parameters(), n);
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
  for (const std::string name : {"14", "50"}) {
    fk::manual_seed(0);
    ResNetOptions o = resnet_options(name, 2, 5, 2);
    o.planes = {4, 4, 8, 8};
    o.init_dim = 4;
    ResNet net(o);
    const SparseTensor x = random_sparse(200, 2, 2, 64, 3, fk::DType::F32, 3);
    EXPECT_EQ(net.forward(x).F().shape(), (fk::Dims{3, 5})) << name;
  }
}

}  // namespace
}  // namespace minkowski::nn
