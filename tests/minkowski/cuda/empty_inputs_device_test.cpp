// Every minkowski op on a SparseTensor with no points, its features on the
// GPU, behaves as on the CPU: the same output shape and dtype (on the
// device), a backward that gives empty feature gradients and zero weight
// gradients, or the same fk::Error where the CPU refuses. Empty crops and
// batches happen in real scenes; on a GPU each such call would otherwise
// launch a 0-block grid (an invalid configuration) or size a buffer by 0.
// Runs with host coordinates and with device coordinates, through both
// dataflows, the per-offset and fused copies, and deterministic mode.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "device_test_util.h"
#include "fk/test_util.h"
#include "minkowski/minkowski.h"
#include "minkowski/nn/minkunet.h"
#include "minkowski/nn/norm.h"

namespace minkowski {
namespace {

using cuda_test::kGpu;
using cuda_test::KnobOverride;

constexpr int64_t kChannels = 2;

// The empty input: no points, kChannels features, 3-D, its features (and,
// when asked, its coordinates) on `device`.
struct Empty {
  fk::Tensor features;
  SparseTensor x;
};
Empty empty_input(fk::Device device, bool device_coordinates) {
  fk::Tensor f = cuda_test::leaf(fk::zeros({0, kChannels}), device);
  fk::Tensor c = fk::empty({0, 4}, {fk::DType::I32});
  if (device_coordinates) c = c.to(device);
  return {f, SparseTensor(f, c)};
}

// The op's outcome on one device: its output features (moved to the CPU)
// and the gradients of the input features and of every weight, or the
// error it threw.
struct Outcome {
  std::optional<std::string> error;
  fk::Dims out_shape;
  fk::DType out_dtype = fk::DType::F32;
  bool on_device = false;
  std::vector<double> out;
  fk::Dims feature_grad_shape;
  std::vector<std::vector<double>> weight_grads;
};

// An op from the input and its weights (made by the harness on the device
// under test) to the output features.
using Op = std::function<fk::Tensor(const SparseTensor&, const std::vector<fk::Tensor>&)>;

Outcome run(const Op& op, const std::vector<fk::Dims>& weights, fk::Device device,
            bool device_coordinates) {
  Outcome o;
  Empty in = empty_input(device, device_coordinates);
  std::vector<fk::Tensor> w;
  for (const fk::Dims& s : weights)
    w.push_back(cuda_test::leaf(cuda_test::random_values(s, 0.5, 11), device));
  try {
    fk::Tensor y = op(in.x, w);
    o.out_shape = y.shape();
    o.out_dtype = y.dtype();
    o.on_device = y.device() == device;
    o.out = y.to(fk::DType::F64).to(fk::kCPU).to_vector<double>();
    if (y.requires_grad()) fk::sum(y).backward();
  } catch (const fk::Error& e) {
    o.error = e.what();
    return o;
  }
  if (in.features.grad().defined()) o.feature_grad_shape = in.features.grad().shape();
  for (const fk::Tensor& t : w)
    o.weight_grads.push_back(t.grad().defined() ? t.grad().to(fk::kCPU).to_vector<double>()
                                                : std::vector<double>{});
  return o;
}

void expect_device_matches_cpu(const std::string& what, const std::vector<fk::Dims>& weights,
                               const Op& op) {
  for (bool device_coordinates : {false, true}) {
    SCOPED_TRACE(what + (device_coordinates ? ", device coordinates" : ", host coordinates"));
    const Outcome cpu = run(op, weights, fk::kCPU, false);
    const Outcome gpu = run(op, weights, kGpu, device_coordinates);
    if (cpu.error) {
      ASSERT_TRUE(gpu.error.has_value()) << "the CPU refuses (" << *cpu.error << ")";
      EXPECT_EQ(*gpu.error, *cpu.error);
      continue;
    }
    ASSERT_FALSE(gpu.error.has_value()) << *gpu.error;
    EXPECT_EQ(gpu.out_shape, cpu.out_shape);
    EXPECT_EQ(gpu.out_dtype, cpu.out_dtype);
    EXPECT_TRUE(gpu.on_device);
    EXPECT_EQ(gpu.out, cpu.out);
    EXPECT_EQ(gpu.feature_grad_shape, cpu.feature_grad_shape);
    EXPECT_EQ(gpu.weight_grads, cpu.weight_grads);
  }
}

const KernelRegion k3 = KernelRegion::cube({3}), k2 = KernelRegion::cube({2});

void every_convolution() {
  const fk::Dims w27{27, kChannels, 3}, w8{8, kChannels, 3}, bias{3};
  expect_device_matches_cpu("submanifold", {w27, bias}, [](const SparseTensor& x, const auto& w) {
    return convolution(x, w[0], w[1], k3).F();
  });
  expect_device_matches_cpu("dilated", {w27, bias}, [](const SparseTensor& x, const auto& w) {
    return convolution(x, w[0], w[1], KernelRegion::cube({3}, {2})).F();
  });
  expect_device_matches_cpu("strided", {w8, bias}, [](const SparseTensor& x, const auto& w) {
    return convolution(x, w[0], w[1], k2, {2}).F();
  });
  expect_device_matches_cpu("strided then transposed", {w8, {8, 3, kChannels}},
                            [](const SparseTensor& x, const auto& w) {
                              const SparseTensor down = convolution(x, w[0], fk::Tensor(), k2, {2});
                              return convolution_transpose(down, w[1], fk::Tensor(), k2, {2}).F();
                            });
  expect_device_matches_cpu(
      "generative transposed", {w8, {27, 3, kChannels}}, [](const SparseTensor& x, const auto& w) {
        const SparseTensor down = convolution(x, w[0], fk::Tensor(), k2, {2});
        return generative_convolution_transpose(down, w[1], fk::Tensor(), k3, {2}).F();
      });
  expect_device_matches_cpu("1x1", {{kChannels, 3}, bias},
                            [](const SparseTensor& x, const auto& w) {
                              return convolution(x, w[0], w[1], KernelRegion::cube({1})).F();
                            });
  expect_device_matches_cpu("channelwise", {{27, kChannels}},
                            [](const SparseTensor& x, const auto& w) {
                              return channelwise_convolution(x, w[0], fk::Tensor(), k3).F();
                            });
  expect_device_matches_cpu("channelwise strided", {{8, kChannels}},
                            [](const SparseTensor& x, const auto& w) {
                              return channelwise_convolution(x, w[0], fk::Tensor(), k2, {2}).F();
                            });
}

TEST(MinkowskiCudaEmptyInputs, EveryConvolutionThroughTheGatherDataflow) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride gather("ME_CONV_DATAFLOW", "gather");
  for (const char* fused : {"1", "0"}) {
    SCOPED_TRACE(std::string("ME_FUSED_COPY=") + fused);
    KnobOverride copy("ME_FUSED_COPY", fused);
    every_convolution();
  }
}

TEST(MinkowskiCudaEmptyInputs, EveryConvolutionThroughTheImplicitDataflow) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride implicit("ME_CONV_DATAFLOW", "implicit");
  every_convolution();
}

TEST(MinkowskiCudaEmptyInputs, EveryConvolutionInDeterministicMode) {
  MK_SKIP_WITHOUT_GPU();
  cuda_test::DeterministicScope deterministic(true);
  every_convolution();
}

TEST(MinkowskiCudaEmptyInputs, PoolingInEveryMode) {
  MK_SKIP_WITHOUT_GPU();
  for (PoolingMode mode : {PoolingMode::Max, PoolingMode::Average, PoolingMode::Sum}) {
    const std::string name = pooling_mode_name(mode);
    expect_device_matches_cpu(name + " local", {}, [mode](const SparseTensor& x, const auto&) {
      return local_pooling(x, mode, k2, {2}).F();
    });
    expect_device_matches_cpu(name + " global", {}, [mode](const SparseTensor& x, const auto&) {
      return global_pooling(x, mode).F();
    });
    expect_device_matches_cpu(name + " transposed", {}, [mode](const SparseTensor& x, const auto&) {
      return pooling_transpose(local_pooling(x, mode, k2, {2}), mode, k2, {2}).F();
    });
  }
}

TEST(MinkowskiCudaEmptyInputs, FeatureOps) {
  MK_SKIP_WITHOUT_GPU();
  expect_device_matches_cpu("relu", {},
                            [](const SparseTensor& x, const auto&) { return relu(x).F(); });
  expect_device_matches_cpu("cat", {}, [](const SparseTensor& x, const auto&) {
    return cat({x, x}).F();
  });
  expect_device_matches_cpu("sum", {}, [](const SparseTensor& x, const auto&) {
    return sum({x, relu(x)}).F();
  });
  expect_device_matches_cpu("broadcast add", {}, [](const SparseTensor& x, const auto&) {
    return broadcast_add(x, global_avg_pooling(x)).F();
  });
  expect_device_matches_cpu("broadcast concatenation", {}, [](const SparseTensor& x, const auto&) {
    return broadcast_concatenation(x, global_max_pooling(x)).F();
  });
  expect_device_matches_cpu("prune", {}, [](const SparseTensor& x, const auto&) {
    return prune(x, std::vector<bool>{}).F();
  });
  expect_device_matches_cpu("union", {}, [](const SparseTensor& x, const auto&) {
    return sparse_union({x, relu(x)}).F();
  });
  expect_device_matches_cpu("interpolation", {}, [](const SparseTensor& x, const auto&) {
    const fk::Tensor points = fk::from_vector(std::vector<float>{0, 0.5f, 0.5f, 0.5f}, {1, 4});
    return interpolate(x, points.to(x.F().device()));
  });
}

// The reference's pruning regression (#579): pruning every point on the
// device, then a convolution and backward, gives an empty output and zero
// (finite) gradients for every input row and the weight, as on the CPU.
TEST(MinkowskiCudaEmptyInputs, PruningEverythingThenConvolving) {
  MK_SKIP_WITHOUT_GPU();
  const std::vector<int32_t> rows = cuda_test::random_rows(3, 50, 4, 1, 2, 5);
  const fk::Tensor coords = fk::from_vector(rows, fk::Dims{50, 4});
  const fk::Tensor f = cuda_test::random_values({50, kChannels}, 1.0, 6);
  const fk::Tensor w = cuda_test::random_values({27, kChannels, 3}, 0.5, 7);
  for (fk::Device device : {fk::kCPU, kGpu}) {
    SCOPED_TRACE(device.str());
    const fk::Tensor fd = cuda_test::leaf(f, device), wd = cuda_test::leaf(w, device);
    const SparseTensor x(fd, device.is_cuda() ? coords.to(device) : coords);
    const fk::Tensor none = fk::zeros({50}, {fk::DType::Bool, device});
    const SparseTensor y = convolution(prune(x, none), wd, fk::Tensor(), k3);
    EXPECT_EQ(y.F().shape(), (fk::Dims{0, 3}));
    EXPECT_EQ(y.F().device(), device);
    fk::sum(y.F()).backward();
    EXPECT_EQ(fd.grad().shape(), f.shape());
    EXPECT_EQ(wd.grad().shape(), w.shape());
    for (double v : fd.grad().to(fk::DType::F64).to_vector<double>()) EXPECT_EQ(v, 0.0);
    for (double v : wd.grad().to(fk::DType::F64).to_vector<double>()) EXPECT_EQ(v, 0.0);
  }
}

TEST(MinkowskiCudaEmptyInputs, NormalizationLayers) {
  MK_SKIP_WITHOUT_GPU();
  for (bool training : {true, false}) {
    expect_device_matches_cpu(training ? "batch norm, training" : "batch norm, evaluation", {},
                              [training](const SparseTensor& x, const auto&) {
                                nn::BatchNorm bn(kChannels);
                                bn.to(x.F().device());
                                bn.train(training);
                                return bn.forward(x).F();
                              });
  }
  expect_device_matches_cpu("instance norm", {}, [](const SparseTensor& x, const auto&) {
    nn::InstanceNorm in(kChannels);
    in.to(x.F().device());
    return in.forward(x).F();
  });
}

TEST(MinkowskiCudaEmptyInputs, AMinkUNetForwardAndBackward) {
  MK_SKIP_WITHOUT_GPU();
  expect_device_matches_cpu("MinkUNet14", {}, [](const SparseTensor& x, const auto&) {
    nn::MinkUNetOptions o = nn::minkunet_options("14", kChannels, 3, 3);
    o.planes = {8, 8, 8, 8, 8, 8, 8, 8};
    o.init_dim = 8;
    nn::MinkUNet net(o);
    net.to(x.F().device());
    net.eval();  // training needs batch statistics: 2 points at least (an error on both)
    return net.forward(x).F();
  });
}

}  // namespace
}  // namespace minkowski
