// HashGridField: the levels' layout, the encoding against hand-computed
// interpolation, its backward against the encoding itself (it is linear in
// the table: <E t, G> = <t, E^T G>), the annealing window, and a fit of a
// 2-D image to high PSNR.
#include "nefi/field/hash_grid_field.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/test_util.h"
#include "fk/thread_count.h"
#include "nefi/losses/data_losses.h"
#include "nefi/operators/pointwise.h"
#include "nefi/solve/metrics.h"
#include "nefi/solve/solver.h"

namespace {

using nefi::HashGridConfig;

TEST(NefiHashGrid, LayoutIsGeometricAndHashesOnlyWhereTablesOverflow) {
  HashGridConfig c;
  c.levels = 5;
  c.base_resolution = 4;
  c.finest_resolution = 64;
  c.log2_table = 8;  // 256 entries
  const auto L = nefi::hash_grid_layout(2, c, 32);
  EXPECT_EQ(L.resolution, (std::vector<int64_t>{4, 8, 16, 32, 64}));
  // (4 + 1)^2 = 25 and 81 fit; 17^2 = 289 and up hash into 256.
  EXPECT_EQ(L.table_size, (std::vector<int64_t>{25, 81, 256, 256, 256}));
  EXPECT_EQ(L.offset, (std::vector<int64_t>{0, 25, 106, 362, 618}));
  EXPECT_EQ(L.entries, 874);
  EXPECT_FALSE(L.hashed(1));
  EXPECT_TRUE(L.hashed(2));
  // N_max defaults to twice the largest axis.
  c.finest_resolution = 0;
  EXPECT_EQ(nefi::hash_grid_layout(1, c, 50).resolution.back(), 100);
  const std::string e = fk::test::error_of([&] {
    HashGridConfig bad = c;
    bad.levels = 0;
    (void)nefi::hash_grid_layout(2, bad, 8);
  });
  EXPECT_NE(e.find("levels in [1, 32]"), std::string::npos) << e;
}

TEST(NefiHashGrid, EncodingInterpolatesTheVertexFeatures) {
  HashGridConfig c;
  c.levels = 2;
  c.features = 1;
  c.base_resolution = 2;
  c.finest_resolution = 4;
  const auto L = nefi::hash_grid_layout(1, c, 4);  // dense: 3 and 5 vertices
  ASSERT_EQ(L.entries, 8);
  const std::vector<double> t{1, 2, 4, 10, 20, 30, 40, 50};
  const fk::Tensor table = fk::from_vector(t, {8, 1}).to(fk::DType::F32);
  // x = -0.5 -> u = 0.25: level 0 (2 cells) p = 0.5 between vertices 0 and 1;
  // level 1 (4 cells) p = 1.0, exactly vertex 1.
  const fk::Tensor x = fk::from_vector(std::vector<double>{-0.5, 0.3}, {2, 1}).to(fk::DType::F32);
  const auto y = nefi::hash_grid_encode(x, table, L, {1.0, 0.5}).to_vector<double>();
  ASSERT_EQ(y.size(), 4u);
  EXPECT_NEAR(y[0], 0.5 * 1 + 0.5 * 2, 1e-6);
  EXPECT_NEAR(y[1], 0.5 * 20, 1e-6);  // level weight 0.5
  // x = 0.3 -> u = 0.65: level 0 p = 1.3; level 1 p = 2.6.
  EXPECT_NEAR(y[2], 0.7 * 2 + 0.3 * 4, 1e-5);
  EXPECT_NEAR(y[3], 0.5 * (0.4 * 30 + 0.6 * 40), 1e-5);
}

TEST(NefiHashGrid, BackwardIsTheEncodingsTranspose) {
  const fk::test::ThreadCount two(2);
  for (int d = 1; d <= 3; ++d) {
    HashGridConfig c;
    c.levels = 4;
    c.features = 3;
    c.log2_table = 6;  // in 2-D and 3-D the fine levels hash (with collisions)
    const auto L = nefi::hash_grid_layout(d, c, 12);
    fk::Tensor table = fk::test::random_tensor({L.entries, 3}, fk::DType::F32, -1, 1, 3);
    table.set_requires_grad(true);
    const int64_t n = 300;
    const fk::Tensor x = fk::test::random_tensor({n, d}, fk::DType::F32, -0.999, 0.999, 4);
    const std::vector<double> w{1, 1, 0.5, 0};
    const fk::Tensor y = nefi::hash_grid_encode(x, table, L, w);
    const fk::Tensor g = fk::test::random_tensor(y.shape(), fk::DType::F32, -1, 1, 5);
    const fk::Tensor gt = fk::autograd::grad({y}, {g}, {table})[0];
    const auto yv = y.to_vector<double>(), gv = g.to_vector<double>();
    const auto tv = table.to_vector<double>(), gtv = gt.to_vector<double>();
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < yv.size(); ++i) lhs += yv[i] * gv[i];
    for (size_t i = 0; i < tv.size(); ++i) rhs += tv[i] * gtv[i];
    EXPECT_NEAR(lhs, rhs, 1e-4 * std::abs(lhs)) << d << "-D";
    if (d >= 2) {
      EXPECT_TRUE(L.hashed(3)) << d;  // collisions covered
    }
  }
}

TEST(NefiHashGrid, EncodeRefusesWhatDoesNotFitItsLayout) {
  HashGridConfig c;
  c.levels = 2;
  const auto L = nefi::hash_grid_layout(2, c, 8);
  const fk::Tensor x = fk::zeros({5, 2}), table = fk::zeros({L.entries, 2});
  auto err = [&](const fk::Tensor& xx, const fk::Tensor& t, std::vector<double> w) {
    return fk::test::error_of([&] { (void)nefi::hash_grid_encode(xx, t, L, w); });
  };
  EXPECT_NE(err(fk::zeros({5, 3}), table, {1, 1}).find("(N, 2)"), std::string::npos);
  EXPECT_NE(err(x.to(fk::DType::F64), table, {1, 1}).find("f32 coordinates"), std::string::npos);
  EXPECT_NE(err(x, fk::zeros({3, 2}), {1, 1}).find("an f32 CPU table"), std::string::npos);
  EXPECT_NE(err(x, table, {1}).find("2 level weights"), std::string::npos);
  HashGridConfig big = c;
  big.log2_table = 30;
  EXPECT_NE(fk::test::error_of([&] { (void)nefi::hash_grid_layout(2, big, 8); }).find("log2_table"),
            std::string::npos);
  big = c;
  big.finest_resolution = 1 << 22;
  EXPECT_NE(fk::test::error_of([&] { (void)nefi::hash_grid_layout(2, big, 8); }).find("2^20"),
            std::string::npos);
  c.hidden = 0;
  EXPECT_NE(fk::test::error_of([&] {
              nefi::HashGridField({8, 8}, {nefi::identity_head("x", 0)}, c, 0);
            }).find("hidden, depth >= 1"),
            std::string::npos);
}

TEST(NefiHashGrid, AnnealingOpensLevelsCoarseToFine) {
  EXPECT_EQ(nefi::hash_grid_level_weights(4, 0.0, true), (std::vector<double>{1, 0, 0, 0}));
  EXPECT_EQ(nefi::hash_grid_level_weights(4, 0.5, true), (std::vector<double>{1, 1, 1, 0}));
  const auto w = nefi::hash_grid_level_weights(4, 0.625, true);
  EXPECT_NEAR(w[3], 0.5, 1e-12);
  EXPECT_EQ(nefi::hash_grid_level_weights(4, 1.0, true), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(nefi::hash_grid_level_weights(4, 0.0, false), (std::vector<double>{1, 1, 1, 1}));
}

TEST(NefiHashGrid, FitsAnImage) {
  const fk::test::ThreadCount one(1);
  const int64_t n = 32;
  std::vector<double> img(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double u = (i + 0.5) / n, v = (j + 0.5) / n;
      img[i * n + j] = ((u - 0.4) * (u - 0.4) + (v - 0.5) * (v - 0.5) < 0.06 ? 1.0 : 0.2) +
                       0.3 * std::sin(9 * u) * std::cos(7 * v);
    }
  nefi::InverseProblem p;
  p.domain = nefi::Domain({n, n});
  p.op = std::make_shared<nefi::IdentityOperator>();
  HashGridConfig c;
  c.levels = 8;
  p.field = std::make_shared<nefi::HashGridField>(
      fk::Dims{n, n}, std::vector<nefi::HeadPtr>{nefi::identity_head("x", 0.5)}, c, 0);
  p.losses.add(nefi::mse_loss(), 1.0);
  p.measurement.data = fk::from_vector(img, {n, n}).to(fk::DType::F32);
  nefi::Curriculum cur = nefi::Curriculum::single({n, n}, 300, 1e-2);
  cur.stages[0].anneal_fraction = 0.3;
  const nefi::Result r = nefi::Solver(p, cur).run();
  const double psnr = nefi::psnr(r.fields.at("x").to(fk::DType::F64), fk::from_vector(img, {n, n}));
  EXPECT_GT(psnr, 35.0);
  EXPECT_EQ(p.field->kind(), "hash");
}

}  // namespace
