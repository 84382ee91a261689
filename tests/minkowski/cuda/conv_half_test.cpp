// The device convolution in f16 and bf16 against the CPU's f64 convolution of
// the same 16-bit operands (widened exactly), element by element, within a
// bound derived from where the device rounds:
//   each pair's GEMM row is rounded to 16 bits once (|err| <= u |y_k|), the
//   sum over offsets is accumulated in f32 and rounded to 16 bits once
//   (<= u |out|), the GEMMs and the scatter add in f32 (<= depth 2^-24 per
//   term, doubled for second-order terms);
// so |got - want| <= (2u + depth 2^-23) * A + 1e-6, where A is the same
// convolution (or gradient) of |F|, |W|, |G| in f64 (it bounds every |y_k|
// and |out|), u the unit roundoff (bf16 2^-8, f16 2^-11), depth the longest
// f32 sum (C_in K, C_out K, or an offset's pairs for grad_W), and 1e-6 covers
// f16's subnormal spacing. grad_W_k is one GEMM rounded once, inside the same
// bound. Forward and both gradients, on the fused, per-offset and capped
// paths, with atomics and in deterministic mode (which repeats bit for bit);
// stride 2 and transposed through the public API under autocast from f32
// leaves; a sum that 16-bit accumulation across offsets would lose; and the
// dtype errors, which need no device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "conv_test_operands.h"
#include "device_test_util.h"
#include "fk/test_util.h"
#include "minkowski/cuda/device_conv.h"
#include "minkowski/cuda/device_kernel_map.h"
#include "minkowski/nn/autocast.h"

namespace minkowski {
namespace {

using cuda_test::DeterministicScope;
using cuda_test::kGpu;
using cuda_test::KnobOverride;
using cuda_test::make_map;
using cuda_test::random_rows;
using cuda_test::random_values;

double unit_roundoff(fk::DType t) {
  return t == fk::DType::BF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
}

// Element by element: |got - want| <= (2u + depth 2^-23) * bound + 1e-6.
void expect_within_rounding(const fk::Tensor& got, const fk::Tensor& want, const fk::Tensor& bound,
                            fk::DType dtype, double depth, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.dtype(), dtype) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>(),
                            a = bound.to_vector<double>();
  const double rel = 2 * unit_roundoff(dtype) + depth * std::ldexp(1.0, -23);
  double worst = 0;  // the largest |err| / allowed
  size_t at = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double r = std::fabs(g[i] - w[i]) / (rel * a[i] + 1e-6);
    // A NaN stays the worst (as infinity): a later finite r must not replace it.
    if (!(r <= worst)) {
      worst = std::isnan(r) ? std::numeric_limits<double>::infinity() : r;
      at = i;
    }
  }
  EXPECT_LE(worst, 1.0) << what << ": element " << at << " got " << g[at] << ", want " << w[at]
                        << ", bound " << a[at];
}

using cuda_test::rounded;
using fk::test::error_of;

struct Operands : cuda_test::ConvMaps, cuda_test::RoundedValues {
  int64_t cin, cout, max_pairs;
};

Operands operands(const CoordinateMap& in, const CoordinateMap& out, const KernelRegion& region,
                  int64_t cin, int64_t cout, fk::DType dtype, uint64_t seed) {
  cuda_test::ConvOperands v = cuda_test::conv_operands(in, out, region, cin, cout, seed);
  Operands o{{std::move(v.cpu), std::move(v.dev)}, rounded(v, dtype), cin, cout, 0};
  for (int64_t k = 0; k < o.cpu->volume; ++k) o.max_pairs = std::max(o.max_pairs, o.dev.count(k));
  return o;
}

// The device's forward and gradients against the CPU's f64 ones.
void expect_device_within_rounding(const Operands& o, fk::DType dtype, const std::string& what) {
  const KernelMap& m = *o.cpu;
  const double K = static_cast<double>(m.volume);
  const fk::Tensor want = conv_forward(o.f.exact, o.w.exact, m);
  const fk::Tensor bound = conv_forward(o.f.magnitude, o.w.magnitude, m);
  const ConvGrads wg = conv_backward(o.g.exact, o.f.exact, o.w.exact, m, true, true);
  const ConvGrads bg = conv_backward(o.g.magnitude, o.f.magnitude, o.w.magnitude, m, true, true);
  const fk::Tensor fd = o.f.stored.to(kGpu), wd = o.w.stored.to(kGpu), gd = o.g.stored.to(kGpu);
  expect_within_rounding(cuda::conv_forward(fd, wd, o.dev), want, bound, dtype, o.cin * K,
                         what + " forward");
  const cuda::DeviceConvGrads got = cuda::conv_backward(gd, fd, wd, o.dev, true, true);
  expect_within_rounding(got.features, wg.features, bg.features, dtype, o.cout * K,
                         what + " grad features");
  expect_within_rounding(got.weight, wg.weight, bg.weight, dtype, o.max_pairs,
                         what + " grad weight");
  const cuda::DeviceConvGrads only_f = cuda::conv_backward(gd, fd, wd, o.dev, true, false);
  EXPECT_FALSE(only_f.weight.defined());
  expect_within_rounding(only_f.features, wg.features, bg.features, dtype, o.cout * K,
                         what + " grad features alone");
}

std::string dtype_label(fk::DType t) {
  return fk::name(t);
}

class MinkowskiCudaConvHalf
    : public ::testing::TestWithParam<std::tuple<fk::DType, int64_t, int64_t>> {};

TEST_P(MinkowskiCudaConvHalf, WithinRoundingOfTheCpuF64OnEveryPath) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride gather("ME_CONV_DATAFLOW", "gather");  // the paths of gather-GEMM-scatter
  const auto [dtype, cin, cout] = GetParam();
  auto m = make_map(random_rows(3, 2000, 9, 1, 2, 51), 3, 1);
  const Operands o = operands(*m, *m, KernelRegion::cube({3}), cin, cout, dtype, 61);
  for (bool det : {false, true}) {
    DeterministicScope ds(det);
    const std::string mode = dtype_label(dtype) + (det ? " deterministic" : " atomic");
    expect_device_within_rounding(o, dtype, mode + " fused");
    EXPECT_EQ(cuda::last_device_conv_call().dtype, dtype);
    EXPECT_EQ(cuda::last_device_conv_call().groups, 1);
    {
      KnobOverride per_offset("ME_FUSED_COPY", "0");
      expect_device_within_rounding(o, dtype, mode + " per-offset");
      EXPECT_EQ(cuda::last_device_conv_call().groups, o.cpu->volume);
    }
    {
      KnobOverride cap("ME_FUSED_COPY_MAX_MB", "0.005");  // a few offsets a group
      expect_device_within_rounding(o, dtype, mode + " capped");
      EXPECT_GT(cuda::last_device_conv_call().groups, 1);
    }
  }
}

// 3 -> 5: one half at a time; 6 -> 10: 4-byte chunks (C_in) and scalar
// (C_out); 8 -> 16: 16-byte chunks of 8 halves; 12 -> 20: 8-byte chunks.
INSTANTIATE_TEST_SUITE_P(Widths, MinkowskiCudaConvHalf,
                         ::testing::Combine(::testing::Values(fk::DType::F16, fk::DType::BF16),
                                            ::testing::Values(int64_t{3}, int64_t{6}, int64_t{8},
                                                              int64_t{12}),
                                            ::testing::Values(int64_t{5}, int64_t{16})),
                         [](const auto& info) {
                           return dtype_label(std::get<0>(info.param)) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "_" +
                                  std::to_string(std::get<2>(info.param));
                         });

TEST(MinkowskiCudaConvHalfStrided, WithinRoundingOfTheCpuF64) {
  MK_SKIP_WITHOUT_GPU();
  auto m = make_map(random_rows(3, 2000, 12, 1, 2, 52), 3, 1);
  auto s = cuda_test::strided_map(*m, 1, 2);
  for (fk::DType dtype : {fk::DType::F16, fk::DType::BF16})
    for (int k : {2, 3}) {
      const Operands o = operands(*m, *s, KernelRegion::cube({k}), 8, 16, dtype, 71);
      const std::string what = dtype_label(dtype) + " stride 2, kernel " + std::to_string(k);
      expect_device_within_rounding(o, dtype, what);
      DeterministicScope ds(true);
      expect_device_within_rounding(o, dtype, "deterministic " + what);
    }
}

TEST(MinkowskiCudaConvHalfDeterministic, RepeatsBitForBitWithHalfTheStaging) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride gather("ME_CONV_DATAFLOW", "gather");  // the paths of gather-GEMM-scatter
  DeterministicScope ds(true);
  auto m = make_map(random_rows(3, 3000, 8, 1, 1, 53), 3, 1);
  for (fk::DType dtype : {fk::DType::F16, fk::DType::BF16}) {
    const Operands o = operands(*m, *m, KernelRegion::cube({3}), 16, 32, dtype, 81);
    const fk::Tensor fd = o.f.stored.to(kGpu), wd = o.w.stored.to(kGpu), gd = o.g.stored.to(kGpu);
    const fk::Tensor y1 = cuda::conv_forward(fd, wd, o.dev), y2 = cuda::conv_forward(fd, wd, o.dev);
    EXPECT_TRUE(cuda_test::bitwise_equal(y1, y2)) << fk::name(dtype);
    const auto g1 = cuda::conv_backward(gd, fd, wd, o.dev, true, true);
    const int64_t half_bytes = cuda::last_device_conv_call().staging_bytes;
    const auto g2 = cuda::conv_backward(gd, fd, wd, o.dev, true, true);
    EXPECT_TRUE(cuda_test::bitwise_equal(g1.features, g2.features)) << fk::name(dtype);
    EXPECT_TRUE(cuda_test::bitwise_equal(g1.weight, g2.weight)) << fk::name(dtype);
    // The same call in f32 stages twice the bytes.
    cuda::conv_backward(gd.to(fk::DType::F32), fd.to(fk::DType::F32), wd.to(fk::DType::F32), o.dev,
                        true, true);
    EXPECT_EQ(cuda::last_device_conv_call().staging_bytes, 2 * half_bytes);
  }
}

// One output row with all 27 offsets: offset 0 adds `big`, the 26 others
// `small` each, all exact in the dtype, as is the total. A 16-bit running sum
// in offset order would round every big + small back to big; the f32
// accumulator keeps the total exactly, in either accumulation mode.
TEST(MinkowskiCudaConvHalfSums, OverOffsetsInF32) {
  MK_SKIP_WITHOUT_GPU();
  std::vector<int32_t> rows;
  for (int x = -1; x <= 1; ++x)
    for (int y = -1; y <= 1; ++y)
      for (int z = -1; z <= 1; ++z) rows.insert(rows.end(), {0, x, y, z});
  auto m = make_map(rows, 3, 1);
  const int64_t center = 13;  // (0, 0, 0)
  const auto off = KernelRegion::cube({3}).offsets({1, 1, 1});
  const cuda::DeviceKernelMap dev = cuda::build_device_kernel_map(*m, *m, off);
  const int64_t c = 8;
  // bf16: 256 + 1 ties to 256 (spacing 2), 256 + 26 = 282 is exact; f16:
  // 4096 + 2 ties to 4096 (spacing 4), 4096 + 52 = 4148 is exact.
  for (auto [dtype, big, small] : {std::make_tuple(fk::DType::BF16, 256.0, 1.0),
                                   std::make_tuple(fk::DType::F16, 4096.0, 2.0)}) {
    std::vector<float> w(27 * c * c, static_cast<float>(small / c));
    std::fill(w.begin(), w.begin() + c * c, static_cast<float>(big / c));
    const fk::Tensor wd = fk::from_vector(w, fk::Dims{27, c, c}).to(dtype).to(kGpu);
    const fk::Tensor fd = fk::ones({27, c}, {dtype}).to(kGpu);
    for (bool det : {false, true}) {
      DeterministicScope ds(det);
      const std::vector<double> y = cuda::conv_forward(fd, wd, dev).to_vector<double>();
      for (int64_t j = 0; j < c; ++j)
        EXPECT_EQ(y[center * c + j], big + 26 * small) << fk::name(dtype) << " channel " << j;
    }
  }
}

// --- the public API under autocast -------------------------------------------

using Conv = std::function<SparseTensor(const SparseTensor&, const fk::Tensor&)>;

struct Results {
  fk::Tensor y, gx, gw;
};

// conv on leaves x and w (f32 or f64 on `device`), backward from g (when
// defined); under autocast(*half) when given, cast as an nn layer casts
// (nn::Convolution::run).
Results run(const SparseTensor& x, const fk::Tensor& w, const fk::Tensor& g, fk::Device device,
            const Conv& conv, std::optional<fk::DType> half) {
  fk::Tensor xf = x.F().detach().clone().to(device), wl = w.detach().clone().to(device);
  xf.set_requires_grad(true);
  wl.set_requires_grad(true);
  const SparseTensor xl(xf, x.key(), x.manager());
  std::optional<fk::amp::AutocastGuard> ac;
  if (half) ac.emplace(*half);
  const SparseTensor y =
      conv(SparseTensor(nn::autocast(xl.F()), xl.key(), xl.manager()), nn::autocast(wl));
  // Under autocast g stays f32 (values exact in the dtype): the 16-bit
  // output's gradient arrives as f32 and the device path takes it in 16 bits.
  if (g.defined()) y.F().backward(g.to(device));
  return {y.F(), xf.grad(), wl.grad()};
}

// depth: the forward's and input gradient's longest f32 sum; an offset has at
// most as many pairs as x has rows (the weight gradient's).
void expect_autocast_within_rounding(const SparseTensor& x, const fk::Tensor& w, const Conv& conv,
                                     double depth, const std::string& what) {
  const double pairs = static_cast<double>(x.F().size(0));
  for (fk::DType dtype : {fk::DType::F16, fk::DType::BF16}) {
    // The operands as autocast rounds them; the f64 references on the CPU.
    const fk::Tensor xh = x.F().to(dtype).to(fk::DType::F64), wh = w.to(dtype).to(fk::DType::F64);
    const SparseTensor x64(xh, x.key(), x.manager()), a64(fk::abs(xh), x.key(), x.manager());
    const Results probe = run(x64, wh, fk::Tensor(), fk::kCPU, conv, std::nullopt);
    const fk::Tensor g = random_values(probe.y.shape(), 1.0, 91).to(dtype).to(fk::DType::F64);
    const Results want = run(x64, wh, g, fk::kCPU, conv, std::nullopt);
    const Results bound = run(a64, fk::abs(wh), fk::abs(g), fk::kCPU, conv, std::nullopt);
    const Results got = run(x, w, g.to(fk::DType::F32), kGpu, conv, dtype);
    const std::string label = dtype_label(dtype) + " " + what;
    ASSERT_EQ(got.gx.dtype(), fk::DType::F32) << label << ": the f32 leaf's gradient";
    expect_within_rounding(got.y, want.y, bound.y, dtype, depth, label + " forward");
    expect_within_rounding(got.gx.to(dtype), want.gx, bound.gx, dtype, depth, label + " grad x");
    expect_within_rounding(got.gw.to(dtype), want.gw, bound.gw, dtype, pairs, label + " grad w");
  }
}

TEST(MinkowskiCudaConvHalfAutocast, StridedAndTransposedFromF32Leaves) {
  MK_SKIP_WITHOUT_GPU();
  const std::vector<int32_t> rows = random_rows(3, 1500, 8, 1, 2, 54);
  const fk::Tensor coords =
      fk::from_vector(rows, fk::Dims{static_cast<int64_t>(rows.size()) / 4, 4});
  const SparseTensor x(random_values({coords.size(0), 8}, 1.0, 55), coords);
  const KernelRegion k3 = KernelRegion::cube({3}), k2 = KernelRegion::cube({2});
  expect_autocast_within_rounding(
      x, random_values({27, 8, 16}, 0.2, 56),
      [&](const SparseTensor& s, const fk::Tensor& w) { return convolution(s, w, {}, k3); },
      27 * 16, "submanifold 3^3");
  expect_autocast_within_rounding(
      x, random_values({27, 8, 16}, 0.2, 57),
      [&](const SparseTensor& s, const fk::Tensor& w) { return convolution(s, w, {}, k3, {2}); },
      27 * 16, "strided 3^3, stride 2");
  const SparseTensor down = convolution(x, random_values({8, 8, 8}, 0.2, 58), {}, k2, {2});
  const SparseTensor coarse(down.F().detach(), down.key(), down.manager());
  expect_autocast_within_rounding(
      coarse, random_values({8, 8, 16}, 0.2, 59),
      [&](const SparseTensor& s, const fk::Tensor& w) {
        return convolution_transpose(s, w, {}, k2, {2});
      },
      8 * 16, "transposed 2^3, stride 2");
}

// --- errors --------------------------------------------------------------------

// Dtype checks come before any device work: these run without a GPU.
TEST(MinkowskiCudaConvHalfErrors, DtypesMustMatchTheFeatures) {
  cuda::DeviceKernelMap m;
  m.volume = 27;
  m.in_size = m.out_size = 4;
  m.offset_begin.assign(28, 0);
  const fk::Tensor f = fk::zeros({4, 3}, {fk::DType::F16}), w = fk::zeros({27, 3, 5});
  const std::string mixed = error_of([&] { cuda::conv_forward(f, w, m); });
  EXPECT_NE(mixed.find("features' dtype f16"), std::string::npos) << mixed;
  EXPECT_NE(mixed.find("f32"), std::string::npos) << mixed;
  const fk::Tensor wb = w.to(fk::DType::BF16), fb = f.to(fk::DType::BF16);
  EXPECT_NE(error_of([&] { cuda::conv_forward(f, wb, m); }).find("bf16"), std::string::npos);
  const std::string grad = error_of([&] {
    cuda::conv_backward(fk::zeros({4, 5}, {fk::DType::F16}), fb, wb, m, true, true);
  });
  EXPECT_NE(grad.find("grad_out of the features' dtype bf16"), std::string::npos) << grad;
  const std::string i32 =
      error_of([&] { cuda::conv_forward(f.to(fk::DType::I32), w.to(fk::DType::I32), m); });
  EXPECT_NE(i32.find("f32, f16, bf16 or f64"), std::string::npos) << i32;
}

}  // namespace
}  // namespace minkowski
