// The dataflow cost model (conv_dataflow.h), on the host (no device; these
// run in minkowski_tests, in every build): the
// padded slot count against hand counts, the two costs against the formulas
// written out for one small problem, and auto's choice on constructed maps:
// a dense block (a real CPU kernel map), rows with random offset masks at
// narrow and wide channels, and a small map (launch-bound).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "minkowski/coords/coordinate_map.h"
#include "minkowski/coords/kernel_map.h"
#include "minkowski/coords/kernel_region.h"
#include "minkowski/cuda/conv_dataflow.h"

namespace minkowski {
namespace {

using cuda::ConvDataflow;
using cuda::ConvPrecision;
using cuda::DataflowProblem;

TEST(MinkowskiCudaConvDataflow, PaddedSlotsCountTheTilesOffsets) {
  // Sorted: 1, 1 | 3, 4 -> tiles of 2 rows: OR 1 (1 offset), OR 7 (3).
  EXPECT_EQ(cuda::padded_slots({4, 1, 3, 1}, 2), 1 * 2 + 3 * 2);
  // One tile of 4: OR 7.
  EXPECT_EQ(cuda::padded_slots({4, 1, 3, 1}, 4), 3 * 4);
  // A partial last tile counts its full height (the kernel runs it): 1 | 2.
  EXPECT_EQ(cuda::padded_slots({2, 1, 1}, 2), 1 * 2 + 1 * 2);
  // Rows without pairs cost nothing.
  EXPECT_EQ(cuda::padded_slots({0, 0, 0}, 2), 0);
  EXPECT_EQ(cuda::implicit_tile_rows(32), 128);
  EXPECT_EQ(cuda::implicit_tile_rows(33), 64);
}

TEST(MinkowskiCudaConvDataflow, CostsAreTheWrittenOutFormulas) {
  // gather's 4-byte rows at 3e9, its 2-byte rows at 1e9
  const cuda::DataflowMachine m{1e-6, 1e9, {3e9, 1e9}, {1e9, 2e9, 4e9}, {0, 1e9, 2e9}, 5e8};
  DataflowProblem p;
  p.rows = 100;
  p.pairs_per_offset = {50, 0, 30};
  p.padded_slots = 256;
  p.inner = 16;
  p.cols = 8;
  p.element_bytes = 2;
  p.precision = ConvPrecision::Half;
  p.implicit_tensor_cores = true;
  // Gather: GEMMs max(1 us, 2 n 16 8 / 4e9): 3.2 us and 1.92 us; bytes
  // 80 (2 (3 16 + 2 8) + 8 8) + 100 8 (4 + 4 + 2) = 23360 at 1e9; 4 launches.
  const double gather = 3.2e-6 + 1.92e-6 + 23360 / 1e9 + 4e-6;
  // Implicit: 2 x 256 x 16 x 32 (8 columns padded to a 32-wide tile) at 2e9;
  // bytes 80 16 2 + 100 8 2 = 4160 at 1e9 (smaller); one launch.
  const double implicit = 1e-6 + 2.0 * 256 * 16 * 32 / 2e9;
  const cuda::DataflowCosts c = cuda::dataflow_costs(p, m);
  EXPECT_NEAR(c.gather_s, gather, 1e-12);
  EXPECT_NEAR(c.implicit_s, implicit, 1e-12);
  EXPECT_EQ(cuda::choose_conv_dataflow(ConvDataflow::Auto, p, m), ConvDataflow::Gather);
  // The FMA tiles: f32 rate 5e8, depth 16.
  p.implicit_tensor_cores = false;
  EXPECT_NEAR(cuda::dataflow_costs(p, m).implicit_s, 1e-6 + 2.0 * 256 * 16 * 32 / 5e8, 1e-12);
  // TF32 products are 8 deep: 20 inner channels pad to 24 (FMA tiles: 32);
  // f32 operands: 4 bytes (gather's rows at 3e9), three launches beside the
  // GEMMs.
  p.implicit_tensor_cores = true;
  p.precision = ConvPrecision::Tf32;
  p.element_bytes = 4;
  p.inner = 20;
  EXPECT_NEAR(cuda::dataflow_costs(p, m).implicit_s, 1e-6 + 2.0 * 256 * 24 * 32 / 1e9, 1e-12);
  const double gemms = 2 * 50 * 20 * 8 / 2e9 + 2 * 30 * 20 * 8 / 2e9;
  const double bytes = 80 * (4.0 * (3 * 20 + 2 * 8) + 8 * 8) + 100 * 8 * 4;
  EXPECT_NEAR(cuda::dataflow_costs(p, m).gather_s, gemms + bytes / 3e9 + 3e-6, 1e-12);
}

TEST(MinkowskiCudaConvDataflow, ForcedChoicesAndEligibility) {
  DataflowProblem p;
  p.rows = 10;
  p.pairs_per_offset = {10};
  p.inner = p.cols = 8;
  p.padded_slots = 128;
  EXPECT_EQ(cuda::choose_conv_dataflow(ConvDataflow::Gather, p), ConvDataflow::Gather);
  EXPECT_EQ(cuda::choose_conv_dataflow(ConvDataflow::Implicit, p), ConvDataflow::Implicit);
  p.padded_slots = -1;  // volume > 64 or repeated pairs
  EXPECT_EQ(cuda::choose_conv_dataflow(ConvDataflow::Implicit, p), ConvDataflow::Gather);
  EXPECT_EQ(cuda::choose_conv_dataflow(ConvDataflow::Auto, p), ConvDataflow::Gather);
  EXPECT_TRUE(std::isinf(cuda::dataflow_costs(p).implicit_s));
}

// f64 products never take the implicit kernels (they compute in f32), forced
// or not, and the refusal names the dtype; 4- and 2-byte products are open.
TEST(MinkowskiCudaConvDataflow, F64IsRefusedWithItsReason) {
  DataflowProblem p;
  p.rows = 10;
  p.pairs_per_offset = {10};
  p.inner = p.cols = 8;
  p.padded_slots = 128;
  p.element_bytes = 8;
  EXPECT_EQ(cuda::choose_conv_dataflow(ConvDataflow::Implicit, p), ConvDataflow::Gather);
  EXPECT_EQ(cuda::choose_conv_dataflow(ConvDataflow::Auto, p), ConvDataflow::Gather);
  const char* why = cuda::implicit_refusal(8);
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("f64"), std::string::npos) << why;
  EXPECT_EQ(cuda::implicit_refusal(4), nullptr);
  EXPECT_EQ(cuda::implicit_refusal(2), nullptr);
  p.element_bytes = 4;
  EXPECT_EQ(cuda::choose_conv_dataflow(ConvDataflow::Implicit, p), ConvDataflow::Implicit);
}

// The problem of rows with these masks (volume offsets), channels c -> c.
DataflowProblem problem(const std::vector<uint64_t>& masks, int volume, int64_t c,
                        ConvPrecision precision, bool tensor_cores) {
  DataflowProblem p;
  p.rows = static_cast<int64_t>(masks.size());
  p.pairs_per_offset.assign(volume, 0);
  for (uint64_t m : masks)
    for (int k = 0; k < volume; ++k) p.pairs_per_offset[k] += (m >> k) & 1;
  p.inner = p.cols = c;
  p.element_bytes = precision == ConvPrecision::Half ? 2 : 4;
  p.precision = precision;
  p.implicit_tensor_cores = tensor_cores;
  p.padded_slots = cuda::padded_slots(masks, cuda::implicit_tile_rows(c));
  return p;
}

// Rows with the centre offset and each other of 26 with probability 1/3,
// independently (9.7 pairs a row): sorting by mask makes a tile's rows share
// their high bits, not their low ones, so a tile's OR covers about 19.
std::vector<uint64_t> random_masks(int64_t rows, unsigned seed) {
  std::mt19937 g(seed);
  std::bernoulli_distribution present(1.0 / 3.0);
  std::vector<uint64_t> masks(rows, uint64_t{1} << 13);
  for (uint64_t& m : masks)
    for (int k = 0; k < 27; ++k)
      if (k != 13 && present(g)) m |= uint64_t{1} << k;
  return masks;
}

// A dense 24^3 block, submanifold 3^3 (a CPU kernel map): masks are mostly
// all 27 offsets, the tiles dense, and one launch beats 27 GEMM launches
// and every pair's round trip through DRAM.
TEST(MinkowskiCudaConvDataflow, DenseBlockTakesImplicit) {
  std::vector<int32_t> rows;
  for (int x = 0; x < 24; ++x)
    for (int y = 0; y < 24; ++y)
      for (int z = 0; z < 24; ++z) rows.insert(rows.end(), {0, x, y, z});
  const CoordinateMap map(rows.data(), 24 * 24 * 24, 4, {1, 1, 1});
  const auto km = build_kernel_map(map, map, KernelRegion::cube({3}).offsets({1, 1, 1}));
  std::vector<uint64_t> masks(km->out_size, 0);
  for (int64_t k = 0; k < km->volume; ++k)
    for (int64_t p = km->offset_begin[k]; p < km->offset_begin[k + 1]; ++p)
      masks[km->out_rows[p]] |= uint64_t{1} << k;
  for (int64_t c : {32, 64}) {
    const DataflowProblem p = problem(masks, 27, c, ConvPrecision::Half, true);
    const double density = static_cast<double>(km->pairs()) / static_cast<double>(p.padded_slots);
    EXPECT_GT(density, 0.8) << c;
    EXPECT_EQ(cuda::choose_conv_dataflow(ConvDataflow::Auto, p), ConvDataflow::Implicit) << c;
  }
}

// 400k rows of random masks (tile density about 1/2 after sorting): narrow
// channels take implicit (gather is bound by moving pairs), 256 channels
// take gather (implicit's wasted products outweigh the traffic), in 16 bits
// on tensor cores and in f32 on FMAs alike.
TEST(MinkowskiCudaConvDataflow, SparseTilesSwitchWithChannelWidth) {
  const std::vector<uint64_t> masks = random_masks(400000, 7);
  const DataflowProblem narrow = problem(masks, 27, 32, ConvPrecision::Half, true);
  int64_t pairs = 0;
  for (int64_t n : narrow.pairs_per_offset) pairs += n;
  const double density = static_cast<double>(pairs) / static_cast<double>(narrow.padded_slots);
  EXPECT_GT(density, 0.4);
  EXPECT_LT(density, 0.6);
  EXPECT_EQ(cuda::choose_conv_dataflow(ConvDataflow::Auto, narrow), ConvDataflow::Implicit);
  const DataflowProblem wide = problem(masks, 27, 256, ConvPrecision::Half, true);
  EXPECT_EQ(cuda::choose_conv_dataflow(ConvDataflow::Auto, wide), ConvDataflow::Gather);
  EXPECT_EQ(cuda::choose_conv_dataflow(ConvDataflow::Auto,
                                       problem(masks, 27, 256, ConvPrecision::F32, false)),
            ConvDataflow::Gather);
}

// 1000 rows: gather's 27 GEMM launches alone outweigh implicit's products,
// even at 256 channels.
TEST(MinkowskiCudaConvDataflow, SmallMapsAreLaunchBound) {
  const std::vector<uint64_t> masks = random_masks(1000, 8);
  for (int64_t c : {16, 256}) {
    const DataflowProblem p = problem(masks, 27, c, ConvPrecision::Half, true);
    const cuda::DataflowCosts costs = cuda::dataflow_costs(p);
    EXPECT_GT(costs.gather_s, 27 * cuda::default_dataflow_machine().launch_s) << c;
    EXPECT_EQ(cuda::choose_conv_dataflow(ConvDataflow::Auto, p), ConvDataflow::Implicit) << c;
  }
}

}  // namespace
}  // namespace minkowski
