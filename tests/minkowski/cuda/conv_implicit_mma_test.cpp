// The implicit-GEMM dataflow on tensor cores (implicit_conv_mma.cu) against
// the CPU's f64 convolution of the same operands (f16/bf16 values, or f32
// values for TF32, widened exactly), element by element, within a bound
// derived from where the device rounds:
//   each product of two operands is exact in f32 for f16/bf16; for TF32 both
//   operands are rounded to TF32 first (<= 2u relative per product); the
//   depth = K x inner products of a row are summed by the tensor cores in
//   f32 (<= depth 2^-22 relative to the sum of |terms|, allowing the
//   truncating alignment tensor cores use); the sum is rounded to the dtype
//   once (<= u);
// so |got - want| <= (2u + depth 2^-22) * A + 1e-6, A the same convolution of
// |F|, |W| (or |G|, |W|) in f64, u the unit roundoff (bf16 2^-8, f16 and
// TF32 2^-11), 1e-6 for f16's subnormal spacing. Forward and input gradient
// at channel counts 3, 16, 32, 40, 64, 96 (not multiples of the fragment
// depth, of the 16-byte chunk, and of the tiles), stride 2 and transposed
// maps, output rows without pairs (zeros), bit-for-bit repeats; which
// kernel runs (ME_CONV_IMPLICIT_MMA, the TF32 switch); and the device's
// tile slot counts against the host's.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "conv_test_operands.h"
#include "device_test_util.h"
#include "minkowski/cuda/device_conv.h"
#include "minkowski/cuda/device_kernel_map.h"
#include "minkowski/cuda/implicit_conv.h"

namespace minkowski {
namespace {

using cuda::ConvDataflow;
using cuda_test::kGpu;
using cuda_test::KnobOverride;
using cuda_test::make_map;
using cuda_test::random_rows;
using cuda_test::random_values;

// The precisions the tensor-core kernel runs: f16, bf16, f32 as TF32.
enum class Precision { F16, BF16, Tf32 };
fk::DType dtype_of(Precision p) {
  return p == Precision::F16    ? fk::DType::F16
         : p == Precision::BF16 ? fk::DType::BF16
                                : fk::DType::F32;
}
double unit_roundoff(Precision p) {
  return std::ldexp(1.0, p == Precision::BF16 ? -8 : -11);
}
std::string label(Precision p) {
  return p == Precision::F16 ? "f16" : p == Precision::BF16 ? "bf16" : "tf32";
}

// Sets the TF32 switch for a scope (on for Tf32, off otherwise).
struct Tf32Scope : fk::KnobOverride {
  explicit Tf32Scope(Precision p)
      : fk::KnobOverride("FK_ALLOW_TF32", p == Precision::Tf32 ? "1" : "0") {}
};

// Operands rounded to the dtype on the CPU; exact and |.| in f64.
struct Operands : cuda_test::ConvMaps, cuda_test::RoundedValues {
  int64_t cin = 0, cout = 0;
};

Operands operands(cuda_test::ConvMaps maps, int64_t cin, int64_t cout, fk::DType t, uint64_t seed) {
  const cuda_test::ConvValues v = cuda_test::random_conv_values(
      *maps.cpu, cin, cout, seed, cuda_test::fan_in_scale(maps.cpu->volume, cin));
  return {std::move(maps), cuda_test::rounded(v, t), cin, cout};
}

Operands operands(const CoordinateMap& in, const CoordinateMap& out, const KernelRegion& region,
                  int64_t cin, int64_t cout, fk::DType t, uint64_t seed) {
  return operands(cuda_test::conv_maps(in, out, region), cin, cout, t, seed);
}

// Element by element: |got - want| <= (2u + depth 2^-22) * bound + 1e-6.
void expect_within_rounding(const fk::Tensor& got, const fk::Tensor& want, const fk::Tensor& bound,
                            Precision p, double depth, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.dtype(), dtype_of(p)) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>(),
                            a = bound.to_vector<double>();
  const double rel = 2 * unit_roundoff(p) + depth * std::ldexp(1.0, -22);
  double worst = 0;
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

// The bound above fails on a NaN anywhere, also before finite elements (a
// device result of NaNs must not pass); on host tensors, no device needed.
TEST(MinkowskiCudaConvImplicitMmaBound, FailsOnANaNBeforeFiniteElements) {
  const fk::Tensor want = fk::from_vector(std::vector<double>{1, 2, 3});
  const fk::Tensor bound = fk::from_vector(std::vector<double>{1, 2, 3});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const fk::Tensor nan_first = fk::from_vector(std::vector<float>{nan, 2, 3});
  EXPECT_NONFATAL_FAILURE(expect_within_rounding(nan_first, want, bound, Precision::Tf32, 1, "x"),
                          "got nan");
  // Within the bound: passes.
  expect_within_rounding(fk::from_vector(std::vector<float>{1, 2, 3}), want, bound, Precision::Tf32,
                         1, "exact");
}

// Forward and input gradient on the tensor-core implicit kernel.
void expect_mma_within_rounding(const Operands& o, Precision p, const std::string& what) {
  const KernelMap& m = *o.cpu;
  const double K = static_cast<double>(m.volume);
  const fk::Tensor fd = o.f.stored.to(kGpu), wd = o.w.stored.to(kGpu), gd = o.g.stored.to(kGpu);
  const fk::Tensor y = cuda::conv_forward(fd, wd, o.dev);
  const cuda::DeviceConvInfo info = cuda::last_device_conv_call();
  EXPECT_EQ(info.dataflow, ConvDataflow::Implicit) << what;
  EXPECT_TRUE(info.tensor_cores) << what;
  expect_within_rounding(y, conv_forward(o.f.exact, o.w.exact, m),
                         conv_forward(o.f.magnitude, o.w.magnitude, m), p, o.cin * K,
                         what + " forward");
  const fk::Tensor gf = cuda::conv_backward(gd, fd, wd, o.dev, true, false).features;
  EXPECT_TRUE(cuda::last_device_conv_call().tensor_cores) << what;
  expect_within_rounding(
      gf, conv_backward(o.g.exact, o.f.exact, o.w.exact, m, true, false).features,
      conv_backward(o.g.magnitude, o.f.magnitude, o.w.magnitude, m, true, false).features, p,
      o.cout * K, what + " grad features");
}

class MinkowskiCudaConvImplicitMma : public ::testing::TestWithParam<Precision> {};

// Every pair of the channel counts 3, 16, 32, 40, 64, 96 as (C_in, C_out)
// neighbours and squares: inner channels past C zero-padded to the fragment
// depth; C = 3 and 40 (f16/bf16: not a multiple of 8) element by element,
// the others in 16-byte chunks; C_out <= 32 on 128 x 32 tiles, else 64 x 64
// with a partial second column tile at 96.
TEST_P(MinkowskiCudaConvImplicitMma, SubmanifoldWithinRoundingOfTheCpuF64) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride implicit("ME_CONV_DATAFLOW", "implicit");
  const Precision p = GetParam();
  const Tf32Scope tf32(p);
  auto m = make_map(random_rows(3, 2000, 9, 1, 2, 101), 3, 1);
  const std::vector<int64_t> widths = {3, 16, 32, 40, 64, 96};
  for (size_t i = 0; i < widths.size(); ++i)
    for (size_t j : {i, (i + 1) % widths.size()}) {
      const Operands o =
          operands(*m, *m, KernelRegion::cube({3}), widths[i], widths[j], dtype_of(p), 111 + i);
      expect_mma_within_rounding(
          o, p,
          label(p) + " 3^3 " + std::to_string(widths[i]) + " -> " + std::to_string(widths[j]));
    }
}

// A network's stem and head widths (3 channels: rows of neither 16-byte
// chunks nor whole fragments, loaded element by element through the real
// dispatch) on a small map: what the emulated run keeps of the test above.
TEST_P(MinkowskiCudaConvImplicitMma, StemWidthsWithinRoundingOfTheCpuF64) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride implicit("ME_CONV_DATAFLOW", "implicit");
  const Precision p = GetParam();
  const Tf32Scope tf32(p);
  auto m = make_map(random_rows(3, 300, 6, 1, 1, 107), 3, 1);
  for (const auto& [cin, cout] :
       std::vector<std::pair<int64_t, int64_t>>{{3, 16}, {16, 3}, {3, 3}}) {
    const Operands o = operands(*m, *m, KernelRegion::cube({3}), cin, cout, dtype_of(p), 141);
    expect_mma_within_rounding(
        o, p, label(p) + " stem 3^3 " + std::to_string(cin) + " -> " + std::to_string(cout));
  }
}

// Stride 2 (kernel 2 and 3) and its transposed map (inputs and outputs
// swapped), at widths that take both tile shapes.
TEST_P(MinkowskiCudaConvImplicitMma, StridedAndTransposedWithinRounding) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride implicit("ME_CONV_DATAFLOW", "implicit");
  const Precision p = GetParam();
  const Tf32Scope tf32(p);
  auto m = make_map(random_rows(3, 2000, 12, 1, 2, 102), 3, 1);
  auto s = cuda_test::strided_map(*m, 1, 2);
  for (int k : {2, 3}) {
    const Operands down = operands(*m, *s, KernelRegion::cube({k}), 40, 24, dtype_of(p), 121);
    expect_mma_within_rounding(down, p, label(p) + " stride 2, kernel " + std::to_string(k));
    const Operands up =
        operands({down.cpu->transposed(), cuda::transposed(down.dev)}, 24, 40, dtype_of(p), 131);
    expect_mma_within_rounding(up, p, label(p) + " transposed, kernel " + std::to_string(k));
  }
}

// Output rows far from every input (no pairs, sorted first: whole tiles
// without offsets) get zeros; the others their sums.
TEST_P(MinkowskiCudaConvImplicitMma, RowsWithoutPairsGetZeros) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride implicit("ME_CONV_DATAFLOW", "implicit");
  const Precision p = GetParam();
  const Tf32Scope tf32(p);
  const std::vector<int32_t> in_rows = random_rows(3, 1500, 8, 1, 1, 106);
  std::vector<int32_t> out_rows = in_rows;
  for (size_t i = 1; i < out_rows.size() / 2; i += 4) out_rows[i] += 1000;  // x of 750 rows
  auto in = make_map(in_rows, 3, 1), out = make_map(out_rows, 3, 1);
  const Operands o = operands(*in, *out, KernelRegion::cube({3}), 24, 40, dtype_of(p), 171);
  std::vector<uint64_t> masks(o.cpu->out_size, 0);
  for (int64_t k = 0; k < o.cpu->volume; ++k)
    for (int64_t q = o.cpu->offset_begin[k]; q < o.cpu->offset_begin[k + 1]; ++q)
      masks[o.cpu->out_rows[q]] |= uint64_t{1} << k;
  ASSERT_GE(std::count(masks.begin(), masks.end(), uint64_t{0}), 128) << "two 64-row tiles";
  // The result comes from fk::empty: from a stream-ordered pool, so a block
  // of its size freed just before, full of NaN, is most likely reused, and
  // rows the kernel left unwritten show as NaN rather than as stale zeros.
  // The masks are made first, so the forward allocates nothing else.
  const fk::Tensor fd = o.f.stored.to(kGpu), wd = o.w.stored.to(kGpu);
  cuda::row_masks_of(o.dev, false);
  {
    const fk::Tensor poison = fk::full(
        {o.cpu->out_size, o.cout}, std::numeric_limits<double>::quiet_NaN(), {dtype_of(p), kGpu});
  }
  const double K = static_cast<double>(o.cpu->volume);
  expect_within_rounding(cuda::conv_forward(fd, wd, o.dev),
                         conv_forward(o.f.exact, o.w.exact, *o.cpu),
                         conv_forward(o.f.magnitude, o.w.magnitude, *o.cpu), p, o.cin * K,
                         label(p) + " rows without pairs, after a NaN block");
  expect_mma_within_rounding(o, p, label(p) + " rows without pairs");
}

// One write per output, fixed product order: the same bits every run, with
// atomics or in deterministic mode.
TEST_P(MinkowskiCudaConvImplicitMma, RepeatsBitForBit) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride implicit("ME_CONV_DATAFLOW", "implicit");
  const Precision p = GetParam();
  const Tf32Scope tf32(p);
  auto m = make_map(random_rows(3, 4000, 8, 1, 1, 103), 3, 1);
  const Operands o = operands(*m, *m, KernelRegion::cube({3}), 64, 96, dtype_of(p), 141);
  const fk::Tensor fd = o.f.stored.to(kGpu), wd = o.w.stored.to(kGpu), gd = o.g.stored.to(kGpu);
  const fk::Tensor y1 = cuda::conv_forward(fd, wd, o.dev);
  const fk::Tensor g1 = cuda::conv_backward(gd, fd, wd, o.dev, true, false).features;
  cuda_test::DeterministicScope ds(true);
  EXPECT_TRUE(cuda_test::bitwise_equal(cuda::conv_forward(fd, wd, o.dev), y1));
  EXPECT_TRUE(
      cuda_test::bitwise_equal(cuda::conv_backward(gd, fd, wd, o.dev, true, false).features, g1));
}

INSTANTIATE_TEST_SUITE_P(Precisions, MinkowskiCudaConvImplicitMma,
                         ::testing::Values(Precision::F16, Precision::BF16, Precision::Tf32),
                         [](const auto& info) { return label(info.param); });

// Tensor cores for f16/bf16 and for f32 only with TF32 on; the FMA tiles
// with ME_CONV_IMPLICIT_MMA=0 (their results within f32 round-off of the
// tensor cores', f16 operands being exact products either way).
TEST(MinkowskiCudaConvImplicitMmaChoice, TensorCoresWhereTheRuleSays) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride implicit("ME_CONV_DATAFLOW", "implicit");
  auto m = make_map(random_rows(3, 1000, 8, 1, 1, 104), 3, 1);
  const Operands o = operands(*m, *m, KernelRegion::cube({3}), 16, 16, fk::DType::F16, 151);
  const fk::Tensor fd = o.f.stored.to(kGpu), wd = o.w.stored.to(kGpu);
  const fk::Tensor mma = cuda::conv_forward(fd, wd, o.dev);
  EXPECT_TRUE(cuda::last_device_conv_call().tensor_cores);
  {
    KnobOverride fma("ME_CONV_IMPLICIT_MMA", "0");
    const fk::Tensor y = cuda::conv_forward(fd, wd, o.dev);
    EXPECT_FALSE(cuda::last_device_conv_call().tensor_cores);
    EXPECT_EQ(cuda::last_device_conv_call().dataflow, ConvDataflow::Implicit);
    cuda_test::expect_close(y, mma, 2 * std::ldexp(1.0, -11), "FMA tiles vs tensor cores");
  }
  const fk::Tensor f32 = o.f.stored.to(fk::DType::F32).to(kGpu);
  const fk::Tensor w32 = o.w.stored.to(fk::DType::F32).to(kGpu);
  {
    const Tf32Scope off(Precision::F16);
    cuda::conv_forward(f32, w32, o.dev);
    EXPECT_FALSE(cuda::last_device_conv_call().tensor_cores) << "f32 without TF32";
  }
  const Tf32Scope on(Precision::Tf32);
  cuda::conv_forward(f32, w32, o.dev);
  EXPECT_TRUE(cuda::last_device_conv_call().tensor_cores) << "f32 with TF32";
}

// The host's masks of a CPU map's rows (by_out or by_in).
std::vector<uint64_t> host_masks(const KernelMap& m, bool by_in) {
  std::vector<uint64_t> masks(by_in ? m.in_size : m.out_size, 0);
  for (int64_t k = 0; k < m.volume; ++k)
    for (int64_t p = m.offset_begin[k]; p < m.offset_begin[k + 1]; ++p)
      masks[by_in ? m.in_rows[p] : m.out_rows[p]] |= uint64_t{1} << k;
  return masks;
}

// The device's padded slot counts are the host's (conv_dataflow.h), and
// auto decides on the problem they give.
TEST(MinkowskiCudaConvImplicitMmaChoice, TileSlotsMatchTheHost) {
  MK_SKIP_WITHOUT_GPU();
  auto in = make_map(random_rows(3, 3000, 10, 1, 2, 105), 3, 1);
  auto s = cuda_test::strided_map(*in, 1, 2);
  const auto off = KernelRegion::cube({3}).offsets({1, 1, 1});
  const auto cpu = build_kernel_map(*in, *s, off);
  const cuda::DeviceKernelMap dev = cuda::build_device_kernel_map(*in, *s, off);
  for (bool by_in : {false, true}) {
    const cuda::DeviceRowMasks& rm = cuda::row_masks_of(dev, by_in);
    ASSERT_TRUE(rm.eligible);
    const std::vector<uint64_t> masks = host_masks(*cpu, by_in);
    EXPECT_EQ(rm.slots_64, cuda::padded_slots(masks, 64)) << by_in;
    EXPECT_EQ(rm.slots_128, cuda::padded_slots(masks, 128)) << by_in;
    // By output rows the columns are cout's 80 (64-row tiles), by input rows
    // cin's 16 (128-row tiles).
    const cuda::DataflowProblem p = cuda::dataflow_problem(dev, by_in, 16, 80, fk::DType::BF16);
    EXPECT_EQ(p.padded_slots, cuda::padded_slots(masks, by_in ? 128 : 64)) << by_in;
    EXPECT_EQ(p.rows, by_in ? cpu->in_size : cpu->out_size);
  }
  // auto runs what the rule says for the problem.
  KnobOverride automatic("ME_CONV_DATAFLOW", "auto");
  const fk::Tensor f = random_values({in->size(), 16}, 1.0, 161).to(fk::DType::BF16).to(kGpu);
  const fk::Tensor w = random_values({27, 16, 80}, 0.1, 162).to(fk::DType::BF16).to(kGpu);
  cuda::conv_forward(f, w, dev);
  EXPECT_EQ(cuda::last_device_conv_call().dataflow,
            cuda::choose_conv_dataflow(
                ConvDataflow::Auto, cuda::dataflow_problem(dev, false, 16, 80, fk::DType::BF16)));
}

}  // namespace
}  // namespace minkowski
