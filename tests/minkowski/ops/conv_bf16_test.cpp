// The bf16 tiles (gather_gemm_bf16.h: vdpbf16ps, f32 accumulation) against
// the dense-grid reference and the f32 dataflows on the same bf16-rounded
// operands: forward, input and weight gradient at several widths (every panel width,
// row tails, odd pair counts), submanifold, strided and 1x1; the
// shapes they do not take and the pair packing's check. Skipped on a CPU
// without AVX-512 BF16.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fk/cpu_isa.h"
#include "fk/fk.h"
#include "fk/test_util.h"
#include "minkowski/minkowski.h"
#include "minkowski/ops/conv_kernel.h"
#include "minkowski/ops/conv_kernel_common.h"
#include "minkowski/ops/conv_reference.h"
#include "minkowski/ops/gather_gemm_bf16.h"

namespace minkowski {
namespace {

using namespace conv_ref;

struct PathReset {
  ~PathReset() {
    fk::mutable_knob("ME_CONV_PATH").set_override(std::nullopt);
    clear_conv_path_choices();
  }
};

std::vector<double> rounded(const fk::Tensor& t) {
  return t.to(fk::DType::BF16).to_vector<double>();
}

const uint16_t* words(const fk::Tensor& t) {
  return static_cast<const uint16_t*>(t.data_ptr());
}

// W (K x C_in x C_out) -> W^T per offset (K x C_out x C_in).
std::vector<double> transposed(const std::vector<double>& w, int k, int cin, int cout) {
  std::vector<double> t(w.size());
  for (int o = 0; o < k; ++o)
    for (int a = 0; a < cin; ++a)
      for (int b = 0; b < cout; ++b) t[(o * cout + b) * cin + a] = w[(o * cin + a) * cout + b];
  return t;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double rel,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double largest = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], rel * (1 + std::abs(want[i]))) << what << " at " << i;
    largest = std::max(largest, std::abs(want[i]));
  }
  EXPECT_GT(largest, 0.5) << what << ": not a test of zeros";
}

// C_in x C_out: every panel width (1..4 vectors, a half vector last), row
// tails of both tile heights, C_in of one pair and of an odd pair count.
const std::vector<std::pair<int, int>> kWidths = {{2, 8},   {6, 24},  {16, 40},
                                                  {40, 56}, {72, 64}, {64, 136}};

TEST(MinkowskiConvBf16, TilesAgainstDenseReferenceInF32) {
  if (!fk::cpu_avx512_bf16())
    GTEST_SKIP() << "no AVX-512 BF16 (this CPU, or FK_CPU_ISA below avx512)";
  for (auto [cin, cout] : kWidths) {
    const std::string what = "C_in " + std::to_string(cin) + " C_out " + std::to_string(cout);
    ASSERT_TRUE(gather_gemm_bf16_supported(cin, cout)) << what;
    Case c = make_case(3, 160, 4, 1, cin, cout, 27, 900 + cin);
    const fk::Tensor f = c.f.to(fk::DType::BF16), w = c.w.to(fk::DType::BF16);
    fk::Tensor g = fk::test::random_tensor({160, cout}, fk::DType::F64, -1, 1, 5);
    const fk::Tensor gh = g.to(fk::DType::BF16);
    SparseTensor x(f, to_tensor(c.rows));
    auto map = x.manager()->kernel_map(x.key(), x.key(), KernelRegion::cube({3}), false);
    const auto offs = cube_offsets(3, 3, 1, 1);
    const auto fv = rounded(c.f), wv = rounded(c.w), gv = rounded(g);
    fk::Tensor out = fk::empty({160, cout}), gin = fk::empty({160, cin});
    conv_detail::forward_bf16(words(f), cin, words(w), cout, *map, out.data<float>());
    // bf16 products are exact in f32: only the f32 sums round
    expect_near_all(out.to_vector<double>(),
                    reference_conv(c.rows, fv, cin, c.rows, wv, cout, offs, 1), 2e-5,
                    what + " output");
    fk::Tensor gw = fk::zeros({27, cin, cout});
    ASSERT_TRUE(
        conv_detail::weight_grad_bf16(words(f), words(gh), cin, cout, *map, gw.data<float>()));
    expect_near_all(gw.to_vector<double>(), reference_weight_grad(c.rows, fv, cin, gv, cout, offs),
                    2e-5, what + " weight gradient");
    // the input gradient's tiles pair the output channels and write C_in
    // columns: C_in on the 8-column grid
    if (!gather_gemm_bf16_supported(cout, cin)) continue;
    conv_detail::input_grad_bf16(words(gh), cin, words(w), cout, *map, gin.data<float>());
    expect_near_all(
        gin.to_vector<double>(),
        reference_conv(c.rows, gv, cout, c.rows, transposed(wv, 27, cin, cout), cin, offs, -1),
        2e-5, what + " feature gradient");
  }
}

// The public convolution in bf16: the tiles (ME_CONV_PATH=tiles) and the f32
// dataflows on converted operands (gemm) round the same f32 sums up to
// round-off, so they agree to one bf16 step; both within bf16 rounding of the
// reference.
void check_public(const KernelRegion& region, const std::vector<int32_t>& stride) {
  PathReset reset;
  for (auto [cin, cout] : kWidths) {
    const std::string what = "C_in " + std::to_string(cin) + " C_out " + std::to_string(cout);
    Case c = make_case(3, 200, 5, 1, cin, cout, static_cast<int>(region.volume(3)), 40 + cout);
    SparseTensor x(c.f.to(fk::DType::BF16), to_tensor(c.rows));
    std::vector<std::vector<double>> runs[2];
    for (int i = 0; i < 2; ++i) {
      fk::mutable_knob("ME_CONV_PATH").set_override(i == 0 ? "tiles" : "gemm");
      fk::Tensor f = x.F().clone().set_requires_grad(true);
      fk::Tensor w = c.w.to(fk::DType::BF16).set_requires_grad(true);
      SparseTensor xx(f, x.key(), x.manager());
      SparseTensor y = convolution(xx, w, fk::Tensor(), region, stride);
      EXPECT_EQ(last_conv_call().path, i == 0 ? ConvPath::Tiles : ConvPath::Gemm) << what;
      fk::sum(fk::mul(y.F(), y.F())).backward();
      EXPECT_EQ(f.grad().dtype(), fk::DType::BF16);
      runs[i] = {y.F().to_vector<double>(), f.grad().to_vector<double>(),
                 w.grad().to_vector<double>()};
    }
    const char* names[3] = {"output", "feature gradient", "weight gradient"};
    for (int k = 0; k < 3; ++k) {
      ASSERT_EQ(runs[0][k].size(), runs[1][k].size());
      for (size_t i = 0; i < runs[0][k].size(); ++i)
        ASSERT_NEAR(runs[0][k][i], runs[1][k][i], std::ldexp(std::abs(runs[1][k][i]), -7) + 1e-3)
            << what << " " << names[k] << " at " << i;
    }
  }
}

TEST(MinkowskiConvBf16, TilesAgreeWithF32PathSubmanifoldAndOneByOne) {
  if (!fk::cpu_avx512_bf16())
    GTEST_SKIP() << "no AVX-512 BF16 (this CPU, or FK_CPU_ISA below avx512)";
  check_public(KernelRegion::cube({3}), {1});
  check_public(KernelRegion::cube({1}), {1});
}

TEST(MinkowskiConvBf16, TilesAgreeWithF32PathStrided) {
  if (!fk::cpu_avx512_bf16())
    GTEST_SKIP() << "no AVX-512 BF16 (this CPU, or FK_CPU_ISA below avx512)";
  check_public(KernelRegion::cube({2}), {2});
  check_public(KernelRegion::cube({3}), {2});
}

TEST(MinkowskiConvBf16, ShapesTheTilesDoNotTake) {
  // An odd C_in (no whole channel pairs) or a C_out off the 8-column grid runs
  // the f32 dataflows even when tiles are forced.
  EXPECT_FALSE(gather_gemm_bf16_supported(5, 8));
  EXPECT_FALSE(gather_gemm_bf16_supported(8, 12));
  EXPECT_FALSE(gather_gemm_bf16_supported(0, 8));
  PathReset reset;
  fk::mutable_knob("ME_CONV_PATH").set_override("tiles");
  Case c = make_case(3, 100, 4, 1, 5, 8, 27, 3);
  SparseTensor x(c.f.to(fk::DType::BF16), to_tensor(c.rows));
  SparseTensor y = convolution(x, c.w.to(fk::DType::BF16), fk::Tensor(), KernelRegion::cube({3}));
  EXPECT_EQ(y.F().dtype(), fk::DType::BF16);
  const auto want =
      reference_conv(c.rows, rounded(c.f), 5, c.rows, rounded(c.w), 8, cube_offsets(3, 3, 1, 1), 1);
  const auto got = y.F().to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], std::ldexp(std::abs(want[i]), -7) + 1e-6) << i;
  std::vector<uint16_t> w(3 * 8, 0);
  std::vector<uint32_t> packed(24);
  EXPECT_THROW(pack_pairs_bf16(w.data(), 3, 8, packed.data()), fk::Error);
}

}  // namespace
}  // namespace minkowski
