// sparse_quantize: labels (agreeing, conflicting, ignore label among the
// inputs), the random subsample's draw, and bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fk/fk.h"
#include "fk/test_util.h"
#include "minkowski/minkowski.h"

namespace minkowski {
namespace {

using fk::test::error_of;

// 1-D points (no batch column) and their labels; with size 1 the voxels are
//   x:      0.1 0.9 | 1.2 1.5 | 2.0 | 3.3  3.4  3.9 | 4.0  4.5
//   voxel:   0   0  |  1   1  |  2  |  3    3    3  |  4    4
//   label:   5   5  |  1   2  |  7  | -100 -100 -100| -100  6
// so with the default ignore label -100 the voxel labels are
//   5 (agree), -100 (1 vs 2), 7 (alone), -100 (all -100 agree), -100 (-100 vs 6).
struct Labeled {
  fk::Tensor x = fk::from_vector(
      std::vector<double>{0.1, 0.9, 1.2, 1.5, 2.0, 3.3, 3.4, 3.9, 4.0, 4.5}, fk::Dims{10, 1});
  std::vector<int64_t> labels{5, 5, 1, 2, 7, -100, -100, -100, -100, 6};
  fk::Tensor f =
      fk::from_vector(std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, fk::Dims{10, 1});
  std::vector<int64_t> inverse{0, 0, 1, 1, 2, 3, 3, 3, 4, 4};
  fk::Tensor l64() const { return fk::from_vector(labels, fk::Dims{10}); }
  fk::Tensor l32() const { return l64().to(fk::DType::I32); }
};

TEST(MinkowskiSparseQuantize, LabelsAgreeOrGetIgnoreLabel) {
  Labeled p;
  auto q = sparse_quantize(p.x, p.f, {1.0}, QuantizationMode::FirstOccurrence, p.l64());
  EXPECT_EQ(q.coordinates.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 4}));
  ASSERT_TRUE(q.labels.defined());
  EXPECT_EQ(q.labels.dtype(), fk::DType::I64);
  EXPECT_EQ(q.labels.shape(), (fk::Dims{5}));
  EXPECT_EQ(q.labels.to_vector<int64_t>(), (std::vector<int64_t>{5, -100, 7, -100, -100}));
  // return_index / return_inverse
  EXPECT_EQ(q.unique_index, (std::vector<int64_t>{0, 2, 4, 5, 8}));
  EXPECT_EQ(q.inverse, p.inverse);
  fk::test::expect_close(q.features, {0, 2, 4, 5, 8}, 0);
}

TEST(MinkowskiSparseQuantize, IgnoreLabelIsALabelLikeAnyOther) {
  Labeled p;
  // With 255 as the ignore label, the all -100 voxel keeps -100 (its points
  // agree) and only the conflicting voxels get 255; int32 labels stay int32.
  auto q =
      sparse_quantize(p.x, fk::Tensor(), {1.0}, QuantizationMode::RandomSubsample, p.l32(), 255);
  EXPECT_FALSE(q.features.defined());
  EXPECT_EQ(q.labels.dtype(), fk::DType::I32);
  EXPECT_EQ(q.labels.to_vector<int32_t>(), (std::vector<int32_t>{5, 255, 7, -100, 255}));
  // The ignore label among the inputs: a voxel of 255s stays 255, a voxel
  // mixing 255 and 4 gets 255, a voxel of 4s stays 4.
  fk::Tensor x = fk::from_vector(std::vector<int32_t>{0, 0, 1, 1, 2, 2}, fk::Dims{6, 1});
  fk::Tensor l = fk::from_vector(std::vector<int64_t>{255, 255, 255, 4, 4, 4}, fk::Dims{6});
  EXPECT_EQ(sparse_quantize(x, fk::Tensor(), {1.0}, QuantizationMode::UnweightedAverage, l, 255)
                .labels.to_vector<int64_t>(),
            (std::vector<int64_t>{255, 255, 4}));
}

TEST(MinkowskiSparseQuantize, LabelsDoNotDependOnModeOrSeed) {
  Labeled p;
  for (uint64_t seed : {0u, 1u, 2u, 3u}) {
    auto q = sparse_quantize(p.x, p.f, {1.0}, QuantizationMode::RandomSubsample, p.l64(),
                             kIgnoreLabel, seed);
    EXPECT_EQ(q.labels.to_vector<int64_t>(), (std::vector<int64_t>{5, -100, 7, -100, -100}));
    EXPECT_EQ(q.inverse, p.inverse);
    // the kept point is one of its voxel's, and the features are that point's
    auto fv = q.features.to_vector<double>();
    for (int64_t r = 0; r < 5; ++r) {
      int64_t i = q.unique_index[r];
      EXPECT_EQ(p.inverse[i], r) << "seed " << seed << " voxel " << r;
      EXPECT_EQ(fv[r], static_cast<double>(i));
    }
  }
  for (auto mode : {QuantizationMode::UnweightedSum, QuantizationMode::MaxPool}) {
    EXPECT_EQ(sparse_quantize(p.x, p.f, {1.0}, mode, p.l64()).labels.to_vector<int64_t>(),
              (std::vector<int64_t>{5, -100, 7, -100, -100}));
  }
}

TEST(MinkowskiSparseQuantize, RandomSubsampleFollowsTheDocumentedDraw) {
  // 2-D points: 600 voxels with 1 to 6 points each, interleaved in input order.
  std::vector<double> pts;
  std::vector<int64_t> voxel_of;
  for (int round = 0; round < 6; ++round)
    for (int v = 0; v < 600; ++v)
      if (v % 6 >= round) {
        pts.push_back(v % 30 + 0.25 + 0.1 * round);
        pts.push_back(std::floor(v / 30.0) + 0.5);
        voxel_of.push_back(v);
      }
  const int64_t n = static_cast<int64_t>(voxel_of.size());
  fk::Tensor x = fk::from_vector(pts, fk::Dims{n, 2});
  fk::Tensor f = fk::test::random_tensor({n, 3}, fk::DType::F64, -1, 1, 7);
  auto q = sparse_quantize(x, f, {1.0}, QuantizationMode::RandomSubsample, {}, kIgnoreLabel, 42);
  ASSERT_EQ(q.coordinates.size(0), 600);
  // Plain-loop reference of subsample_rows' rule: the members of map row r in
  // input order, member (64-bit word of Philox block r, key = seed) % count.
  fk::Generator gen(42);
  auto fv = f.to_vector<double>(), qv = q.features.to_vector<double>();
  for (int64_t r = 0; r < 600; ++r) {
    std::vector<int64_t> members;
    for (int64_t i = 0; i < n; ++i)
      if (q.inverse[i] == r) members.push_back(i);
    ASSERT_FALSE(members.empty());
    auto w = gen.block(static_cast<uint64_t>(r));
    uint64_t u = (static_cast<uint64_t>(w[0]) << 32) | w[1];
    int64_t want = members[u % members.size()];
    ASSERT_EQ(q.unique_index[r], want) << "voxel " << r;
    for (int a = 0; a < 3; ++a) EXPECT_EQ(qv[r * 3 + a], fv[want * 3 + a]);
  }
  // and every point's voxel is that voxel's coordinates
  auto cv = q.coordinates.to_vector<int32_t>();
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(cv[q.inverse[i] * 2], static_cast<int32_t>(std::floor(pts[i * 2])));
    EXPECT_EQ(cv[q.inverse[i] * 2 + 1], static_cast<int32_t>(std::floor(pts[i * 2 + 1])));
  }
}

TEST(MinkowskiSparseQuantize, BadLabels) {
  Labeled p;
  auto run = [&](const fk::Tensor& l, int64_t ignore = kIgnoreLabel) {
    return error_of(
        [&] { sparse_quantize(p.x, p.f, {1.0}, QuantizationMode::RandomSubsample, l, ignore); });
  };
  // one label short
  std::string e =
      run(fk::from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}, fk::Dims{9}));
  EXPECT_NE(e.find("labels of shape (10)"), std::string::npos) << e;
  EXPECT_NE(e.find("[9]"), std::string::npos) << e;
  // N x 1 instead of N
  e = run(p.l64().reshape({10, 1}));
  EXPECT_NE(e.find("labels of shape (10)"), std::string::npos) << e;
  // real or bool labels
  e = run(p.l64().to(fk::DType::F32));
  EXPECT_NE(e.find("int32 or int64 labels"), std::string::npos) << e;
  EXPECT_NE(e.find("f32"), std::string::npos) << e;
  EXPECT_NE(run(p.l64().to(fk::DType::Bool)).find("int32 or int64 labels"), std::string::npos);
  // an ignore label int32 labels cannot hold
  e = run(p.l32(), int64_t{1} << 40);
  EXPECT_NE(e.find("fits the int32 labels"), std::string::npos) << e;
  // int64 labels take it
  EXPECT_EQ(run(p.l64(), int64_t{1} << 40), "");
}

}  // namespace
}  // namespace minkowski
