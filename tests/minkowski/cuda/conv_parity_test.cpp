// The device convolution against the CPU's (conv_kernel.h) on the same map
// and operands: the output and both gradients to 1e-5 (f32, TF32 off), on
// the fused path, the per-offset path and a staging cap that forces many
// groups, with atomics and in deterministic mode (which must also repeat bit
// for bit), with each group's GEMMs grouped into one cuBLAS call too; and
// operand errors, which are checked before any device work.
// The path tests pin ME_CONV_DATAFLOW=gather (conv_implicit_test.cpp covers
// the implicit dataflow, which auto takes for narrow channels elsewhere).
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "conv_test_operands.h"
#include "device_test_util.h"
#include "fk/test_util.h"
#include "minkowski/cuda/device_conv.h"
#include "minkowski/cuda/device_kernel_map.h"

namespace minkowski {
namespace {

using cuda_test::DeterministicScope;
using cuda_test::expect_close;
using cuda_test::kGpu;
using cuda_test::KnobOverride;
using cuda_test::make_map;
using cuda_test::random_rows;

constexpr double kTol = 1e-5;

using Operands = cuda_test::ConvOperands;  // values on the CPU
using cuda_test::conv_operands;
using fk::test::error_of;

// Device forward and backward against the CPU's.
void expect_matches_cpu(const Operands& o, const std::string& what) {
  const fk::Tensor want = conv_forward(o.f, o.w, *o.cpu);
  const ConvGrads wg = conv_backward(o.g, o.f, o.w, *o.cpu, true, true);
  const fk::Tensor fd = o.f.to(kGpu), wd = o.w.to(kGpu), gd = o.g.to(kGpu);
  expect_close(cuda::conv_forward(fd, wd, o.dev), want, kTol, what + " forward");
  const cuda::DeviceConvGrads got = cuda::conv_backward(gd, fd, wd, o.dev, true, true);
  expect_close(got.features, wg.features, kTol, what + " grad features");
  expect_close(got.weight, wg.weight, kTol, what + " grad weight");
  // One gradient alone is the same as both together.
  const cuda::DeviceConvGrads only_w = cuda::conv_backward(gd, fd, wd, o.dev, false, true);
  EXPECT_FALSE(only_w.features.defined());
  expect_close(only_w.weight, wg.weight, kTol, what + " grad weight alone");
}

class MinkowskiCudaConv : public ::testing::TestWithParam<std::tuple<int, int>> {
 protected:
  void SetUp() override { fk::amp::set_allow_tf32(false); }
};

TEST_P(MinkowskiCudaConv, MatchesCpuOnEveryPath) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride gather("ME_CONV_DATAFLOW", "gather");  // the paths of gather-GEMM-scatter
  const auto [cin, cout] = GetParam();
  auto m = make_map(random_rows(3, 3000, 10, 1, 2, 11), 3, 1);
  const Operands o = conv_operands(*m, *m, KernelRegion::cube({3}), cin, cout, 21);
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
      KnobOverride cap("ME_FUSED_COPY_MAX_MB", "0.01");  // a few offsets a group
      expect_matches_cpu(o, mode + " capped");
      EXPECT_GT(cuda::last_device_conv_call().groups, 1);
    }
  }
}

// 3 -> 5: scalar copies; 6 -> 10: 8-byte chunks; 32 -> 64: 16-byte chunks.
INSTANTIATE_TEST_SUITE_P(Widths, MinkowskiCudaConv,
                         ::testing::Values(std::make_tuple(3, 5), std::make_tuple(6, 10),
                                           std::make_tuple(32, 64)));

// ME_CONV_GROUPED_GEMM: a staging group's GEMMs as one grouped cuBLAS call
// give the CPU's results on every path, in one call per group (and per
// offset where a group has one offset); other dtypes match the per-offset
// GEMMs; a value outside off|features|all is an error naming the knob.
TEST(MinkowskiCudaConvGrouped, MatchesCpuInOneCallPerGroup) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride gather("ME_CONV_DATAFLOW", "gather");
  fk::amp::set_allow_tf32(false);
  auto m = make_map(random_rows(3, 3000, 10, 1, 2, 14), 3, 1);
  const Operands o = conv_operands(*m, *m, KernelRegion::cube({3}), 6, 10, 51);
  int64_t offsets = 0;
  for (int64_t k = 0; k < o.cpu->volume; ++k) offsets += o.cpu->count(k) > 0;
  ASSERT_GT(offsets, 1);
  const fk::Tensor fd = o.f.to(kGpu), wd = o.w.to(kGpu), gd = o.g.to(kGpu);
  for (const std::string mode : {"features", "all"}) {
    KnobOverride grouped("ME_CONV_GROUPED_GEMM", mode);
    const bool weight = mode == "all";
    for (bool det : {false, true}) {
      DeterministicScope ds(det);
      const std::string what = mode + (det ? " deterministic" : " atomic");
      expect_matches_cpu(o, what + " fused");
      cuda::conv_forward(fd, wd, o.dev);
      EXPECT_EQ(cuda::last_device_conv_call().gemms, offsets) << what;
      EXPECT_EQ(cuda::last_device_conv_call().gemm_calls, 1) << what;
      cuda::conv_backward(gd, fd, wd, o.dev, true, true);
      EXPECT_EQ(cuda::last_device_conv_call().gemms, 2 * offsets) << what;
      EXPECT_EQ(cuda::last_device_conv_call().gemm_calls, weight ? 2 : 1 + offsets) << what;
      {
        KnobOverride cap("ME_FUSED_COPY_MAX_MB", "0.01");  // a few offsets a group
        expect_matches_cpu(o, what + " capped");
        cuda::conv_forward(fd, wd, o.dev);
        const cuda::DeviceConvInfo info = cuda::last_device_conv_call();
        EXPECT_GT(info.groups, 1) << what;
        EXPECT_LT(info.gemm_calls, offsets) << what;
        EXPECT_GE(info.gemm_calls, info.groups) << what;
      }
      KnobOverride per_offset("ME_FUSED_COPY", "0");  // groups of one: no grouped call
      expect_matches_cpu(o, what + " per-offset");
      cuda::conv_forward(fd, wd, o.dev);
      EXPECT_EQ(cuda::last_device_conv_call().gemm_calls, offsets) << what;
    }
  }
  // 16-bit and f64 operands: the grouped products against the per-offset ones.
  // At 8 -> 16 channels every staged row and W_k starts 16-byte aligned, so
  // each list is grouped; at 6 -> 10 cuBLAS's alignment rule for 16-bit
  // products leaves some lists per offset (same results either way).
  const Operands o16 = conv_operands(*m, *m, KernelRegion::cube({3}), 8, 16, 52);
  for (const Operands* op : {&o16, &o})
    for (fk::DType dt : {fk::DType::BF16, fk::DType::F16, fk::DType::F64}) {
      const fk::Tensor f = op->f.to(kGpu).to(dt), w = op->w.to(kGpu).to(dt);
      const fk::Tensor g = op->g.to(kGpu).to(dt);
      const double tol = dt == fk::DType::F64 ? 1e-12 : 2e-2;
      const std::string what = fk::name(dt) + std::string(op == &o16 ? " 8 -> 16" : " 6 -> 10");
      fk::Tensor y[2];
      cuda::DeviceConvGrads grads[2];
      for (int grouped : {0, 1}) {
        KnobOverride knob("ME_CONV_GROUPED_GEMM", grouped ? "all" : "off");
        y[grouped] = cuda::conv_forward(f, w, op->dev);
        grads[grouped] = cuda::conv_backward(g, f, w, op->dev, true, true);
        const int64_t calls = cuda::last_device_conv_call().gemm_calls;
        if (!grouped || op == &o16 || dt == fk::DType::F64)
          EXPECT_EQ(calls, grouped ? 2 : 2 * offsets) << what;
        else
          EXPECT_LE(calls, 2 * offsets) << what;
      }
      expect_close(y[1].to(fk::DType::F64), y[0].to(fk::DType::F64), tol, what + " forward");
      expect_close(grads[1].features.to(fk::DType::F64), grads[0].features.to(fk::DType::F64), tol,
                   what + " grad features");
      expect_close(grads[1].weight.to(fk::DType::F64), grads[0].weight.to(fk::DType::F64), tol,
                   what + " grad weight");
    }
  // Refused by the knob itself (so fk-info refuses it too).
  const std::string msg = error_of([&] { KnobOverride bad("ME_CONV_GROUPED_GEMM", "yes"); });
  EXPECT_NE(msg.find("knob ME_CONV_GROUPED_GEMM"), std::string::npos) << msg;
  EXPECT_NE(msg.find("one of off, features or all, got 'yes'"), std::string::npos) << msg;
}

TEST(MinkowskiCudaConvStrided, MatchesCpu) {
  MK_SKIP_WITHOUT_GPU();
  fk::amp::set_allow_tf32(false);
  auto m = make_map(random_rows(3, 2000, 12, 1, 2, 12), 3, 1);
  auto s = cuda_test::strided_map(*m, 1, 2);
  for (int k : {2, 3}) {
    const Operands o = conv_operands(*m, *s, KernelRegion::cube({k}), 8, 16, 31);
    expect_matches_cpu(o, "stride 2, kernel " + std::to_string(k));
    DeterministicScope ds(true);
    expect_matches_cpu(o, "deterministic stride 2, kernel " + std::to_string(k));
  }
}

TEST(MinkowskiCudaConvDeterministic, RepeatsBitForBit) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride gather("ME_CONV_DATAFLOW", "gather");  // the paths of gather-GEMM-scatter
  fk::amp::set_allow_tf32(false);
  DeterministicScope ds(true);
  auto m = make_map(random_rows(3, 4000, 8, 1, 1, 13), 3, 1);
  const Operands o = conv_operands(*m, *m, KernelRegion::cube({3}), 16, 32, 41);
  const fk::Tensor fd = o.f.to(kGpu), wd = o.w.to(kGpu), gd = o.g.to(kGpu);
  const fk::Tensor y1 = cuda::conv_forward(fd, wd, o.dev), y2 = cuda::conv_forward(fd, wd, o.dev);
  EXPECT_TRUE(cuda_test::bitwise_equal(y1, y2));
  const auto g1 = cuda::conv_backward(gd, fd, wd, o.dev, true, true);
  const auto g2 = cuda::conv_backward(gd, fd, wd, o.dev, true, true);
  EXPECT_TRUE(cuda_test::bitwise_equal(g1.features, g2.features));
  EXPECT_TRUE(cuda_test::bitwise_equal(g1.weight, g2.weight));
  // A map rebuilt on the device gives the same bits too.
  const auto off = KernelRegion::cube({3}).offsets({1, 1, 1});
  const cuda::DeviceKernelMap again = cuda::build_device_kernel_map(*m, *m, off);
  EXPECT_TRUE(cuda_test::bitwise_equal(cuda::conv_forward(fd, wd, again), y1));
}

cuda::DeviceKernelMap empty_device_map(int64_t volume, int64_t rows) {
  cuda::DeviceKernelMap m;
  m.volume = volume;
  m.in_size = rows;
  m.out_size = rows;
  m.offset_begin.assign(volume + 1, 0);
  return m;
}

// Dtype and device checks come before any device work: these run without a GPU.
TEST(MinkowskiCudaConvErrors, NameWhatWasExpected) {
  const cuda::DeviceKernelMap m = empty_device_map(27, 4);
  const fk::Tensor f = fk::zeros({4, 3});
  const fk::Tensor w = fk::zeros({27, 3, 5});
  EXPECT_NE(error_of([&] { cuda::conv_forward(f, w, m); }).find("on cuda:0"), std::string::npos);
  EXPECT_NE(error_of([&] {
              cuda::conv_forward(f.to(fk::DType::F64), w, m);
            }).find("a weight of the features' dtype f64"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { cuda::conv_backward(fk::Tensor(), f, w, m, true, true); }).find("on cuda:0"),
      std::string::npos);
}

// Shape checks (device operands); an empty map convolves to zeros.
TEST(MinkowskiCudaConvErrors, ShapesOnTheDevice) {
  MK_SKIP_WITHOUT_GPU();
  const cuda::DeviceKernelMap m = empty_device_map(27, 4);
  const fk::TensorOptions o{fk::DType::F32, kGpu};
  const fk::Tensor f = fk::zeros({4, 3}, o), w = fk::zeros({27, 3, 5}, o);
  EXPECT_NE(error_of([&] {
              cuda::conv_forward(fk::zeros({5, 3}, o), w, m);
            }).find("(4, C)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              cuda::conv_forward(f, fk::zeros({9, 3, 5}, o), m);
            }).find("(27, 3, C_out)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              cuda::conv_backward(fk::zeros({4, 6}, o), f, w, m, true, true);
            }).find("(4, 5)"),
            std::string::npos);
  EXPECT_EQ(cuda::conv_forward(f, w, m).to_vector<float>(), std::vector<float>(20, 0.f));
}

}  // namespace
}  // namespace minkowski
