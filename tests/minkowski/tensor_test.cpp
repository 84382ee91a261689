// SparseTensor construction, quantization, batching and dense conversion.
#include <gtest/gtest.h>

#include "fk/fk.h"
#include "fk/test_util.h"
#include "minkowski/minkowski.h"

namespace minkowski {
namespace {

fk::Tensor coords(const std::vector<int32_t>& v, int width) {
  return fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size()) / width, width});
}

// Rows (0,0), (0,1), (0,0), (0,1), (0,2) in 1-D with batch 0; two channels.
struct Dup {
  fk::Tensor c = coords({0, 0, 0, 1, 0, 0, 0, 1, 0, 2}, 2);
  fk::Tensor f =
      fk::from_vector(std::vector<double>{1, -1, 2, -2, 3, -3, 6, -6, 5, -5}, fk::Dims{5, 2});
};

TEST(MinkowskiQuantize, ModesOnHandComputedCase) {
  Dup d;
  auto check = [&](QuantizationMode mode, std::vector<double> want) {
    SparseTensor x(d.f, d.c, {1}, mode);
    ASSERT_EQ(x.size(), 3);
    fk::test::expect_close(x.F(), want, 1e-12);
  };
  check(QuantizationMode::RandomSubsample, {1, -1, 2, -2, 5, -5});
  check(QuantizationMode::UnweightedSum, {4, -4, 8, -8, 5, -5});
  check(QuantizationMode::UnweightedAverage, {2, -2, 4, -4, 5, -5});
  check(QuantizationMode::MaxPool, {3, -1, 6, -2, 5, -5});
  SparseTensor x(d.f, d.c);
  EXPECT_EQ(x.unique_index(), (std::vector<int64_t>{0, 1, 4}));
  EXPECT_EQ(x.inverse_mapping(), (std::vector<int64_t>{0, 1, 0, 1, 2}));
  EXPECT_EQ(x.C().to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0, 1, 0, 2}));
}

TEST(MinkowskiQuantize, Gradients) {
  Dup d;
  for (auto mode : {QuantizationMode::RandomSubsample, QuantizationMode::UnweightedSum,
                    QuantizationMode::UnweightedAverage, QuantizationMode::MaxPool}) {
    fk::Tensor f = d.f.clone().set_requires_grad(true);
    fk::Tensor c = d.c;
    auto fn = [c, mode](const std::vector<fk::Tensor>& in) {
      return SparseTensor(in[0], c, {1}, mode).F();
    };
    EXPECT_GRADCHECK(fn, std::vector<fk::Tensor>{f});
  }
}

TEST(MinkowskiQuantize, SparseQuantizeFloors) {
  fk::Tensor pts = fk::from_vector(
      std::vector<float>{0.1f, 0.2f, 0.4f, 0.3f, -0.1f, 0.0f, 1.2f, 0.9f}, fk::Dims{4, 2});
  fk::Tensor f = fk::from_vector(std::vector<float>{1, 2, 3, 4}, fk::Dims{4, 1});
  auto q = sparse_quantize(pts, f, {0.5}, QuantizationMode::UnweightedAverage);
  EXPECT_EQ(q.coordinates.to_vector<int32_t>(), (std::vector<int32_t>{0, 0, -1, 0, 2, 1}));
  fk::test::expect_close(q.features, {1.5, 3, 4}, 1e-6);
  EXPECT_EQ(q.inverse, (std::vector<int64_t>{0, 0, 1, 2}));
  EXPECT_THROW(sparse_quantize(pts, f, {0.0}), fk::Error);
}

TEST(MinkowskiQuantize, BatchedAndCollate) {
  auto a = coords({1, 2, 3, 4}, 2), b = coords({5, 6}, 2);
  auto bc = batched_coordinates({a, b});
  EXPECT_EQ(bc.shape(), (fk::Dims{3, 3}));
  EXPECT_EQ(bc.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 0, 3, 4, 1, 5, 6}));
  auto col = sparse_collate({a, b}, {fk::ones({2, 4}), fk::zeros({1, 4})});
  EXPECT_EQ(col.features.shape(), (fk::Dims{3, 4}));
  EXPECT_THROW(sparse_collate({a, b}, {fk::ones({2, 4})}), fk::Error);
}

TEST(MinkowskiTensor, Errors) {
  fk::Tensor f = fk::ones({2, 3});
  // wrong coordinate width for an existing 2-D manager
  auto mgr = std::make_shared<CoordinateManager>(2);
  EXPECT_THROW(
      SparseTensor(f, coords({0, 1, 0, 2}, 2), {1}, QuantizationMode::RandomSubsample, mgr),
      fk::Error);
  // float coordinates
  EXPECT_THROW(SparseTensor(f, fk::zeros({2, 3})), fk::Error);
  // row count mismatch
  try {
    SparseTensor(fk::ones({3, 3}), coords({0, 1, 0, 2}, 2));
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("as many coordinate rows"), std::string::npos);
  }
  // integer features
  EXPECT_THROW(SparseTensor(fk::ones({2, 3}, {fk::DType::I32}), coords({0, 1, 0, 2}, 2)),
               fk::Error);
  // not a multiple of the tensor stride
  EXPECT_THROW(SparseTensor(f, coords({0, 1, 0, 2}, 2), {2}), fk::Error);
}

TEST(MinkowskiTensor, EmptyTensor) {
  SparseTensor x(fk::zeros({0, 4}), fk::empty({0, 4}, {fk::DType::I32}));
  EXPECT_EQ(x.size(), 0);
  EXPECT_EQ(x.dimension(), 3);
  auto d = to_dense(x, {}, std::vector<int64_t>{2, 2, 2});
  EXPECT_EQ(d.dense.shape(), (fk::Dims{0, 4, 2, 2, 2}));
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

}  // namespace
}  // namespace minkowski
