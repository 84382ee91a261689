// Union of sparse tensors against a coordinate -> sum reference, row order,
// gradients, dtypes, thread invariance and bad inputs.
#include <gtest/gtest.h>

#include <map>

#include "minkowski/ops/feature_ops_util.h"

namespace minkowski {
namespace {

using feature_ops::random_sparse;
using Row = std::vector<int32_t>;

// The union by a plain loop: rows in first-occurrence order over the inputs,
// features summed.
struct RefUnion {
  conv_ref::Rows rows;
  std::vector<double> f;
};
RefUnion reference_union(const std::vector<const feature_ops::Sparse*>& xs, int c) {
  RefUnion r;
  std::map<Row, size_t> at;
  for (const auto* x : xs)
    for (size_t i = 0; i < x->rows.size(); ++i) {
      auto [it, fresh] = at.emplace(x->rows[i], r.rows.size());
      if (fresh) {
        r.rows.push_back(x->rows[i]);
        r.f.resize(r.f.size() + c, 0.0);
      }
      for (int ch = 0; ch < c; ++ch) r.f[it->second * c + ch] += x->f[i * c + ch];
    }
  return r;
}

TEST(MinkowskiUnion, SumsWhereCoordinatesCoincide) {
  auto mgr = std::make_shared<CoordinateManager>(3);
  // range 2 in 3-D, 2 batches: 250 sites, so the inputs overlap.
  auto a = random_sparse(3, 40, 3, 1, fk::DType::F64, mgr, 2);
  auto b = random_sparse(3, 30, 3, 2, fk::DType::F64, mgr, 2);
  auto c = random_sparse(3, 20, 3, 3, fk::DType::F64, mgr, 2);
  auto ref = reference_union({&a, &b}, 3);
  ASSERT_LT(ref.rows.size(), 70u);  // some overlap
  ASSERT_GT(ref.rows.size(), 40u);  // and some new rows
  SparseTensor u = sparse_union({a.x, b.x});
  EXPECT_EQ(conv_ref::from_tensor(u.C()), ref.rows);
  fk::test::expect_close(u.F(), ref.f, 1e-15);
  EXPECT_EQ(u.manager(), mgr);
  auto ref3 = reference_union({&a, &b, &c}, 3);
  SparseTensor u3 = sparse_union({a.x, b.x, c.x});
  EXPECT_EQ(conv_ref::from_tensor(u3.C()), ref3.rows);
  fk::test::expect_close(u3.F(), ref3.f, 1e-15);
  // Half types accumulate in f32 and round once.
  for (fk::DType t : {fk::DType::F32, fk::DType::F16, fk::DType::BF16}) {
    SparseTensor ut =
        sparse_union({a.x.with_features(a.x.F().to(t)), b.x.with_features(b.x.F().to(t)),
                      c.x.with_features(c.x.F().to(t))});
    EXPECT_EQ(ut.F().dtype(), t);
    fk::test::expect_close(ut.F(), ref3.f, 3 * feature_ops::tolerance(t));
  }
}

TEST(MinkowskiUnion, Gradcheck) {
  auto mgr = std::make_shared<CoordinateManager>(2);
  auto a = random_sparse(2, 10, 2, 4, fk::DType::F64, mgr, 2);
  auto b = random_sparse(2, 10, 2, 5, fk::DType::F64, mgr, 2);
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        SparseTensor u = sparse_union({a.x.with_features(in[0]), b.x.with_features(in[1])});
        return fk::mul(u.F(), u.F());
      },
      (std::vector<fk::Tensor>{a.x.F(), b.x.F()}));
}

TEST(MinkowskiUnion, ThreadInvariant) {
  auto mgr = std::make_shared<CoordinateManager>(3);
  auto a = random_sparse(3, 3000, 4, 6, fk::DType::BF16, mgr, 10);
  auto b = random_sparse(3, 3000, 4, 7, fk::DType::BF16, mgr, 10);
  feature_ops::expect_thread_invariant([&] {
    SparseTensor u = sparse_union({a.x, b.x, a.x});
    return std::vector<fk::Tensor>{u.F(), u.C()};
  });
}

TEST(MinkowskiUnion, BadInputs) {
  auto mgr = std::make_shared<CoordinateManager>(2);
  auto a = random_sparse(2, 5, 2, 8, fk::DType::F64, mgr);
  auto other = random_sparse(2, 5, 2, 9);
  feature_ops::expect_error(
      [&] {
        sparse_union({a.x, other.x});
      },
      {"same coordinate manager", "different managers"});
  auto strided = random_sparse(2, 5, 2, 10, fk::DType::F64, mgr, 3, 2);
  feature_ops::expect_error(
      [&] {
        sparse_union({a.x, strided.x});
      },
      {"one tensor stride", "ts[2,2]"});
  auto wide = random_sparse(2, 5, 3, 11, fk::DType::F64, mgr);
  feature_ops::expect_error([&] { sparse_union({a.x, wide.x}); }, {"2 channels", "3 in input 1"});
  feature_ops::expect_error([&] { sparse_union({a.x}); }, {"at least 2", "got 1"});
  feature_ops::expect_error(
      [&] {
        sparse_union({a.x, a.x.with_features(a.x.F().to(fk::DType::F32))});
      },
      {"one dtype", "f32 in input 1"});
}

}  // namespace
}  // namespace minkowski
