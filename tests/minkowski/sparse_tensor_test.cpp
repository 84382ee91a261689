// SparseTensor construction, quantization, batching and feature replacement.
#include <gtest/gtest.h>

#include <cmath>

#include "fk/fk.h"
#include "fk/test_util.h"
#include "fk/thread_count.h"
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
  check(QuantizationMode::FirstOccurrence, {1, -1, 2, -2, 5, -5});
  check(QuantizationMode::UnweightedSum, {4, -4, 8, -8, 5, -5});
  check(QuantizationMode::UnweightedAverage, {2, -2, 4, -4, 5, -5});
  check(QuantizationMode::MaxPool, {3, -1, 6, -2, 5, -5});
  // A NaN in a later duplicate is the max (max_order.h): `>` dropped it.
  fk::Tensor nan_f = d.f.clone();
  fk::Tensor row = nan_f.select(0, 2);
  fk::fill_(row, NAN);
  const auto m = SparseTensor(nan_f, d.c, {1}, QuantizationMode::MaxPool).F().to_vector<double>();
  EXPECT_TRUE(std::isnan(m[0]) && std::isnan(m[1]));
  EXPECT_EQ(m[2], 6);
  SparseTensor x(d.f, d.c, {1}, QuantizationMode::FirstOccurrence);
  EXPECT_EQ(x.unique_index(), (std::vector<int64_t>{0, 1, 4}));
  EXPECT_EQ(x.inverse_mapping(), (std::vector<int64_t>{0, 1, 0, 1, 2}));
  EXPECT_EQ(x.C().to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0, 1, 0, 2}));
  // The default, RandomSubsample: coordinate (0,0) keeps row 0 or 2, (0,1)
  // row 1 or 3, (0,2) row 4, and the features are those rows'.
  SparseTensor r(d.f, d.c);
  EXPECT_EQ(r.inverse_mapping(), x.inverse_mapping());
  EXPECT_EQ(r.C().to_vector<int32_t>(), x.C().to_vector<int32_t>());
  ASSERT_EQ(r.unique_index().size(), 3u);
  EXPECT_TRUE(r.unique_index()[0] == 0 || r.unique_index()[0] == 2);
  EXPECT_TRUE(r.unique_index()[1] == 1 || r.unique_index()[1] == 3);
  EXPECT_EQ(r.unique_index()[2], 4);
  auto fv = d.f.to_vector<double>();
  std::vector<double> want;
  for (int64_t i : r.unique_index()) want.insert(want.end(), {fv[i * 2], fv[i * 2 + 1]});
  fk::test::expect_close(r.F(), want, 0);
}

// 13000 coordinates (enough for 3 chunks of subsample_rows' parallel loop),
// each given three times in interleaved input order, with distinct features.
struct Triplicated {
  static constexpr int64_t kVoxels = 13000, kRows = 3 * kVoxels;
  fk::Tensor c, f;
  Triplicated() {
    std::vector<int32_t> cv;
    for (int64_t i = 0; i < kRows; ++i) {
      int64_t v = (i * 7919) % kVoxels;  // 7919 is prime to 13000: every voxel 3 times
      cv.insert(cv.end(), {static_cast<int32_t>(v % 2), static_cast<int32_t>(v / 2)});
    }
    c = coords(cv, 2);
    std::vector<double> fv(kRows);
    for (int64_t i = 0; i < kRows; ++i) fv[i] = static_cast<double>(i);
    f = fk::from_vector(fv, fk::Dims{kRows, 1});
  }
};

TEST(MinkowskiQuantize, RandomSubsampleKeepsOneOfEachCoordinatesRows) {
  Triplicated t;
  SparseTensor x(t.f, t.c, {1}, QuantizationMode::RandomSubsample, nullptr, 5);
  ASSERT_EQ(x.size(), Triplicated::kVoxels);
  const auto& kept = x.unique_index();
  const auto& inv = x.inverse_mapping();
  auto fv = x.F().to_vector<double>();
  std::vector<int> position_count(3, 0);
  std::vector<int64_t> seen(Triplicated::kVoxels, 0);
  for (int64_t r = 0; r < Triplicated::kVoxels; ++r) {
    ASSERT_EQ(inv[kept[r]], r) << "map row " << r << " keeps a row of another coordinate";
    ASSERT_EQ(fv[r], static_cast<double>(kept[r]));  // features are the kept row's
  }
  // Which of its three rows (in input order) each coordinate kept: each
  // position about a third of the time (4333 expected, sd 54).
  for (int64_t i = 0; i < Triplicated::kRows; ++i) {
    int64_t r = inv[i];
    if (kept[r] == i) ++position_count[seen[r]];
    ++seen[r];
  }
  for (int p = 0; p < 3; ++p) {
    EXPECT_GT(position_count[p], 4000) << "position " << p;
    EXPECT_LT(position_count[p], 4666) << "position " << p;
  }
}

TEST(MinkowskiQuantize, RandomSubsampleSeeds) {
  Triplicated t;
  auto kept = [&](uint64_t seed, int threads) {
    const fk::test::ThreadCount count(threads);
    SparseTensor x(t.f, t.c, {1}, QuantizationMode::RandomSubsample, nullptr, seed);
    return x.unique_index();
  };
  auto a = kept(kSubsampleSeed, 1), b = kept(kSubsampleSeed, 3), c = kept(1, 1);
  EXPECT_EQ(a, b);  // same seed, any thread count
  EXPECT_EQ(a, kept(kSubsampleSeed, 1));
  // Another seed: each coordinate keeps another row with probability 2/3.
  int64_t differ = 0;
  for (int64_t r = 0; r < Triplicated::kVoxels; ++r) differ += a[r] != c[r];
  EXPECT_GT(differ, Triplicated::kVoxels / 2);
  EXPECT_LT(differ, Triplicated::kVoxels * 5 / 6);
  // The default seed is kSubsampleSeed.
  EXPECT_EQ(SparseTensor(t.f, t.c).unique_index(), a);
}

TEST(MinkowskiQuantize, SubsampleRowsIsUniform) {
  // One map row of four input rows, over 400 seeds: each row about 100 times
  // (sd 8.7).
  std::vector<int> count(4, 0);
  for (uint64_t seed = 0; seed < 400; ++seed) ++count[subsample_rows({0, 0, 0, 0}, 1, seed)[0]];
  for (int i = 0; i < 4; ++i) {
    EXPECT_GT(count[i], 65) << "row " << i;
    EXPECT_LT(count[i], 135) << "row " << i;
  }
  EXPECT_THROW(subsample_rows({0, 2}, 2), fk::Error);
  EXPECT_THROW(subsample_rows({0, 0}, 2), fk::Error);  // map row 1 has no input row
}

TEST(MinkowskiQuantize, Gradients) {
  Dup d;
  for (auto mode : {QuantizationMode::RandomSubsample, QuantizationMode::UnweightedSum,
                    QuantizationMode::UnweightedAverage, QuantizationMode::MaxPool,
                    QuantizationMode::FirstOccurrence}) {
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

TEST(MinkowskiTensor, ManagersDoNotMix) {
  fk::Tensor f = fk::ones({2, 3});
  SparseTensor a(f, coords({0, 1, 0, 2}, 2)), b(f, coords({0, 1, 0, 2}, 2));
  ASSERT_EQ(a.key(), b.key());  // equal keys, two managers
  check_same_manager(a, a, "test");
  check_same_manager(a, SparseTensor(f, a.key(), a.manager()), "test");
  check_same_manager(a, a.map_ref(), "test");
  try {
    check_same_manager(a, b, "test");
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensors of different managers"), std::string::npos)
        << e.what();
  }
  try {
    check_same_manager(a, b.map_ref(), "test");
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("of another manager"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_same_manager(a, MapRef{nullptr, a.key()}, "test"), fk::Error);
  EXPECT_THROW(check_same_manager(a, MapRef{a.manager(), MapKey{{2}, "none"}}, "test"), fk::Error);
  EXPECT_THROW(check_same_manager(a, SparseTensor(), "test"), fk::Error);
}

TEST(MinkowskiTensor, EmptyTensor) {
  SparseTensor x(fk::zeros({0, 4}), fk::empty({0, 4}, {fk::DType::I32}));
  EXPECT_EQ(x.size(), 0);
  EXPECT_EQ(x.dimension(), 3);
  auto d = to_dense(x, {}, std::vector<int64_t>{2, 2, 2});
  EXPECT_EQ(d.dense.shape(), (fk::Dims{0, 4, 2, 2, 2}));
}

}  // namespace
}  // namespace minkowski
