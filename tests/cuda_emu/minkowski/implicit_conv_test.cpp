// implicit_conv.cu's kernels run on the emulated device (emulated_device.h):
// the row masks and tile slots against host counts, and the FMA tiles
// against a plain loop over each row's pairs in the kernel's documented sum
// order (offsets ascending, then inner channels ascending, one f32 FMA
// each, one rounding per output), bit for bit, in both thread orders.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "cuda_emu/minkowski/device_pairs.h"
#include "fk/cuda/kernels.h"
#include "fk/error.h"
#include "minkowski/cuda/conv_dataflow.h"
#include "minkowski/cuda/kernels.h"

// The emulated launchers this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link).
namespace minkowski::cuda::emu {
void launch_row_masks(const int32_t* begin, const int32_t* pair, int64_t rows,
                      const int64_t* offset_begin, int64_t volume, uint64_t* mask,
                      int32_t* repeated, void* stream);
void launch_tile_slots(const uint64_t* sorted_mask, int64_t rows, int tile_rows,
                       unsigned long long* slots, void* stream);
void launch_implicit_conv(int dtype, const ImplicitConvArgs& args, void* stream);
}  // namespace minkowski::cuda::emu

namespace mc = minkowski::cuda;

using fkemu_test::dtype_code;
using fkemu_test::narrow;
using fkemu_test::widen;

using fkemu_test::DevicePairs;
using fkemu_test::random_pairs;
using fkemu_test::row_index;
using fkemu_test::RowIndex;

namespace {

int offset_of(const DevicePairs& m, int64_t p) {
  int k = 0;
  while (m.offset_begin[static_cast<size_t>(k + 1)] <= p) ++k;
  return k;
}

// The rows' masks and their order (stable by mask), from the emulated kernel,
// checked against the host's.
struct Masks {
  std::vector<uint64_t> mask;
  std::vector<int32_t> order;
};
Masks masks_of(const DevicePairs& m, const RowIndex& x, int64_t rows) {
  Masks out;
  out.mask.assign(static_cast<size_t>(rows), 0);
  int32_t repeated = 0;
  mc::emu::launch_row_masks(x.begin.data(), x.pair.data(), rows, m.offset_begin.data(), m.volume,
                            out.mask.data(), &repeated, nullptr);
  EXPECT_EQ(repeated, 0);
  for (int64_t r = 0; r < rows; ++r) {
    uint64_t want = 0;
    for (int32_t e = x.begin[static_cast<size_t>(r)]; e < x.begin[static_cast<size_t>(r + 1)]; ++e)
      want |= uint64_t{1} << offset_of(m, x.pair[static_cast<size_t>(e)]);
    EXPECT_EQ(out.mask[static_cast<size_t>(r)], want) << "row " << r;
  }
  out.order.resize(static_cast<size_t>(rows));
  std::iota(out.order.begin(), out.order.end(), 0);
  std::stable_sort(out.order.begin(), out.order.end(), [&](int32_t a, int32_t b) {
    return out.mask[static_cast<size_t>(a)] < out.mask[static_cast<size_t>(b)];
  });
  return out;
}

template <typename S>
uint32_t bits_of(S v) {
  uint32_t b = 0;
  std::memcpy(&b, &v, sizeof(S));
  return b;
}

// One product (forward, or input gradient when `transposed`) on the
// emulated device in the given thread order, checked against the plain loop.
template <typename S>
void check_product(const DevicePairs& m, int64_t cin, int64_t cout, bool transposed,
                   uint32_t seed) {
  const int64_t rows = transposed ? m.n_in : m.n_out, src_rows = transposed ? m.n_out : m.n_in;
  const int64_t inner = transposed ? cout : cin, cols = transposed ? cin : cout;
  const std::vector<int32_t>& dest = transposed ? m.in_rows : m.out_rows;
  const std::vector<int32_t>& other = transposed ? m.out_rows : m.in_rows;
  const RowIndex x = row_index(dest, rows);
  const Masks masks = masks_of(m, x, rows);

  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<S> src(static_cast<size_t>(src_rows * inner)),
      w(static_cast<size_t>(m.volume * cin * cout));
  for (S& v : src) v = narrow<S>(u(rng));
  for (S& v : w) v = narrow<S>(u(rng));
  // W is K x C_in x C_out; the input gradient multiplies by W_k^T.
  const int64_t w_k = cin * cout, w_c = transposed ? 1 : cout, w_n = transposed ? cout : 1;

  std::vector<S> want(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t n = 0; n < cols; ++n) {
      float acc = 0.0f;
      for (int32_t e = x.begin[static_cast<size_t>(r)]; e < x.begin[static_cast<size_t>(r + 1)];
           ++e) {
        const int32_t p = x.pair[static_cast<size_t>(e)];
        const int64_t k = offset_of(m, p), i = other[static_cast<size_t>(p)];
        for (int64_t c = 0; c < inner; ++c)
          acc = std::fma(widen(src[static_cast<size_t>(i * inner + c)]),
                         widen(w[static_cast<size_t>(k * w_k + c * w_c + n * w_n)]), acc);
      }
      want[static_cast<size_t>(r * cols + n)] = narrow<S>(acc);
    }

  for (fkemu::Order order : {fkemu::Order::kAscending, fkemu::Order::kDescending}) {
    fkemu::set_order(order);
    // Poisoned: every output must be written.
    std::vector<S> got(static_cast<size_t>(rows * cols), narrow<S>(NAN));
    mc::ImplicitConvArgs a{src.data(),
                           inner,
                           w.data(),
                           w_k,
                           w_c,
                           w_n,
                           cols,
                           masks.order.data(),
                           x.begin.data(),
                           x.pair.data(),
                           other.data(),
                           masks.mask.data(),
                           rows,
                           got.data()};
    mc::emu::launch_implicit_conv(dtype_code<S>(), a, nullptr);
    int64_t wrong = 0;
    for (size_t e = 0; e < got.size(); ++e)
      if (bits_of(got[e]) != bits_of(want[e]) && wrong++ < 5)
        ADD_FAILURE() << "row " << e / cols << " channel " << e % cols << ": got " << widen(got[e])
                      << ", want " << widen(want[e]) << " (order "
                      << (order == fkemu::Order::kAscending ? "ascending" : "descending") << ")";
    EXPECT_EQ(wrong, 0) << "rows " << rows << ", inner " << inner << ", cols " << cols;
  }
  fkemu::set_order(fkemu::starting_order());
}

TEST(EmulatedImplicitConv, RowMasksAndTileSlotsMatchTheHost) {
  const DevicePairs m = random_pairs(700, 600, 64, 0.3, 1);
  const RowIndex x = row_index(m.out_rows, m.n_out);
  const Masks masks = masks_of(m, x, m.n_out);
  std::vector<uint64_t> sorted(masks.mask.size());
  for (size_t r = 0; r < sorted.size(); ++r)
    sorted[r] = masks.mask[static_cast<size_t>(masks.order[r])];
  for (int tile : {64, 128}) {
    unsigned long long slots = 0;
    mc::emu::launch_tile_slots(sorted.data(), m.n_out, tile, &slots, nullptr);
    EXPECT_EQ(static_cast<int64_t>(slots), mc::padded_slots(masks.mask, tile)) << "tile " << tile;
  }
}

TEST(EmulatedImplicitConv, RowMasksFlagARowWithTwoPairsInOneOffset) {
  // Two pairs of output row 3 in offset 1: a map no distinct coordinates make.
  DevicePairs m{4, 4, 2, {0, 1, 3}, {0, 1, 2}, {3, 3, 3}};
  const RowIndex x = row_index(m.out_rows, 4);
  std::vector<uint64_t> mask(4);
  int32_t repeated = 0;
  mc::emu::launch_row_masks(x.begin.data(), x.pair.data(), 4, m.offset_begin.data(), 2, mask.data(),
                            &repeated, nullptr);
  EXPECT_EQ(repeated, 1);
  EXPECT_EQ(mask[3], 3u);
  EXPECT_EQ(mask[0], 0u);
}

TEST(EmulatedImplicitConv, ForwardF32AtNarrowAndWideOutputs) {
  const DevicePairs m = random_pairs(300, 260, 27, 0.4, 2);
  check_product<float>(m, 5, 3, false, 10);    // one 32-wide tile, inner past no full slice
  check_product<float>(m, 37, 33, false, 11);  // 64-wide tiles, inner 16 + 16 + 5
  check_product<float>(m, 16, 70, false, 12);  // two column tiles, the second partial
}

TEST(EmulatedImplicitConv, InputGradientF32) {
  const DevicePairs m = random_pairs(280, 300, 27, 0.4, 3);
  check_product<float>(m, 33, 20, true, 13);
  check_product<float>(m, 7, 48, true, 14);
}

TEST(EmulatedImplicitConv, SixtyFourOffsetsAndRowsWithoutPairs) {
  // Sparse: many rows have no pair at all (zeros), and offset 63 is used.
  const DevicePairs m = random_pairs(200, 200, 64, 0.05, 4);
  ASSERT_GT(m.offset_begin[64], m.offset_begin[63]);
  check_product<float>(m, 9, 17, false, 15);
}

TEST(EmulatedImplicitConv, HalfAndBFloat16RoundOncePerOutput) {
  const DevicePairs m = random_pairs(200, 180, 27, 0.5, 5);
  check_product<__half>(m, 24, 40, false, 16);
  check_product<__nv_bfloat16>(m, 24, 40, false, 17);
  check_product<__half>(m, 12, 10, true, 18);
}

TEST(EmulatedImplicitConv, RefusesF64ByName) {
  mc::ImplicitConvArgs a{};
  a.rows = 1;
  a.cols = 1;
  try {
    mc::emu::launch_implicit_conv(fk::cuda::kF64, a, nullptr);
    FAIL() << "f64 ran";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("f32, f16 or bf16"), std::string::npos) << e.what();
  }
}

}  // namespace
