// The f32 tiles on a kernel map's kept row blocks (row_blocks.h): forward,
// input and weight gradient against a plain f64 sum over the map's pairs on
// maps of thousands of rows (convolution blocks spanning many row blocks:
// the weight gradient's, a strided map's input gradient), a second call on
// the same map reusing the blocks with the same bits, and a map built afresh
// from the same coordinates (its own blocks) giving the same bits again.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fk/cpu_isa.h"
#include "fk/fk.h"
#include "fk/test_util.h"
#include "minkowski/coords/coordinate_rows.h"
#include "minkowski/minkowski.h"
#include "minkowski/ops/conv_kernel.h"

namespace minkowski {
namespace {

struct Grads {
  std::vector<float> y, gf, gw;
};

Grads run(const KernelMap& m, const fk::Tensor& f, const fk::Tensor& w, const fk::Tensor& g) {
  Grads r;
  r.y = conv_forward(f, w, m).to_vector<float>();
  ConvGrads b = conv_backward(g, f, w, m, true, true);
  r.gf = b.features.to_vector<float>();
  r.gw = b.weight.to_vector<float>();
  return r;
}

// The three results as plain f64 sums over the map's pairs.
Grads plain(const KernelMap& m, const fk::Tensor& f, const fk::Tensor& w, const fk::Tensor& g) {
  const int64_t cin = f.size(1), cout = w.size(2);
  const auto F = f.to_vector<double>(), W = w.to_vector<double>(), G = g.to_vector<double>();
  std::vector<double> y(m.out_size * cout), gf(m.in_size * cin), gw(W.size());
  for (int64_t k = 0; k < m.volume; ++k)
    for (int64_t p = m.offset_begin[k]; p < m.offset_begin[k + 1]; ++p) {
      const int64_t i = m.in_rows[p], o = m.out_rows[p];
      for (int64_t a = 0; a < cin; ++a)
        for (int64_t b = 0; b < cout; ++b) {
          const double wk = W[(k * cin + a) * cout + b];
          y[o * cout + b] += F[i * cin + a] * wk;
          gf[i * cin + a] += G[o * cout + b] * wk;
          gw[(k * cin + a) * cout + b] += F[i * cin + a] * G[o * cout + b];
        }
    }
  auto to_f = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  return {to_f(y), to_f(gf), to_f(gw)};
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, double tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " at " << i;
}

TEST(MinkowskiConvRowBlocks, KeptBlocksAgainstPlainSumsAndSameBitsOnReuse) {
  if (fk::cpu_isa() < fk::CpuIsa::Avx2) GTEST_SKIP() << "no f32 tiles on this CPU";
  fk::KnobOverride tiles("ME_CONV_PATH", "tiles");
  const fk::Tensor coords_t = coords(lcg_cloud(3000, 5, 10), 4);
  for (int stride : {1, 2}) {
    CoordinateManager mgr(3);
    const MapKey in = mgr.insert(coords_t, {1}).key;
    auto km = mgr.kernel_map(in, mgr.stride(in, {stride}), KernelRegion::cube({3}), false);
    ASSERT_GT(km->in_size, 8 * RowBlocks::kRows);
    const int64_t c = 16;
    const fk::Tensor f = fk::test::random_tensor({km->in_size, c}, fk::DType::F32, -1, 1, 1);
    const fk::Tensor w = fk::test::random_tensor({27, c, c}, fk::DType::F32, -1, 1, 2);
    const fk::Tensor g = fk::test::random_tensor({km->out_size, c}, fk::DType::F32, -1, 1, 3);
    const std::string what = "stride " + std::to_string(stride);
    const Grads first = run(*km, f, w, g);
    EXPECT_EQ(last_conv_call().path, ConvPath::Tiles);
    const Grads want = plain(*km, f, w, g);
    expect_near(first.y, want.y, 1e-5, what + " output");
    expect_near(first.gf, want.gf, 1e-5, what + " feature gradient");
    expect_near(first.gw, want.gw, 1e-4, what + " weight gradient");
    // The second call takes the kept blocks: the same objects, the same bits.
    const RowBlocks* out_blocks = &km->row_blocks(false);
    const RowBlocks* in_blocks = &km->row_blocks(true);
    const Grads again = run(*km, f, w, g);
    EXPECT_EQ(&km->row_blocks(false), out_blocks);
    EXPECT_EQ(&km->row_blocks(true), in_blocks);
    EXPECT_EQ(again.y, first.y) << what;
    EXPECT_EQ(again.gf, first.gf) << what;
    EXPECT_EQ(again.gw, first.gw) << what;
    // A map built afresh has blocks of its own and gives the same bits.
    CoordinateManager mgr2(3);
    const MapKey in2 = mgr2.insert(coords_t, {1}).key;
    auto km2 = mgr2.kernel_map(in2, mgr2.stride(in2, {stride}), KernelRegion::cube({3}), false);
    const Grads fresh = run(*km2, f, w, g);
    EXPECT_NE(&km2->row_blocks(false), out_blocks);
    EXPECT_EQ(fresh.y, first.y) << what;
    EXPECT_EQ(fresh.gf, first.gf) << what;
    EXPECT_EQ(fresh.gw, first.gw) << what;
  }
}

}  // namespace
}  // namespace minkowski
