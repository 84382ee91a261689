// The wave device's sums across threads (nefi/cuda/wave_cells.h), on the
// host: the adjoint's trace injection by target cell against the CPU's
// receiver-by-receiver loop, bit for bit in either thread order, and the
// velocity check's fold of min, max and non-finite count, in one pass and
// as merged per-block partials.
#include "nefi/cuda/wave_cells.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "nefi/cuda/wave_cell_layout.h"
#include "nefi/operators/wave/wave_propagation.h"
#include "nefi/operators/wave_cells_host.h"

namespace nefi::wave_cells_test {
namespace {

// The trace injection by target cell (one thread per (shot, cell)) against
// inject_traces's loop written out (receivers in order, each stencil in
// order, lam[i] += T(w) g): two shots, receivers sharing cells (neighbours,
// and one receiver twice), threads forward and reversed. Each cell is one
// target; adding a shared cell's terms in another order gives other bits
// here, so only the CPU's order passes.
template <typename T>
void check_injection(bool reversed) {
  SCOPED_TRACE(std::string(sizeof(T) == 4 ? "f32" : "f64") + (reversed ? " reversed" : ""));
  wave::WaveConfig cfg;
  cfg.extent = {1.0, 1.0};
  cfg.order = 4;
  cfg.absorbing = wave::Absorbing::kPml;
  cfg.absorb_width = 0.2;
  cfg.c_max = 2.5;
  cfg.dt_obs = 0.03;
  cfg.n_t = 5;
  const std::vector<std::vector<double>> rec = {
      {0.45, 0.5}, {0.47, 0.5}, {0.45, 0.5}, {0.8, 0.12}, {0.46, 0.52}};
  const wave::ShotGeometry geo =
      wave::make_shot_geometry(cfg, fk::Dims{14, 12}, {{0.3, 0.3}, {0.6, 0.6}}, rec, 6.0, 1.0);
  const wave::WaveGrid& gr = geo.grid;
  const cu::WaveCells<T> g = cu::make_wave_cells<T>(gr, true);
  const cu::CellStencilsCsr by_cell = cu::stencils_by_cell(geo.receivers);
  int64_t terms = 0, shared = 0;
  for (const wave::PointStencil& p : geo.receivers) terms += static_cast<int64_t>(p.index.size());
  ASSERT_EQ(by_cell.start.back(), terms);
  ASSERT_EQ(by_cell.points, static_cast<int64_t>(rec.size()));
  for (int64_t c = 0; c < by_cell.count(); ++c) {
    if (c > 0) {
      ASSERT_LT(by_cell.cell[c - 1], by_cell.cell[c]) << "a cell listed twice";
    }
    shared += by_cell.start[c + 1] - by_cell.start[c] > 2 ? 1 : 0;
  }
  ASSERT_GT(shared, 0) << "no cell with three terms or more: the order would not matter";

  const int64_t shots = 2, n_rec = static_cast<int64_t>(rec.size()), n_t = cfg.n_t, j = 3;
  std::mt19937_64 rng(9);
  std::normal_distribution<double> nd;
  std::vector<T> lam(shots * g.numel), gb(shots * n_rec * n_t);
  for (T& v : lam) v = static_cast<T>(nd(rng));
  for (T& v : gb) v = static_cast<T>(nd(rng));
  std::vector<T> want = lam, backwards = lam, got = lam;
  for (int64_t s = 0; s < shots; ++s)
    for (int64_t r = 0; r < n_rec; ++r) {
      const wave::PointStencil& p = geo.receivers[r];
      const T gv = gb[(s * n_rec + r) * n_t + j];
      for (size_t i = 0; i < p.index.size(); ++i)
        want[s * g.numel + p.index[i]] += static_cast<T>(p.weight[i]) * gv;
    }
  for (int64_t s = 0; s < shots; ++s)
    for (int64_t r = n_rec - 1; r >= 0; --r) {
      const wave::PointStencil& p = geo.receivers[r];
      const T gv = gb[(s * n_rec + r) * n_t + j];
      for (size_t i = p.index.size(); i-- > 0;)
        backwards[s * g.numel + p.index[i]] += static_cast<T>(p.weight[i]) * gv;
    }
  ASSERT_FALSE(same_bits(backwards, want)) << "the terms' order leaves the bits alone here";
  HostKernels::reversed = reversed;
  HostKernels::inject_traces<T>(g, cu::view_of(by_cell), shots, gb.data(), n_t, j, got.data(),
                                nullptr);
  HostKernels::reversed = false;
  EXPECT_TRUE(same_bits(got, want));
}

TEST(NefiWaveCells, TraceInjectionByCellEqualsTheCpuLoop) {
  for (bool reversed : {false, true}) {
    check_injection<double>(reversed);
    check_injection<float>(reversed);
  }
}

// The velocity check's fold: min and max of the finite values, NaN and ±inf counted.
TEST(NefiWaveCells, VelocityFoldCountsNonFiniteValues) {
  double acc[3] = {INFINITY, -INFINITY, 0};
  const double inf = INFINITY;
  for (double v : {2.0, 0.5, std::nan(""), 3.0, inf, -inf, 1.0}) cu::fold_velocity(acc, v);
  EXPECT_EQ(acc[0], 0.5);
  EXPECT_EQ(acc[1], 3.0);
  EXPECT_EQ(acc[2], 3.0);
}

// The device check's two passes on the host: each of 6 "blocks" folds its
// grid-stride share of the values, a 7th (a block past the end) folds none;
// the partials merged in either order give the single fold's min, max and count.
TEST(NefiWaveCells, MergedBlockFoldsEqualOneFold) {
  const double inf = INFINITY;
  std::vector<double> v;
  for (int i = 0; i < 40; ++i) v.push_back(1.0 + 0.37 * ((i * 13) % 17));
  v[5] = std::nan(""), v[11] = inf, v[29] = -inf, v[17] = 0.25, v[33] = 9.5;
  double one[3] = {INFINITY, -INFINITY, 0};
  for (double x : v) cu::fold_velocity(one, x);
  ASSERT_EQ(one[0], 0.25);
  ASSERT_EQ(one[1], 9.5);
  ASSERT_EQ(one[2], 3.0);
  constexpr size_t kStride = 6, kBlocks = 7;
  std::vector<std::array<double, 3>> partials(kBlocks, {INFINITY, -INFINITY, 0});
  for (size_t b = 0; b < kStride; ++b)
    for (size_t i = b; i < v.size(); i += kStride) cu::fold_velocity(partials[b].data(), v[i]);
  for (bool reverse : {false, true}) {
    double acc[3] = {INFINITY, -INFINITY, 0};
    for (size_t k = 0; k < kBlocks; ++k)
      cu::merge_velocity(acc, partials[reverse ? kBlocks - 1 - k : k].data());
    EXPECT_EQ(acc[0], one[0]);
    EXPECT_EQ(acc[1], one[1]);
    EXPECT_EQ(acc[2], one[2]);
  }
}

}  // namespace
}  // namespace nefi::wave_cells_test
