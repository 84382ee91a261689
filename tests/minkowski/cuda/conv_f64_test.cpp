// The device convolution in f64 (cuBLAS DGEMM, f64 staging and accumulation)
// against the CPU's f64 convolution of the same operands, compared in f64 to
// 1e-12 relative (an f64 path computed anywhere in f32 would be ~1e-7 off):
// forward and both gradients on every gather-GEMM-scatter path (fused,
// per-offset, a staging cap of many groups; atomics and deterministic, which
// repeats bit for bit), and through the public API and autograd for the
// submanifold, strided, transposed and generative convolutions. f64 never
// takes the implicit dataflow, even forced, and says why
// (DeviceConvInfo::implicit_refused). The host-side dtype checks and groups
// are conv_plan_test.cpp's (no device).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "conv_test_operands.h"
#include "device_test_util.h"
#include "fk/ops/binary.h"
#include "minkowski/cuda/conv_plan.h"
#include "minkowski/cuda/device_conv.h"
#include "minkowski/cuda/device_kernel_map.h"
#include "minkowski/ops/fused_copy.h"

namespace minkowski {
namespace {

using cuda_test::DeterministicScope;
using cuda_test::expect_close;
using cuda_test::kGpu;
using cuda_test::KnobOverride;
using cuda_test::make_map;
using cuda_test::random_rows;
using cuda_test::random_values;

constexpr double kTol = 1e-12;
constexpr fk::DType kF64 = fk::DType::F64;

// t's f32 values widened to f64 and moved off the f32 grid (times 1 + 2⁻³⁰):
// widened f32 values alone would survive a path that rounds its operands to
// f32 (before an f64 GEMM) exactly; these come back 2⁻³⁰ ≈ 1e-9 off.
fk::Tensor off_f32_grid(const fk::Tensor& t) {
  return t.to(kF64) * (1.0 + std::ldexp(1.0, -30));
}

fk::Tensor random_f64(const fk::Dims& shape, double scale, uint64_t seed) {
  return off_f32_grid(random_values(shape, scale, seed));
}

using Operands = cuda_test::ConvOperands;

// conv_operands' f32 values as f64 off the f32 grid (on the CPU).
Operands operands(const CoordinateMap& in, const CoordinateMap& out, const KernelRegion& region,
                  int64_t cin, int64_t cout, uint64_t seed) {
  Operands o = cuda_test::conv_operands(in, out, region, cin, cout, seed);
  o.f = off_f32_grid(o.f);
  o.w = off_f32_grid(o.w);
  o.g = off_f32_grid(o.g);
  return o;
}

// The call was f64 gather-GEMM with the implicit dataflow refused, and its
// groups and staging are the host plan's for rows of (C_in + C_out) doubles
// under the knobs in force.
void expect_f64_gather(const cuda::DeviceKernelMap& m, int64_t cin, int64_t cout,
                       const std::string& what) {
  const cuda::DeviceConvInfo info = cuda::last_device_conv_call();
  EXPECT_EQ(info.dtype, kF64) << what;
  EXPECT_EQ(info.dataflow, cuda::ConvDataflow::Gather) << what;
  ASSERT_NE(info.implicit_refused, nullptr) << what;
  EXPECT_NE(std::string(info.implicit_refused).find("f64"), std::string::npos) << what;
  std::vector<int64_t> pairs;
  for (int64_t k = 0; k < m.volume; ++k) pairs.push_back(m.count(k));
  const int64_t row_bytes = (cin + cout) * 8;
  const cuda::OffsetGroups plan =
      cuda::plan_offset_groups(pairs, row_bytes, fused_copy_mode() != FusedCopy::Off,
                               fk::knob("ME_FUSED_COPY_MAX_MB").as_float());
  EXPECT_EQ(info.groups, static_cast<int64_t>(plan.groups.size())) << what;
  EXPECT_EQ(info.staging_bytes, plan.staging_bytes(row_bytes)) << what;
}

void expect_matches_cpu(const Operands& o, const std::string& what) {
  const int64_t cin = o.f.size(1), cout = o.w.size(2);
  const fk::Tensor want = conv_forward(o.f, o.w, *o.cpu);
  const ConvGrads wg = conv_backward(o.g, o.f, o.w, *o.cpu, true, true);
  const fk::Tensor fd = o.f.to(kGpu), wd = o.w.to(kGpu), gd = o.g.to(kGpu);
  const fk::Tensor y = cuda::conv_forward(fd, wd, o.dev);
  ASSERT_EQ(y.dtype(), kF64) << what;
  expect_close(y, want, kTol, what + " forward");
  expect_f64_gather(o.dev, cin, cout, what + " forward");
  const cuda::DeviceConvGrads got = cuda::conv_backward(gd, fd, wd, o.dev, true, true);
  expect_f64_gather(o.dev, cin, cout, what + " backward");
  ASSERT_EQ(got.features.dtype(), kF64) << what;
  ASSERT_EQ(got.weight.dtype(), kF64) << what;
  expect_close(got.features, wg.features, kTol, what + " grad features");
  expect_close(got.weight, wg.weight, kTol, what + " grad weight");
  const cuda::DeviceConvGrads only_f = cuda::conv_backward(gd, fd, wd, o.dev, true, false);
  EXPECT_FALSE(only_f.weight.defined());
  expect_close(only_f.features, wg.features, kTol, what + " grad features alone");
}

class MinkowskiCudaConvF64 : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(MinkowskiCudaConvF64, MatchesTheCpuOnEveryGatherPath) {
  MK_SKIP_WITHOUT_GPU();
  const auto [cin, cout] = GetParam();
  auto m = make_map(random_rows(3, 2000, 9, 1, 2, 61), 3, 1);
  const Operands o = operands(*m, *m, KernelRegion::cube({3}), cin, cout, 62);
  for (bool det : {false, true}) {
    DeterministicScope ds(det);
    const std::string mode = det ? "deterministic" : "atomic";
    expect_matches_cpu(o, mode + " fused");
    EXPECT_EQ(cuda::last_device_conv_call().groups, 1);
    {
      KnobOverride per_offset("ME_FUSED_COPY", "0");
      expect_matches_cpu(o, mode + " per-offset");
      EXPECT_EQ(cuda::last_device_conv_call().groups, o.cpu->volume);
    }
    {
      KnobOverride cap("ME_FUSED_COPY_MAX_MB", "0.02");  // a few offsets a group
      expect_matches_cpu(o, mode + " capped");
      EXPECT_GT(cuda::last_device_conv_call().groups, 1);
    }
    // Forced or chosen, the implicit dataflow refuses f64: gather runs.
    for (const char* asked : {"implicit", "auto"}) {
      KnobOverride dataflow("ME_CONV_DATAFLOW", asked);
      expect_matches_cpu(o, mode + " " + asked + " asked");
    }
  }
}

// 3 -> 5: one double a chunk; 6 -> 10 and 32 -> 64: 16-byte chunks (2 doubles).
INSTANTIATE_TEST_SUITE_P(Widths, MinkowskiCudaConvF64,
                         ::testing::Values(std::make_tuple(3, 5), std::make_tuple(6, 10),
                                           std::make_tuple(32, 64)));

TEST(MinkowskiCudaConvF64Deterministic, RepeatsBitForBit) {
  MK_SKIP_WITHOUT_GPU();
  DeterministicScope ds(true);
  auto m = make_map(random_rows(3, 3000, 8, 1, 1, 63), 3, 1);
  const Operands o = operands(*m, *m, KernelRegion::cube({3}), 16, 32, 64);
  const fk::Tensor fd = o.f.to(kGpu), wd = o.w.to(kGpu), gd = o.g.to(kGpu);
  EXPECT_EQ(cuda::conv_forward(fd, wd, o.dev).to_vector<double>(),
            cuda::conv_forward(fd, wd, o.dev).to_vector<double>());
  const auto g1 = cuda::conv_backward(gd, fd, wd, o.dev, true, true);
  const auto g2 = cuda::conv_backward(gd, fd, wd, o.dev, true, true);
  EXPECT_EQ(g1.features.to_vector<double>(), g2.features.to_vector<double>());
  EXPECT_EQ(g1.weight.to_vector<double>(), g2.weight.to_vector<double>());
}

// --- the public API and autograd ------------------------------------------------

using Conv = std::function<SparseTensor(const SparseTensor&, const fk::Tensor&)>;

struct Results {
  fk::Tensor y, gx, gw;
};

// conv on f64 leaves copied to `device`, backward from g.
Results run(const SparseTensor& x, const fk::Tensor& w, const fk::Tensor& g, fk::Device device,
            const Conv& conv) {
  const fk::Tensor xf = cuda_test::leaf(x.F(), device), wl = cuda_test::leaf(w, device);
  const SparseTensor y = conv(SparseTensor(xf, x.key(), x.manager()), wl);
  y.F().backward(g.to(device));
  return {y.F(), xf.grad(), wl.grad()};
}

void expect_api_matches_cpu(const SparseTensor& x, const fk::Tensor& w, const Conv& conv,
                            const std::string& what) {
  const SparseTensor probe = conv(x, w);
  const fk::Tensor g = random_f64(probe.F().shape(), 1.0, 71);
  const Results want = run(x, w, g, fk::kCPU, conv), got = run(x, w, g, kGpu, conv);
  ASSERT_TRUE(got.y.device().is_cuda()) << what;
  ASSERT_EQ(got.y.dtype(), kF64) << what;
  ASSERT_EQ(got.gx.dtype(), kF64) << what;
  expect_close(got.y, want.y, kTol, what + " forward");
  expect_close(got.gx, want.gx, kTol, what + " grad x");
  expect_close(got.gw, want.gw, kTol, what + " grad w");
}

TEST(MinkowskiCudaConvF64Api, SubmanifoldStridedTransposedGenerative) {
  MK_SKIP_WITHOUT_GPU();
  const std::vector<int32_t> rows = random_rows(3, 1500, 8, 1, 2, 72);
  const fk::Tensor coords =
      fk::from_vector(rows, fk::Dims{static_cast<int64_t>(rows.size()) / 4, 4});
  const SparseTensor x(random_f64({coords.size(0), 8}, 1.0, 73), coords);
  const KernelRegion k3 = KernelRegion::cube({3}), k2 = KernelRegion::cube({2});
  expect_api_matches_cpu(
      x, random_f64({27, 8, 16}, 0.2, 74),
      [&](const SparseTensor& s, const fk::Tensor& w) { return convolution(s, w, {}, k3); },
      "submanifold 3^3");
  expect_api_matches_cpu(
      x, random_f64({27, 8, 12}, 0.2, 75),
      [&](const SparseTensor& s, const fk::Tensor& w) { return convolution(s, w, {}, k3, {2}); },
      "strided 3^3, stride 2");
  const SparseTensor down = convolution(x, random_f64({8, 8, 8}, 0.2, 76), {}, k2, {2});
  const SparseTensor coarse(down.F().detach(), down.key(), down.manager());
  expect_api_matches_cpu(
      coarse, random_f64({8, 8, 6}, 0.2, 77),
      [&](const SparseTensor& s, const fk::Tensor& w) {
        return convolution_transpose(s, w, {}, k2, {2});
      },
      "transposed 2^3, stride 2");
  expect_api_matches_cpu(
      coarse, random_f64({8, 8, 6}, 0.2, 78),
      [&](const SparseTensor& s, const fk::Tensor& w) {
        return generative_convolution_transpose(s, w, {}, k2, {2});
      },
      "generative transposed 2^3, stride 2");
}

}  // namespace
}  // namespace minkowski
