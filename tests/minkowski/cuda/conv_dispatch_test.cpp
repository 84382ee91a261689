// The convolutions of conv.h with features on the GPU: the same SparseTensor
// (its maps on the host) convolved from CPU operands and from device
// operands through the public API and autograd, the output and the
// gradients of features, weight and bias equal to 1e-5 (TF32 off). Covers
// submanifold, strided, transposed and generative convolutions and a 1x1
// (C_in, C_out) weight; one map copy per device, reused by a second call,
// and a transposed map's copy made from its forward map's (no second upload);
// and the clear errors for what has no device kernel yet.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "device_test_util.h"
#include "fk/profile.h"
#include "fk/test_util.h"
#include "minkowski/cuda/device_kernel_map.h"
#include "minkowski/ops/conv.h"
#include "minkowski/ops/conv_kernel.h"

namespace minkowski {
namespace {

using cuda_test::expect_close;
using cuda_test::expect_same_map;
using cuda_test::kGpu;
using cuda_test::random_rows;
using cuda_test::random_values;
using fk::test::error_of;

constexpr double kTol = 1e-5;

SparseTensor cpu_input(int64_t n, int64_t cin, uint64_t seed) {
  const std::vector<int32_t> rows = random_rows(3, n, 8, 1, 2, static_cast<unsigned>(seed));
  const fk::Tensor coords =
      fk::from_vector(rows, fk::Dims{static_cast<int64_t>(rows.size()) / 4, 4});
  return SparseTensor(random_values({coords.size(0), cin}, 1.0, seed + 1), coords);
}

// The input's features on `device`, as a new leaf that takes a gradient.
SparseTensor on(const SparseTensor& x, fk::Device device) {
  fk::Tensor f = x.F().detach().clone().to(device);
  f.set_requires_grad(true);
  return SparseTensor(f, x.key(), x.manager());
}

fk::Tensor leaf(const fk::Tensor& t, fk::Device device) {
  fk::Tensor l = t.detach().clone().to(device);
  l.set_requires_grad(true);
  return l;
}

using Conv = std::function<SparseTensor(const SparseTensor&, const fk::Tensor&, const fk::Tensor&)>;

// Runs `conv` on CPU and on GPU operands and compares output and gradients.
void expect_device_matches_cpu(const SparseTensor& x, const fk::Tensor& w, const fk::Tensor& b,
                               const Conv& conv, const std::string& what) {
  fk::amp::set_allow_tf32(false);
  const SparseTensor xc = on(x, fk::kCPU), xg = on(x, kGpu);
  const fk::Tensor wc = leaf(w, fk::kCPU), wg = leaf(w, kGpu);
  const fk::Tensor bc = leaf(b, fk::kCPU), bg = leaf(b, kGpu);
  const SparseTensor yc = conv(xc, wc, bc), yg = conv(xg, wg, bg);
  expect_same_map(yc, yg, what);
  ASSERT_EQ(yg.F().device(), kGpu) << what;
  expect_close(yg.F(), yc.F(), kTol, what + " forward");
  const fk::Tensor g = random_values(yc.F().shape(), 1.0, 99);
  yc.F().backward(g);
  yg.F().backward(g.to(kGpu));
  expect_close(xg.F().grad(), xc.F().grad(), kTol, what + " grad features");
  expect_close(wg.grad(), wc.grad(), kTol, what + " grad weight");
  expect_close(bg.grad(), bc.grad(), kTol, what + " grad bias");
}

TEST(MinkowskiCudaConvDispatch, EveryConvolutionMatchesTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(2000, 8, 3);
  const KernelRegion k3 = KernelRegion::cube({3}), k2 = KernelRegion::cube({2});
  const fk::Tensor b = random_values({12}, 1.0, 7);
  expect_device_matches_cpu(
      x, random_values({27, 8, 12}, 0.2, 5), b,
      [&](const SparseTensor& s, const fk::Tensor& w, const fk::Tensor& bias) {
        return convolution(s, w, bias, k3);
      },
      "submanifold 3^3");
  expect_device_matches_cpu(
      x, random_values({8, 8, 12}, 0.2, 6), b,
      [&](const SparseTensor& s, const fk::Tensor& w, const fk::Tensor& bias) {
        return convolution(s, w, bias, k2, {2});
      },
      "strided 2^3");
  // Down then up: the transposed convolution reuses the strided map's pairs.
  const SparseTensor down = convolution(x, random_values({8, 8, 8}, 0.2, 8), fk::Tensor(), k2, {2});
  const SparseTensor mid(down.F().detach(), down.key(), down.manager());
  expect_device_matches_cpu(
      mid, random_values({8, 8, 12}, 0.2, 9), b,
      [&](const SparseTensor& s, const fk::Tensor& w, const fk::Tensor& bias) {
        return convolution_transpose(s, w, bias, k2, {2});
      },
      "transposed 2^3");
  expect_device_matches_cpu(
      mid, random_values({27, 8, 12}, 0.2, 10), b,
      [&](const SparseTensor& s, const fk::Tensor& w, const fk::Tensor& bias) {
        return generative_convolution_transpose(s, w, bias, k3, {2});
      },
      "generative transposed 3^3");
  expect_device_matches_cpu(
      x, random_values({8, 12}, 0.3, 11), b,
      [&](const SparseTensor& s, const fk::Tensor& w, const fk::Tensor& bias) {
        return convolution(s, w, bias, KernelRegion::cube({1}));
      },
      "1x1 with a (C_in, C_out) weight");
}

TEST(MinkowskiCudaConvDispatch, OneDeviceCopyPerMap) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(500, 4, 13);
  auto map = x.manager()->kernel_map(x.key(), x.key(), KernelRegion::cube({3}), false);
  int made = 0;
  auto make = [&] {
    ++made;
    return std::shared_ptr<const void>(std::make_shared<int>(1));
  };
  // A map used once by a device convolution already holds its copy.
  const fk::Tensor w = random_values({27, 4, 4}, 0.2, 14).to(kGpu);
  convolve_features(x.F().to(kGpu), w, map);
  map->device_copy(0, make);
  EXPECT_EQ(made, 0);
  // Another device index is another copy.
  map->device_copy(1, make);
  map->device_copy(1, make);
  EXPECT_EQ(made, 1);
}

// Uploads of host-built maps in a traced call.
int64_t uploads_in(const std::function<void()>& f) {
  fk::profile::clear_trace();
  fk::profile::set_tracing(true);
  f();
  fk::profile::set_tracing(false);
  int64_t n = 0;
  for (const auto& e : fk::profile::event_totals())
    if (e.name == "minkowski.kernel_map.upload") n = e.calls;
  fk::profile::clear_trace();
  return n;
}

TEST(MinkowskiCudaConvDispatch, TransposedMapIsItsForwardMapsCopySwapped) {
  MK_SKIP_WITHOUT_GPU();
  // Host-built maps: a strided convolution and its transposed convolution
  // (and the other way round) upload the pairs once, and the second map's
  // device copy is the first's arrays with the sides swapped.
  for (bool transposed_first : {false, true}) {
    const SparseTensor x = cpu_input(800, 4, 21);
    const KernelRegion k2 = KernelRegion::cube({2});
    const MapKey s = x.manager()->stride(x.key(), {2});
    auto fwd = x.manager()->kernel_map(x.key(), s, k2, false);
    auto tr = x.manager()->kernel_map(s, x.key(), k2, true);
    const KernelMap& first = transposed_first ? *tr : *fwd;
    const KernelMap& second = transposed_first ? *fwd : *tr;
    const std::string what = transposed_first ? "transposed first" : "forward first";
    const cuda::DeviceKernelMap* a = nullptr;
    const cuda::DeviceKernelMap* b = nullptr;
    EXPECT_EQ(uploads_in([&] { a = &cuda::device_copy_of(first, 0); }), 1) << what;
    EXPECT_EQ(uploads_in([&] { b = &cuda::device_copy_of(second, 0); }), 0) << what;
    EXPECT_EQ(b->in_size, a->out_size) << what;
    EXPECT_EQ(b->out_size, a->in_size) << what;
    EXPECT_EQ(b->offset_begin, a->offset_begin) << what;
    EXPECT_EQ(b->in_rows.data_ptr(), a->out_rows.data_ptr()) << what;
    EXPECT_EQ(b->out_rows.data_ptr(), a->in_rows.data_ptr()) << what;
    EXPECT_EQ(b->by_out.pair.data_ptr(), a->by_in.pair.data_ptr()) << what;
    EXPECT_EQ(b->by_in.begin.data_ptr(), a->by_out.begin.data_ptr()) << what;
    EXPECT_EQ(b->in_rows.to_vector<int32_t>(),
              std::vector<int32_t>(second.in_rows.begin(), second.in_rows.end()))
        << what;
    EXPECT_EQ(&cuda::device_copy_of(second, 0), b) << what << ": made again";
  }
}

TEST(MinkowskiCudaConvDispatch, ClearErrorsForWhatHasNoDeviceKernel) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(300, 4, 15);
  const SparseTensor xg(x.F().to(kGpu), x.key(), x.manager());
  const KernelRegion k3 = KernelRegion::cube({3});
  // A weight left on the CPU names the device it must be on.
  EXPECT_NE(error_of([&] {
              convolution(xg, random_values({27, 4, 4}, 0.2, 17), fk::Tensor(), k3);
            }).find("cuda:0"),
            std::string::npos);
  // 16-bit device features with an f32 weight: the dtypes must match.
  EXPECT_NE(error_of([&] {
              const SparseTensor h(x.F().to(fk::DType::BF16).to(kGpu), x.key(), x.manager());
              convolution(h, random_values({27, 4, 4}, 0.2, 18).to(kGpu), fk::Tensor(), k3);
            }).find("dtype bf16"),
            std::string::npos);
}

// conv_backward, the host kernel's backward, names a device operand instead
// of reading its memory on the host (ConvolutionBackward sends device
// features to device_conv_backward; a direct call can mix them).
TEST(MinkowskiCudaConvDispatch, TheHostBackwardRefusesADeviceOperand) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(300, 4, 19);
  const KernelRegion k3 = KernelRegion::cube({3});
  auto map = x.manager()->kernel_map(x.key(), x.key(), k3, false);
  const fk::Tensor w = random_values({27, 4, 4}, 0.2, 20);
  const fk::Tensor g = random_values({x.size(), 4}, 1.0, 21);
  for (const std::string& msg :
       {error_of([&] { conv_backward(g, x.F(), w.to(kGpu), *map, true, true); }),
        error_of([&] { conv_backward(g.to(kGpu), x.F(), w, *map, true, true); })}) {
    EXPECT_NE(msg.find("minkowski::convolution backward"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cuda:0"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace minkowski
