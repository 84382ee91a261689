// The implicit-GEMM dataflow (implicit_conv.h) against the CPU convolution
// (conv_kernel.h) on the same map and f32 operands: the forward and the input
// gradient within f32 round-off times the sum's depth (K x C_in or K x C_out
// terms of magnitude <= max |term|, so |err| <= depth 2^-23 max|out| up to
// the terms' scale), on submanifold 3^3, stride 2, the transposed (strided,
// swapped) map, an output map with rows and offsets without pairs, a 4^3
// kernel (64 offsets: the masks' top bit), a 5^3 kernel (volume > 64: falls
// back to gather; refused by name when forced), channel counts that are not
// multiples of the tiles, f16 and bf16 operands (one rounding); the row masks
// and their order against masks built on the host from the CPU map;
// bit-for-bit repeats; auto on a small map; and the knob's parsing, which
// needs no device (auto's rule: conv_dataflow_test.cpp; tensor cores:
// conv_implicit_mma_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "conv_test_operands.h"
#include "device_test_util.h"
#include "fk/test_util.h"
#include "minkowski/cuda/device_conv.h"
#include "minkowski/cuda/device_coordinates.h"
#include "minkowski/cuda/device_kernel_map.h"
#include "minkowski/cuda/implicit_conv.h"

namespace minkowski {
namespace {

using cuda::ConvDataflow;
using cuda_test::expect_close;
using cuda_test::kGpu;
using cuda_test::KnobOverride;
using cuda_test::make_map;
using cuda_test::random_rows;

// Values on the CPU, the weight unscaled (|terms| <= 1: tolerance's premise).
struct Operands : cuda_test::ConvMaps, cuda_test::ConvValues {
  int64_t cin = 0, cout = 0;
};

Operands operands(cuda_test::ConvMaps maps, int64_t cin, int64_t cout, uint64_t seed) {
  cuda_test::ConvValues values = cuda_test::random_conv_values(*maps.cpu, cin, cout, seed, 1.0);
  return {std::move(maps), std::move(values), cin, cout};
}

Operands operands(const CoordinateMap& in, const CoordinateMap& out, const KernelRegion& region,
                  int64_t cin, int64_t cout, uint64_t seed) {
  return operands(cuda_test::conv_maps(in, out, region), cin, cout, seed);
}

// f32 round-off of a depth-term sum, relative to max(1, max |want|) (terms
// here are at most 1 in magnitude), with a factor 2 for the products.
double tolerance(int64_t depth) {
  return 2.0 * static_cast<double>(std::max<int64_t>(depth, 1)) * std::ldexp(1.0, -23);
}

// Forward and input gradient on `flow` (as last_device_conv_call reports)
// against the CPU's; the weight gradient (gather-GEMM) too.
void expect_matches_cpu(const Operands& o, ConvDataflow flow, const std::string& what) {
  const int64_t K = o.cpu->volume;
  const fk::Tensor want = conv_forward(o.f, o.w, *o.cpu);
  const ConvGrads wg = conv_backward(o.g, o.f, o.w, *o.cpu, true, true);
  const fk::Tensor fd = o.f.to(kGpu), wd = o.w.to(kGpu), gd = o.g.to(kGpu);
  const fk::Tensor y = cuda::conv_forward(fd, wd, o.dev);
  EXPECT_EQ(cuda::last_device_conv_call().dataflow, flow) << what;
  EXPECT_EQ(y.device(), kGpu) << what;
  expect_close(y, want, tolerance(K * o.cin), what + " forward");
  const cuda::DeviceConvGrads only_f = cuda::conv_backward(gd, fd, wd, o.dev, true, false);
  EXPECT_EQ(cuda::last_device_conv_call().dataflow, flow) << what;
  EXPECT_FALSE(only_f.weight.defined());
  expect_close(only_f.features, wg.features, tolerance(K * o.cout), what + " grad features");
  const cuda::DeviceConvGrads both = cuda::conv_backward(gd, fd, wd, o.dev, true, true);
  expect_close(both.features, wg.features, tolerance(K * o.cout), what + " grad features (both)");
  expect_close(both.weight, wg.weight, 1e-4, what + " grad weight");
}

class MinkowskiCudaConvImplicit : public ::testing::Test {
 protected:
  void SetUp() override { fk::amp::set_allow_tf32(false); }
};

// Channels 5 -> 37 (32-wide tiles and a partial 16-channel step), 37 -> 5,
// 48 -> 80 (two 64-wide column tiles, the second partial) and 1 -> 1.
TEST_F(MinkowskiCudaConvImplicit, SubmanifoldMatchesCpu) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride implicit("ME_CONV_DATAFLOW", "implicit");
  auto m = make_map(random_rows(3, 3000, 10, 1, 2, 11), 3, 1);
  const std::vector<std::pair<int64_t, int64_t>> widths = {{5, 37}, {37, 5}, {48, 80}, {1, 1}};
  for (const auto& [cin, cout] : widths) {
    const Operands o = operands(*m, *m, KernelRegion::cube({3}), cin, cout, 21);
    expect_matches_cpu(o, ConvDataflow::Implicit,
                       "3^3 " + std::to_string(cin) + " -> " + std::to_string(cout));
  }
}

// The transposed convolution's map: a strided map with inputs and outputs
// swapped (KernelMap::transposed, as convolution_transpose takes it).
Operands transposed(const Operands& strided, int64_t cin, int64_t cout, uint64_t seed) {
  std::shared_ptr<const KernelMap> cpu = strided.cpu->transposed();
  cuda::DeviceKernelMap dev = cuda::upload_kernel_map(*cpu);
  return operands({std::move(cpu), std::move(dev)}, cin, cout, seed);
}

TEST_F(MinkowskiCudaConvImplicit, StridedAndTransposedMatchCpu) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride implicit("ME_CONV_DATAFLOW", "implicit");
  auto m = make_map(random_rows(3, 2000, 12, 1, 2, 12), 3, 1);
  auto s = cuda_test::strided_map(*m, 1, 2);
  for (int k : {2, 3}) {
    const Operands down = operands(*m, *s, KernelRegion::cube({k}), 8, 19, 31);
    expect_matches_cpu(down, ConvDataflow::Implicit, "stride 2, kernel " + std::to_string(k));
    Operands up = transposed(down, 19, 8, 32);
    expect_matches_cpu(up, ConvDataflow::Implicit, "transposed, kernel " + std::to_string(k));
    // The device-side transpose of a map whose masks are made: they swap.
    up.dev = cuda::transposed(down.dev);
    expect_matches_cpu(up, ConvDataflow::Implicit,
                       "device-transposed, kernel " + std::to_string(k));
    EXPECT_EQ(&cuda::row_masks_of(up.dev, false), &cuda::row_masks_of(down.dev, true));
  }
}

// x doubled: every row's x even, so offsets with x = +-1 find no pair.
std::shared_ptr<CoordinateMap> even_x_map(int64_t n, int range, unsigned seed) {
  std::vector<int32_t> rows = random_rows(3, n, range, 1, 1, seed);
  for (size_t i = 1; i < rows.size(); i += 4) rows[i] *= 2;
  return make_map(rows, 3, 1);
}

// Output rows away from every input (no pairs: zeros) and offsets without
// pairs (x = +-1 between maps of even x), in tiles with mixed masks.
TEST_F(MinkowskiCudaConvImplicit, RowsAndOffsetsWithoutPairs) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride implicit("ME_CONV_DATAFLOW", "implicit");
  auto in = even_x_map(600, 10, 13);
  auto out = even_x_map(400, 14, 14);
  const Operands o = operands(*in, *out, KernelRegion::cube({3}), 6, 10, 41);
  const KernelMap& cm = *o.cpu;
  std::set<int32_t> touched;
  for (int64_t p = 0; p < cm.pairs(); ++p) touched.insert(cm.out_rows[p]);
  ASSERT_LT(static_cast<int64_t>(touched.size()), out->size()) << "some output rows lack pairs";
  int64_t empty = 0;
  for (int64_t k = 0; k < cm.volume; ++k) empty += cm.count(k) == 0;
  ASSERT_EQ(empty, 18) << "offsets with x = +-1 have no pairs";
  expect_matches_cpu(o, ConvDataflow::Implicit, "sparse output");
  // A map without pairs at all: zeros (gather's, which need no launch).
  auto far = make_map(std::vector<int32_t>{0, 1000, 1000, 1000}, 3, 1);
  const Operands e = operands(*in, *far, KernelRegion::cube({3}), 6, 10, 42);
  ASSERT_EQ(e.cpu->pairs(), 0);
  const fk::Tensor y = cuda::conv_forward(e.f.to(kGpu), e.w.to(kGpu), e.dev);
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(10, 0.f));
  EXPECT_EQ(cuda::last_device_conv_call().dataflow, ConvDataflow::Gather);
}

// f16 and bf16 operands widened to f32 in the FMA tiles: the f32 sum of the
// exact products, rounded once to the dtype, so within 2u of the CPU's f32
// convolution of the same (widened) values, relative to max |out|. 20 output
// channels take the 32-wide column tiles, 40 the 64-wide ones.
TEST_F(MinkowskiCudaConvImplicit, HalfOperandsRoundOnce) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride implicit("ME_CONV_DATAFLOW", "implicit");
  KnobOverride fma("ME_CONV_IMPLICIT_MMA", "0");  // tensor cores: conv_implicit_mma_test.cpp
  auto m = make_map(random_rows(3, 2000, 10, 1, 2, 19), 3, 1);
  for (int64_t cout : {20, 40}) {
    const Operands o = operands(*m, *m, KernelRegion::cube({3}), 12, cout, 91);
    for (fk::DType t : {fk::DType::F16, fk::DType::BF16}) {
      const double u = std::ldexp(1.0, t == fk::DType::F16 ? -11 : -8);
      const fk::Tensor f = o.f.to(t), w = o.w.to(t), g = o.g.to(t);
      const fk::Tensor f32 = f.to(fk::DType::F32), w32 = w.to(fk::DType::F32);
      const fk::Tensor y = cuda::conv_forward(f.to(kGpu), w.to(kGpu), o.dev);
      EXPECT_EQ(y.dtype(), t);
      EXPECT_EQ(cuda::last_device_conv_call().dataflow, ConvDataflow::Implicit);
      expect_close(y.to(fk::DType::F32), conv_forward(f32, w32, *o.cpu), 2 * u,
                   std::string(fk::name(t)) + " forward, " + std::to_string(cout) + " channels");
      const fk::Tensor gf =
          cuda::conv_backward(g.to(kGpu), f.to(kGpu), w.to(kGpu), o.dev, true, false).features;
      EXPECT_EQ(gf.dtype(), t);
      expect_close(
          gf.to(fk::DType::F32),
          conv_backward(g.to(fk::DType::F32), f32, w32, *o.cpu, true, false).features, 2 * u,
          std::string(fk::name(t)) + " grad features, " + std::to_string(cout) + " channels");
    }
  }
}

// 5^3 = 125 offsets do not fit a 64-bit mask: implicit falls back to gather.
TEST_F(MinkowskiCudaConvImplicit, LargeKernelFallsBackToGather) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride implicit("ME_CONV_DATAFLOW", "implicit");
  auto m = make_map(random_rows(3, 500, 6, 1, 1, 15), 3, 1);
  const Operands o = operands(*m, *m, KernelRegion::cube({5}), 4, 6, 51);
  EXPECT_FALSE(cuda::row_masks_of(o.dev, false).eligible);
  expect_matches_cpu(o, ConvDataflow::Gather, "5^3");
}

// 4^3 = 64 offsets, the most a row mask holds: offset 63 lives in the top
// bit (masks sort as unsigned 64-bit keys, the tiles' walk reaches bit 63 and
// counts the 63 offsets below it for the pair's place).
TEST_F(MinkowskiCudaConvImplicit, SixtyFourOffsetsUseTheMasksTopBit) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride implicit("ME_CONV_DATAFLOW", "implicit");
  auto m = make_map(random_rows(3, 1500, 6, 1, 1, 24), 3, 1);
  const Operands o = operands(*m, *m, KernelRegion::cube({4}), 6, 9, 101);
  ASSERT_EQ(o.cpu->volume, 64);
  ASSERT_GT(o.cpu->count(63), 0);
  const cuda::DeviceRowMasks& rm = cuda::row_masks_of(o.dev, false);
  ASSERT_TRUE(rm.eligible);
  int64_t top = 0;
  for (int64_t v : rm.mask.to_vector<int64_t>()) top += v < 0;  // bit 63 set
  EXPECT_EQ(top, o.cpu->count(63));
  expect_matches_cpu(o, ConvDataflow::Implicit, "4^3");
}

// The device masks are the host's (bit k per pair of offset k), the order a
// stable sort by mask, and tiles hold mixed masks.
TEST_F(MinkowskiCudaConvImplicit, RowMasksAndOrder) {
  MK_SKIP_WITHOUT_GPU();
  auto in = make_map(random_rows(3, 2000, 10, 1, 2, 16), 3, 1);
  auto s = cuda_test::strided_map(*in, 1, 2);
  const Operands o = operands(*in, *s, KernelRegion::cube({3}), 1, 1, 61);
  const KernelMap& cm = *o.cpu;
  for (bool by_in : {false, true}) {
    const int64_t rows = by_in ? cm.in_size : cm.out_size;
    std::vector<uint64_t> want(rows, 0);
    for (int64_t k = 0; k < cm.volume; ++k)
      for (int64_t p = cm.offset_begin[k]; p < cm.offset_begin[k + 1]; ++p)
        want[by_in ? cm.in_rows[p] : cm.out_rows[p]] |= uint64_t{1} << k;
    const cuda::DeviceRowMasks& rm = cuda::row_masks_of(o.dev, by_in);
    ASSERT_TRUE(rm.eligible);
    const std::vector<int64_t> got = rm.mask.to_vector<int64_t>();
    ASSERT_EQ(static_cast<int64_t>(got.size()), rows);
    for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(static_cast<uint64_t>(got[r]), want[r]) << r;
    std::vector<int32_t> order(rows);
    for (int64_t r = 0; r < rows; ++r) order[r] = static_cast<int32_t>(r);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return want[a] < want[b]; });
    EXPECT_EQ(rm.order.to_vector<int32_t>(), order) << (by_in ? "by_in" : "by_out");
    // Some 64-row tile of the order holds more than one mask.
    bool mixed = false;
    for (int64_t r = 0; r + 1 < rows; ++r)
      mixed |= r / 64 == (r + 1) / 64 && want[order[r]] != want[order[r + 1]];
    EXPECT_TRUE(mixed);
    // Made once: a second request is the same object.
    EXPECT_EQ(&cuda::row_masks_of(o.dev, by_in), &rm);
  }
}

// One write per output in a fixed order: the same bits on every run, in
// either accumulation mode, and on a map rebuilt on the device.
TEST_F(MinkowskiCudaConvImplicit, RepeatsBitForBit) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride implicit("ME_CONV_DATAFLOW", "implicit");
  auto m = make_map(random_rows(3, 4000, 8, 1, 1, 17), 3, 1);
  const Operands o = operands(*m, *m, KernelRegion::cube({3}), 16, 32, 71);
  const fk::Tensor fd = o.f.to(kGpu), wd = o.w.to(kGpu), gd = o.g.to(kGpu);
  const fk::Tensor y1 = cuda::conv_forward(fd, wd, o.dev);
  const fk::Tensor g1 = cuda::conv_backward(gd, fd, wd, o.dev, true, false).features;
  cuda_test::DeterministicScope ds(true);
  EXPECT_TRUE(cuda_test::bitwise_equal(cuda::conv_forward(fd, wd, o.dev), y1));
  EXPECT_TRUE(
      cuda_test::bitwise_equal(cuda::conv_backward(gd, fd, wd, o.dev, true, false).features, g1));
  const auto off = KernelRegion::cube({3}).offsets({1, 1, 1});
  const cuda::DeviceKernelMap again = cuda::build_device_kernel_map(*m, *m, off);
  EXPECT_TRUE(cuda_test::bitwise_equal(cuda::conv_forward(fd, wd, again), y1));
}

// Auto on a small map: gather's per-offset launches outweigh implicit's
// products (conv_dataflow.h), at narrow and wide channels; gather when asked.
TEST_F(MinkowskiCudaConvImplicit, AutoTakesImplicitOnSmallMaps) {
  MK_SKIP_WITHOUT_GPU();
  KnobOverride automatic("ME_CONV_DATAFLOW", "auto");
  auto m = make_map(random_rows(3, 1000, 8, 1, 1, 18), 3, 1);
  expect_matches_cpu(operands(*m, *m, KernelRegion::cube({3}), 16, 16, 81), ConvDataflow::Implicit,
                     "auto 16 -> 16");
  expect_matches_cpu(operands(*m, *m, KernelRegion::cube({3}), 8, 160, 82), ConvDataflow::Implicit,
                     "auto 8 -> 160");
  KnobOverride gather("ME_CONV_DATAFLOW", "gather");
  expect_matches_cpu(operands(*m, *m, KernelRegion::cube({3}), 16, 16, 83), ConvDataflow::Gather,
                     "gather 16 -> 16");
}

// --- no device needed --------------------------------------------------------

TEST(MinkowskiCudaConvDataflowKnob, Parses) {
  EXPECT_EQ(cuda::parse_conv_dataflow("auto"), ConvDataflow::Auto);
  EXPECT_EQ(cuda::parse_conv_dataflow("gather"), ConvDataflow::Gather);
  EXPECT_EQ(cuda::parse_conv_dataflow("implicit"), ConvDataflow::Implicit);
  for (const char* bad : {"", "Implicit", "gemm", "implicit "}) {
    try {
      cuda::parse_conv_dataflow(bad);
      ADD_FAILURE() << "no error for '" << bad << "'";
    } catch (const fk::Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("ME_CONV_DATAFLOW"), std::string::npos) << msg;
      EXPECT_NE(msg.find("one of auto, gather, implicit"), std::string::npos) << msg;
    }
  }
  EXPECT_EQ(cuda::conv_dataflow_knob(),
            cuda::parse_conv_dataflow(fk::knob("ME_CONV_DATAFLOW").as_string()));
  {
    KnobOverride o("ME_CONV_DATAFLOW", "implicit");
    EXPECT_EQ(cuda::conv_dataflow_knob(), ConvDataflow::Implicit);
  }
  EXPECT_THROW(KnobOverride("ME_CONV_DATAFLOW", "fastest"), fk::Error);  // the knob refuses it
}

// A map of `volume` offsets between 4 input and 4 output rows with no pairs:
// enough for the refusals below, which come before any device work.
cuda::DeviceKernelMap empty_map(int volume) {
  cuda::DeviceKernelMap m;
  m.volume = volume;
  m.in_size = m.out_size = 4;
  m.offset_begin.assign(static_cast<size_t>(volume) + 1, 0);
  return m;
}

// f64 operands are refused by name and reason before any device work (the
// device convolution never sends them: it runs gather for f64).
TEST(MinkowskiCudaConvImplicitErrors, F64IsRefusedWithItsReason) {
  const fk::Tensor f = fk::zeros({4, 3}, {fk::DType::F64}),
                   w = fk::zeros({27, 3, 5}, {fk::DType::F64});
  const std::string msg =
      fk::test::error_of([&] { cuda::implicit_conv(f, w, empty_map(27), false); });
  EXPECT_NE(msg.find("operands of dtype f32, f16 or bf16"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f64 (f64: the implicit kernels compute in f32"), std::string::npos) << msg;
}

// A map with more offsets than a row mask holds is refused naming its
// volume, not a repeated pair it does not have (no device work: the masks are
// never made).
TEST(MinkowskiCudaConvImplicitErrors, VolumeOver64IsRefusedByName) {
  const fk::Tensor f = fk::zeros({4, 3}, {fk::DType::F32}),
                   w = fk::zeros({125, 3, 5}, {fk::DType::F32});
  const std::string msg =
      fk::test::error_of([&] { cuda::implicit_conv(f, w, empty_map(125), false); });
  EXPECT_NE(msg.find("volume <= 64"), std::string::npos) << msg;
  EXPECT_NE(msg.find("volume 125 (a 64-bit row mask holds 64 offsets)"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("repeated"), std::string::npos) << msg;
}

}  // namespace
}  // namespace minkowski
