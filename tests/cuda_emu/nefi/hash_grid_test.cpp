// hash_grid.cu's kernels run on the emulated device (emulated_device.h):
// the encoding against nefi::hash_grid_encode (the CPU's op) bit for bit, in
// 1-, 2- and 3-D with dense and hashed levels, a partly open window and
// points outside the domain; the table's gradient against the CPU op's
// backward, through an inverse map built here by sorting every (row,
// point, vertex) triple (not by the device path's builder): the CPU's bits
// on rows of one chunk, and on the longer rows the chunks' own sums added
// in order. In both thread orders.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "fk/autograd.h"
#include "fk/factory.h"
#include "nefi/cuda/hash_grid_kernels.h"
#include "nefi/field/hash_grid_field.h"

// The emulated launchers this file runs: hash_grid_kernels.h's, in ::emu.
namespace nefi::cuda::emu {
void launch_hash_grid_encode(const HashGridLevels& levels, int64_t n, const float* coords,
                             const float* table, const float* level_weight, float* y, void* stream);
void launch_hash_grid_encode_backward(const HashGridLevels& levels, const HashGridInverse& inv,
                                      const float* coords, const float* level_weight,
                                      const float* g, float* partial, float* grad_table,
                                      void* stream);
}  // namespace nefi::cuda::emu

namespace nc = nefi::cuda;
using fkemu_test::expect_same_bits;
using fkemu_test::in_both_orders;
using fkemu_test::random_values;

namespace {

size_t at(int64_t i) {
  return static_cast<size_t>(i);
}

// The inverse map of `x`'s points, from a sort of (row, point, vertex).
struct Inverse {
  std::vector<int64_t> start, chunk_start;
  std::vector<int32_t> contribution, chunk_row;
  nc::HashGridInverse view() const {
    return {start.data(),     contribution.data(),   chunk_start.data(),
            chunk_row.data(), std::ssize(start) - 1, std::ssize(chunk_row)};
  }
};

template <int D>
Inverse inverse(const std::vector<float>& x, const nc::HashGridLevels& L, int64_t entries) {
  std::vector<std::tuple<int64_t, int64_t, int>> triples;
  const int64_t n = std::ssize(x) / D;
  for (int64_t i = 0; i < n; ++i)
    for (int l = 0; l < L.count; ++l) {
      int64_t row[1 << D];
      float weight[1 << D];
      nc::hash_grid_corners<D>(x.data() + i * D, L.level[l], row, weight);
      for (int k = 0; k < (1 << D); ++k) triples.emplace_back(row[k], i, k);
    }
  std::sort(triples.begin(), triples.end());
  Inverse inv;
  inv.start.assign(at(entries + 1), 0);
  for (const auto& [row, i, k] : triples) {
    ++inv.start[at(row + 1)];
    inv.contribution.push_back(static_cast<int32_t>((i << D) | k));
  }
  for (int64_t e = 0; e < entries; ++e) inv.start[at(e + 1)] += inv.start[at(e)];
  inv.chunk_start.assign(inv.start.size(), 0);
  for (int64_t e = 0; e < entries; ++e) {
    const int64_t terms = inv.start[at(e + 1)] - inv.start[at(e)];
    const int64_t chunks = (terms + nc::kHashGridChunk - 1) / nc::kHashGridChunk;
    inv.chunk_start[at(e + 1)] = inv.chunk_start[at(e)] + chunks;
    for (int64_t j = 0; j < chunks; ++j) inv.chunk_row.push_back(static_cast<int32_t>(e));
  }
  return inv;
}

template <int D>
void check(int64_t n, int log2_table, int features) {
  SCOPED_TRACE(std::to_string(D) + "-D, " + std::to_string(n) + " points, " +
               std::to_string(features) + " features");
  nefi::HashGridConfig cfg;
  cfg.levels = 5;
  cfg.features = features;
  cfg.log2_table = log2_table;
  cfg.base_resolution = 2;
  const nefi::HashGridLayout layout = nefi::hash_grid_layout(D, cfg, 10);
  ASSERT_TRUE(layout.hashed(cfg.levels - 1));
  const nc::HashGridLevels L = nefi::hash_grid_levels(layout);
  const int F = cfg.features;
  std::vector<float> x = random_values<float>(n * D, 1);
  for (float& v : x) v *= 1.2f;  // some outside (-1, 1): the clamp
  const std::vector<float> table = random_values<float>(layout.entries * F, 2);
  const std::vector<double> window = nefi::hash_grid_level_weights(cfg.levels, 0.5, true);
  std::vector<float> lw;
  for (double w : window) lw.push_back(static_cast<float>(w));
  ASSERT_EQ(lw[4], 0.0f);  // a closed level
  ASSERT_GT(lw[3], 0.0f);
  ASSERT_LT(lw[3], 1.0f);  // a ramping one

  fk::Tensor t = fk::from_vector(table, fk::Dims{layout.entries, F});
  t.set_requires_grad(true);
  const fk::Tensor y =
      nefi::hash_grid_encode(fk::from_vector(x, fk::Dims{n, D}), t, layout, window);
  const std::vector<float> g = random_values<float>(n * cfg.levels * F, 3);
  y.backward(fk::from_vector(g, y.shape()));
  const std::vector<float> want_y = y.to_vector<float>(), want_dt = t.grad().to_vector<float>();

  const Inverse inv = inverse<D>(x, L, layout.entries);
  // The longer rows: their chunks' sums, each as the CPU sums, added in order.
  std::vector<float> want = want_dt;
  bool chunked = false;
  for (int64_t e = 0; e < layout.entries; ++e) {
    if (inv.chunk_start[at(e + 1)] - inv.chunk_start[at(e)] <= 1) continue;
    chunked = true;
    int l = 0;
    while (l + 1 < L.count && L.level[l + 1].offset <= e) ++l;
    for (int f = 0; f < F; ++f) {
      float total = 0, chunk = 0;
      for (int64_t c = inv.start[at(e)]; c < inv.start[at(e + 1)]; ++c) {
        const int64_t i = inv.contribution[at(c)] >> D;
        const int k = inv.contribution[at(c)] & ((1 << D) - 1);
        int64_t row[1 << D];
        float weight[1 << D];
        nc::hash_grid_corners<D>(x.data() + i * D, L.level[l], row, weight);
        chunk += weight[k] * lw[at(l)] * g[at(i * cfg.levels * F + l * F + f)];
        const bool last = c + 1 == inv.start[at(e + 1)];
        if ((c - inv.start[at(e)] + 1) % nc::kHashGridChunk == 0 || last) {
          total = c - inv.start[at(e)] < nc::kHashGridChunk ? chunk : total + chunk;
          chunk = 0;
        }
      }
      want[at(e * F + f)] = lw[at(l)] == 0.0f ? 0.0f : total;
    }
  }
  EXPECT_TRUE(chunked);
  in_both_orders([&](fkemu::Order) {
    std::vector<float> got_y(want_y.size(), -7.0f);
    nc::emu::launch_hash_grid_encode(L, n, x.data(), table.data(), lw.data(), got_y.data(),
                                     nullptr);
    expect_same_bits(got_y, want_y, F * cfg.levels, "encode");
    std::vector<float> partial(at(std::ssize(inv.chunk_row) * F), -7.0f);
    std::vector<float> got(want.size(), -7.0f);
    nc::emu::launch_hash_grid_encode_backward(L, inv.view(), x.data(), lw.data(), g.data(),
                                              partial.data(), got.data(), nullptr);
    expect_same_bits(got, want, F, "table gradient");
  });
}

TEST(EmulatedHashGrid, EncodeAndTableGradientEqualTheCpu) {
  check<1>(700, 4, 1);  // 1-D: 16-row tables; coarse rows of hundreds of terms
  check<2>(300, 6, 5);  // the kernels sum features 4 at a time: a group and one more
  check<3>(150, 7, 2);
}

}  // namespace
