// Pruning by a boolean mask: kept rows and coordinates against a plain loop,
// the all-false mask, gradients, dtypes, thread invariance and bad masks.
#include <gtest/gtest.h>

#include "minkowski/ops/feature_ops_util.h"

namespace minkowski {
namespace {

using feature_ops::random_sparse;

std::vector<bool> every_third_off(int64_t n) {
  std::vector<bool> m(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) m[i] = i % 3 != 1;
  return m;
}

TEST(MinkowskiPrune, KeepsMaskedRowsInOrderOnANewMap) {
  auto s = random_sparse(3, 14, 3, 1, fk::DType::F64, nullptr, 3, 2);
  auto mask = every_third_off(14);
  SparseTensor y = prune(s.x, mask);
  conv_ref::Rows want_rows;
  std::vector<double> want_f;
  for (int i = 0; i < 14; ++i)
    if (mask[i]) {
      want_rows.push_back(s.rows[i]);
      want_f.insert(want_f.end(), s.f.begin() + i * 3, s.f.begin() + i * 3 + 3);
    }
  EXPECT_EQ(conv_ref::from_tensor(y.C()), want_rows);
  fk::test::expect_close(y.F(), want_f, 0);
  EXPECT_EQ(y.manager(), s.x.manager());
  EXPECT_NE(y.key(), s.x.key());
  EXPECT_EQ(y.tensor_stride(), (std::vector<int32_t>{2, 2, 2}));
  // A mask tensor of shape (N, 1) does the same.
  fk::Tensor m2 = fk::from_vector(mask, fk::Dims{14, 1});
  EXPECT_EQ(conv_ref::from_tensor(prune(s.x, m2).C()), want_rows);
  // Every dtype is copied exactly.
  for (fk::DType t : {fk::DType::F32, fk::DType::F16, fk::DType::BF16}) {
    SparseTensor yt = prune(s.x.with_features(s.x.F().to(t)), mask);
    EXPECT_TRUE(feature_ops::same_bits(yt.F(), y.F().to(t)));
  }
}

TEST(MinkowskiPrune, AllFalseGivesAnEmptyTensor) {
  auto s = random_sparse(2, 6, 4, 2);
  SparseTensor y = prune(s.x, std::vector<bool>(6, false));
  EXPECT_EQ(y.size(), 0);
  EXPECT_EQ(y.channels(), 4);
  EXPECT_EQ(y.C().shape(), (fk::Dims{0, 3}));
  // It flows on: an activation and a gradient of zeros.
  fk::Tensor f = s.x.F().clone().set_requires_grad(true);
  fk::sum(relu(prune(s.x.with_features(f), std::vector<bool>(6, false))).F()).backward();
  fk::test::expect_close(f.grad(), std::vector<double>(24, 0.0), 0);
  // And an empty tensor prunes to an empty tensor.
  EXPECT_EQ(prune(y, std::vector<bool>{}).size(), 0);
}

TEST(MinkowskiPrune, Gradcheck) {
  auto s = random_sparse(2, 8, 2, 3);
  auto mask = every_third_off(8);
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return fk::mul(prune(s.x.with_features(in[0]), mask).F(), 1.5);
      },
      (std::vector<fk::Tensor>{s.x.F()}));
}

TEST(MinkowskiPrune, ThreadInvariant) {
  auto s = random_sparse(3, 3000, 4, 4, fk::DType::F32, nullptr, 12);
  auto mask = every_third_off(3000);
  feature_ops::expect_thread_invariant([&] {
    fk::Tensor f = s.x.F().detach().set_requires_grad(true);
    SparseTensor y = prune(s.x.with_features(f), mask);
    fk::sum(fk::mul(y.F(), y.F())).backward();
    return std::vector<fk::Tensor>{y.F(), y.C(), f.grad()};
  });
}

TEST(MinkowskiPrune, BadMasks) {
  auto s = random_sparse(2, 5, 2, 5);
  feature_ops::expect_error([&] { prune(s.x, std::vector<bool>(4, true)); },
                            {"mask of shape (5)", "[4]"});
  feature_ops::expect_error([&] { prune(s.x, fk::ones({5}, {fk::DType::I32})); },
                            {"bool mask", "i32"});
  feature_ops::expect_error([&] { prune(s.x, fk::Tensor()); }, {"mask tensor", "undefined"});
  feature_ops::expect_error([&] { prune(SparseTensor(), std::vector<bool>{}); },
                            {"sparse tensor", "empty handle"});
}

}  // namespace
}  // namespace minkowski
