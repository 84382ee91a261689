// cat / sum / mean on one map and the binary ops on aligned coordinates,
// against plain-loop references (MinkowskiEngine's fill rule for different
// maps), gradients, dtypes, thread invariance and bad inputs.
#include <gtest/gtest.h>

#include <map>

#include "minkowski/ops/feature_ops_util.h"

namespace minkowski {
namespace {

using feature_ops::random_sparse;
using Row = std::vector<int32_t>;

double apply(fk::BinaryOp op, double a, double b) {
  switch (op) {
    case fk::BinaryOp::Add:
      return a + b;
    case fk::BinaryOp::Sub:
      return a - b;
    case fk::BinaryOp::Mul:
      return a * b;
    default:
      return a / b;
  }
}

const fk::BinaryOp kOps[] = {fk::BinaryOp::Add, fk::BinaryOp::Sub, fk::BinaryOp::Mul,
                             fk::BinaryOp::Div};

TEST(MinkowskiElementwise, CatSumMeanOnOneMap) {
  auto s = random_sparse(3, 12, 2, 1);
  auto g = fk::test::random_values(12 * 3, -1, 1, 5);
  SparseTensor b = s.x.with_features(fk::from_vector(g, fk::Dims{12, 3}));
  SparseTensor c = cat({s.x, b});
  ASSERT_EQ(c.F().shape(), (fk::Dims{12, 5}));
  EXPECT_EQ(c.key(), s.x.key());
  std::vector<double> want;
  for (int i = 0; i < 12; ++i) {
    want.insert(want.end(), s.f.begin() + i * 2, s.f.begin() + i * 2 + 2);
    want.insert(want.end(), g.begin() + i * 3, g.begin() + i * 3 + 3);
  }
  fk::test::expect_close(c.F(), want, 0);
  SparseTensor b2 = s.x.with_features(fk::from_vector(g, fk::Dims{12, 3}).narrow(1, 0, 2));
  std::vector<double> sum_want(24), mean_want(24);
  for (int i = 0; i < 12; ++i)
    for (int ch = 0; ch < 2; ++ch) {
      double v = s.f[i * 2 + ch] + g[i * 3 + ch] + s.f[i * 2 + ch];
      sum_want[i * 2 + ch] = v;
      mean_want[i * 2 + ch] = v / 3;
    }
  fk::test::expect_close(sum({s.x, b2, s.x}).F(), sum_want, 1e-15);
  fk::test::expect_close(mean({s.x, b2, s.x}).F(), mean_want, 1e-15);
  auto fn = [&](const std::vector<fk::Tensor>& in) {
    SparseTensor p = s.x.with_features(in[0]), q = s.x.with_features(in[1]);
    return fk::add(cat({p, q}).F().narrow(1, 0, 2), fk::mul(mean({p, q}).F(), sum({q, p}).F()));
  };
  EXPECT_GRADCHECK(fn, (std::vector<fk::Tensor>{s.x.F(), b2.F().contiguous()}));
}

TEST(MinkowskiElementwise, CatSumMeanOnFields) {
  auto s = random_sparse(2, 6, 2, 14);
  fk::Tensor pts = s.x.C().to(fk::DType::F64);
  TensorField a(s.x.F(), pts);
  TensorField b = a.with_features(fk::mul(s.x.F(), 2.0));
  TensorField c = cat({a, b});
  EXPECT_TRUE(c.C().is_same(pts));
  std::vector<double> cat_want, mean_want;
  for (int i = 0; i < 6; ++i) {
    for (int ch = 0; ch < 2; ++ch) cat_want.push_back(s.f[i * 2 + ch]);
    for (int ch = 0; ch < 2; ++ch) cat_want.push_back(2 * s.f[i * 2 + ch]);
  }
  for (double v : s.f) mean_want.push_back(1.5 * v);
  fk::test::expect_close(c.F(), cat_want, 0);
  // Equal coordinates in another tensor count as the same points.
  TensorField b2(b.F(), pts.clone());
  fk::test::expect_close(mean({a, b2}).F(), mean_want, 1e-15);
  fk::test::expect_close(sum({a, b}).F(), fk::mul(s.x.F(), 3.0).to_vector<double>(), 1e-15);
  TensorField moved(s.x.F(), fk::add(pts, 0.5));
  feature_ops::expect_error(
      [&] {
        sum({a, moved});
      },
      {"fields on the same points", "input 1 on other coordinates"});
  feature_ops::expect_error([&] { cat({a, TensorField()}); }, {"empty TensorField as input 1"});
}

TEST(MinkowskiElementwise, SameMapIsRowByRow) {
  auto s = random_sparse(2, 10, 3, 2);
  auto g = fk::test::random_values(30, 0.5, 2, 6);
  SparseTensor b = s.x.with_features(fk::from_vector(g, fk::Dims{10, 3}));
  for (fk::BinaryOp op : kOps) {
    SparseTensor y = binary(s.x, b, op);
    EXPECT_EQ(y.key(), s.x.key());
    std::vector<double> want(30);
    for (int i = 0; i < 30; ++i) want[i] = apply(op, s.f[i], g[i]);
    fk::test::expect_close(y.F(), want, 1e-15);
  }
  // The operators and a dense operand broadcast over the rows.
  fk::test::expect_close((s.x * b).F(), binary(s.x, b, fk::BinaryOp::Mul).F().to_vector<double>(),
                         0);
  fk::Tensor row = fk::from_vector(std::vector<double>{1, 2, 4}, fk::Dims{3});
  std::vector<double> want(30);
  for (int i = 0; i < 30; ++i) want[i] = s.f[i] / (i % 3 == 0 ? 1 : i % 3 == 1 ? 2 : 4);
  fk::test::expect_close((s.x / row).F(), want, 1e-15);
  EXPECT_EQ((s.x + fk::scalar_tensor(1.0, {fk::DType::F64})).key(), s.x.key());
}

// MinkowskiEngine's fill of the union map for a op b on different maps.
std::map<Row, std::vector<double>> reference_binary(const feature_ops::Sparse& a,
                                                    const feature_ops::Sparse& b, int c,
                                                    fk::BinaryOp op) {
  std::map<Row, std::vector<double>> out;
  for (size_t i = 0; i < a.rows.size(); ++i)
    out[a.rows[i]] = std::vector<double>(a.f.begin() + i * c, a.f.begin() + (i + 1) * c);
  for (size_t i = 0; i < b.rows.size(); ++i) {
    auto it = out.find(b.rows[i]);
    std::vector<double> v = it == out.end() ? std::vector<double>(c, 0.0) : it->second;
    for (int ch = 0; ch < c; ++ch) v[ch] = apply(op, v[ch], b.f[i * c + ch]);
    out[b.rows[i]] = v;
  }
  return out;
}

TEST(MinkowskiElementwise, DifferentMapsAlignOnTheUnion) {
  auto mgr = std::make_shared<CoordinateManager>(3);
  auto a = random_sparse(3, 40, 2, 3, fk::DType::F64, mgr, 2);
  auto b = random_sparse(3, 30, 2, 4, fk::DType::F64, mgr, 2);
  for (fk::BinaryOp op : kOps) {
    SCOPED_TRACE(fk::name(op));
    SparseTensor y = binary(a.x, b.x, op);
    EXPECT_EQ(y.manager(), mgr);
    EXPECT_NE(y.key(), a.x.key());
    auto ref = reference_binary(a, b, 2, op);
    auto rows = conv_ref::from_tensor(y.C());
    ASSERT_EQ(rows.size(), ref.size());
    // a's rows come first, in a's order
    for (size_t i = 0; i < a.rows.size(); ++i) EXPECT_EQ(rows[i], a.rows[i]);
    auto f = y.F().to_vector<double>();
    for (size_t i = 0; i < rows.size(); ++i)
      for (int ch = 0; ch < 2; ++ch) EXPECT_EQ(f[i * 2 + ch], ref[rows[i]][ch]) << "row " << i;
    for (fk::DType t : {fk::DType::F32, fk::DType::F16, fk::DType::BF16}) {
      if (op == fk::BinaryOp::Div) continue;  // quotients of values near 0 are ill-conditioned
      SparseTensor yt =
          binary(a.x.with_features(a.x.F().to(t)), b.x.with_features(b.x.F().to(t)), op);
      EXPECT_EQ(yt.F().dtype(), t);
      fk::test::expect_close(yt.F(), f, 2 * feature_ops::tolerance(t));
    }
  }
  // Every op is differentiable w.r.t. both sides.
  auto p = random_sparse(2, 8, 2, 5, fk::DType::F64, std::make_shared<CoordinateManager>(2), 1);
  auto q = random_sparse(2, 8, 2, 6, fk::DType::F64, p.x.manager(), 1);
  SparseTensor qpos = q.x.with_features(fk::add(fk::abs(q.x.F()), 0.5));
  for (fk::BinaryOp op : kOps) {
    SCOPED_TRACE(fk::name(op));
    EXPECT_GRADCHECK(
        [&](const std::vector<fk::Tensor>& in) {
          return binary(p.x.with_features(in[0]), qpos.with_features(in[1]), op).F();
        },
        (std::vector<fk::Tensor>{p.x.F(), qpos.F()}));
  }
}

TEST(MinkowskiElementwise, ThreadInvariant) {
  auto mgr = std::make_shared<CoordinateManager>(3);
  auto a = random_sparse(3, 3000, 3, 7, fk::DType::F16, mgr, 10);
  auto b = random_sparse(3, 3000, 3, 8, fk::DType::F16, mgr, 10);
  feature_ops::expect_thread_invariant([&] {
    std::vector<fk::Tensor> r;
    for (fk::BinaryOp op : kOps) r.push_back(binary(a.x, b.x, op).F());
    r.push_back(mean({a.x, a.x}).F());
    r.push_back(cat({a.x, a.x}).F());
    return r;
  });
}

TEST(MinkowskiElementwise, BadInputs) {
  auto mgr = std::make_shared<CoordinateManager>(2);
  auto a = random_sparse(2, 6, 2, 9, fk::DType::F64, mgr);
  auto b = random_sparse(2, 6, 2, 10, fk::DType::F64, mgr);
  auto other = random_sparse(2, 6, 2, 11);
  feature_ops::expect_error([&] { a.x + other.x; }, {"same coordinate manager", "different"});
  feature_ops::expect_error([&] { cat({a.x, other.x}); }, {"same coordinate manager"});
  feature_ops::expect_error([&] { cat({a.x, b.x}); }, {"one coordinate map", "input 1 on"});
  feature_ops::expect_error([&] { sum({a.x, b.x}); }, {"one coordinate map"});
  feature_ops::expect_error([&] { cat(std::vector<SparseTensor>{}); }, {"at least one", "none"});
  auto strided = random_sparse(2, 6, 2, 12, fk::DType::F64, mgr, 3, 2);
  feature_ops::expect_error([&] { a.x - strided.x; }, {"one tensor stride", "ts[2,2]"});
  auto wide = random_sparse(2, 6, 3, 13, fk::DType::F64, mgr);
  feature_ops::expect_error([&] { a.x* wide.x; }, {"2 channels", "3 in input 1"});
  SparseTensor wide_same = a.x.with_features(fk::zeros({6, 3}, {fk::DType::F64}));
  feature_ops::expect_error([&] { sum({a.x, wide_same}); }, {"2 channels", "3 in input 1"});
  feature_ops::expect_error([&] { binary(a.x, b.x, fk::BinaryOp::Pow); },
                            {"add, sub, mul or div", "pow"});
  feature_ops::expect_error([&] { a.x + fk::zeros({3}, {fk::DType::F64}); },
                            {"(2)", "(6, 2)", "[3]"});
}

}  // namespace
}  // namespace minkowski
