// Sparse <-> dense conversion: exact cell values against a plain loop with
// negative coordinates, two batch items and tensor stride 2, the round trip
// through to_sparse with min_coordinate, gradients, dtypes and bad input.
#include <gtest/gtest.h>

#include <map>

#include "minkowski/ops/feature_ops_util.h"

namespace minkowski {
namespace {

using feature_ops::random_sparse;

fk::Tensor coords(const std::vector<int32_t>& v, int width) {
  return fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size()) / width, width});
}

TEST(MinkowskiDense, RoundTripAndValues) {
  // 2-D, tensor stride 2: rows at (0,0) and (2,4) in batch 0, (0,2) in batch 1.
  fk::Tensor c = coords({0, 0, 0, 0, 2, 4, 1, 0, 2}, 3);
  fk::Tensor f = fk::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, fk::Dims{3, 2});
  SparseTensor x(f, c, {2});
  auto d = to_dense(x);
  ASSERT_EQ(d.dense.shape(), (fk::Dims{2, 2, 2, 3}));
  auto v = d.dense.to_vector<double>();
  // [b][c][x][y]
  auto at = [&](int b, int ch, int i, int j) { return v[((b * 2 + ch) * 2 + i) * 3 + j]; };
  EXPECT_EQ(at(0, 0, 0, 0), 1);
  EXPECT_EQ(at(0, 1, 0, 0), 2);
  EXPECT_EQ(at(0, 0, 1, 2), 3);
  EXPECT_EQ(at(1, 1, 0, 1), 6);
  EXPECT_EQ(at(1, 0, 1, 1), 0);
  SparseTensor y = to_sparse(d.dense, {2});
  EXPECT_EQ(y.size(), 3);
  EXPECT_EQ(y.C().to_vector<int32_t>(), c.to_vector<int32_t>());
  fk::test::expect_close(y.F(), f.to_vector<double>(), 0);
  // negative coordinates need a min coordinate
  SparseTensor neg(f, coords({0, -2, 0, 0, 2, 4, 1, 0, 2}, 3), {2});
  EXPECT_THROW(to_dense(neg), fk::Error);
  auto dn = to_dense(neg, std::vector<int32_t>{-2, 0});
  EXPECT_EQ(dn.dense.shape(), (fk::Dims{2, 2, 3, 3}));
  // gradient flows through to_dense
  fk::Tensor fg = f.clone().set_requires_grad(true);
  EXPECT_GRADCHECK(
      [c](const std::vector<fk::Tensor>& in) {
        return to_dense(SparseTensor(in[0], c, {2})).dense;
      },
      std::vector<fk::Tensor>{fg});
}

TEST(MinkowskiDense, NegativeCoordinatesAgainstPlainLoop) {
  // 3-D, tensor stride 2, coordinates in [-6, 6], two batch items.
  auto s = random_sparse(3, 30, 2, 1, fk::DType::F64, nullptr, 3, 2);
  std::vector<int32_t> mn{-6, -6, -6};
  auto d = to_dense(s.x, mn);
  ASSERT_EQ(d.dense.shape(), (fk::Dims{2, 2, 7, 7, 7}));
  EXPECT_EQ(d.min_coordinate, mn);
  EXPECT_EQ(d.tensor_stride, (std::vector<int32_t>{2, 2, 2}));
  // Every cell by a plain loop: the row's features there, zeros elsewhere.
  std::vector<double> want(2 * 2 * 343, 0.0);
  for (size_t i = 0; i < s.rows.size(); ++i) {
    int64_t cell = 0;
    for (int a = 1; a <= 3; ++a) cell = cell * 7 + (s.rows[i][a] + 6) / 2;
    for (int c = 0; c < 2; ++c) want[(s.rows[i][0] * 2 + c) * 343 + cell] = s.f[i * 2 + c];
  }
  fk::test::expect_close(d.dense, want, 0);
  // Without contracting the stride: cells at x - min, a 13^3 grid.
  auto raw = to_dense(s.x, mn, std::nullopt, false);
  EXPECT_EQ(raw.dense.shape(), (fk::Dims{2, 2, 13, 13, 13}));
  // A larger shape pads with zeros.
  auto big = to_dense(s.x, mn, std::vector<int64_t>{8, 7, 9});
  EXPECT_EQ(big.dense.shape(), (fk::Dims{2, 2, 8, 7, 9}));
  // Half types are copied exactly.
  for (fk::DType t : {fk::DType::F32, fk::DType::F16, fk::DType::BF16}) {
    fk::Tensor h = to_dense(s.x.with_features(s.x.F().to(t)), mn).dense;
    EXPECT_TRUE(feature_ops::same_bits(h, d.dense.to(t)));
  }
}

TEST(MinkowskiDense, RoundTripWithMinCoordinate) {
  auto mgr = std::make_shared<CoordinateManager>(3);
  auto s = random_sparse(3, 30, 2, 2, fk::DType::F64, mgr, 3, 2);
  std::vector<int32_t> mn{-6, -8, -6};
  auto d = to_dense(s.x, mn);
  SparseTensor y = to_sparse(d.dense, {2}, mgr, mn);
  EXPECT_EQ(y.manager(), mgr);
  // The same rows (in cell order) with the same features.
  std::map<std::vector<int32_t>, std::vector<double>> want, got;
  for (size_t i = 0; i < s.rows.size(); ++i) want[s.rows[i]] = {s.f[i * 2], s.f[i * 2 + 1]};
  auto yr = conv_ref::from_tensor(y.C());
  auto yf = y.F().to_vector<double>();
  for (size_t i = 0; i < yr.size(); ++i) got[yr[i]] = {yf[i * 2], yf[i * 2 + 1]};
  EXPECT_EQ(got, want);
  // Keeping every cell: B x cells rows.
  SparseTensor all = to_sparse(d.dense, {2}, mgr, mn, false);
  EXPECT_EQ(all.size(), 2 * 7 * 8 * 7);
  // to_sparse is differentiable w.r.t. the dense values.
  fk::Tensor small = fk::test::random_tensor({2, 2, 3, 2}, fk::DType::F64, -1, 1, 3);
  EXPECT_GRADCHECK([](const std::vector<fk::Tensor>& in) { return to_sparse(in[0], {1}).F(); },
                   (std::vector<fk::Tensor>{small}));
}

TEST(MinkowskiDense, ThreadInvariant) {
  auto s = random_sparse(3, 3000, 3, 4, fk::DType::F32, nullptr, 10);
  feature_ops::expect_thread_invariant([&] {
    fk::Tensor f = s.x.F().detach().set_requires_grad(true);
    fk::Tensor d = to_dense(s.x.with_features(f), std::vector<int32_t>{-10, -10, -10}).dense;
    fk::sum(fk::mul(d, d)).backward();
    return std::vector<fk::Tensor>{d, f.grad()};
  });
}

TEST(MinkowskiDense, BadInput) {
  auto s = random_sparse(2, 10, 2, 5, fk::DType::F64, nullptr, 3, 2);
  feature_ops::expect_error([&] { to_dense(s.x); }, {"non-negative coordinates", "on axis"});
  feature_ops::expect_error(
      [&] {
        to_dense(s.x, std::vector<int32_t>{-5, -6});
      },
      {"multiple of the tensor stride", "-5 on axis 0"});
  feature_ops::expect_error([&] { to_dense(s.x, std::vector<int32_t>{-6}); },
                            {"2 min coordinates", "1"});
  feature_ops::expect_error(
      [&] {
        to_dense(s.x, std::vector<int32_t>{-6, -6}, std::vector<int64_t>{2, 7});
      },
      {"a shape holding every coordinate", "on axis 0"});
  SparseTensor empty(fk::zeros({0, 2}, {fk::DType::F64}), fk::zeros({0, 3}, {fk::DType::I32}));
  feature_ops::expect_error([&] { to_dense(empty); }, {"a shape for an empty tensor", "no shape"});
  feature_ops::expect_error(
      [&] {
        to_sparse(fk::zeros({2, 3}, {fk::DType::F64}));
      },
      {"B x C x s_1..s_D", "[2, 3]"});
  feature_ops::expect_error(
      [&] {
        to_sparse(fk::zeros({1, 1, 2, 2}, {fk::DType::F64}), {1}, nullptr, {{0}});
      },
      {"2 min coordinates", "1"});
}

}  // namespace
}  // namespace minkowski
