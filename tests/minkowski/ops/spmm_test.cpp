// spmm / spmm_average against a dense matrix product, gradients w.r.t. values
// and dense, dtypes, thread invariance and bad input.
#include <gtest/gtest.h>

#include <random>

#include "minkowski/ops/feature_ops_util.h"

namespace minkowski {
namespace {

// Unsorted, with a duplicate (row 2, col 1) and an empty row (3); M = 5, K = 4.
struct List {
  std::vector<int64_t> rows{2, 0, 4, 2, 1, 2, 0, 4};
  std::vector<int64_t> cols{1, 3, 0, 1, 2, 0, 0, 3};
  std::vector<double> vals{0.5, -1, 2, 1.5, 3, -0.25, 0.75, 1};
  fk::Tensor r() const { return fk::from_vector(rows, fk::Dims{8}); }
  fk::Tensor c() const { return fk::from_vector(cols, fk::Dims{8}).to(fk::DType::I32); }
  fk::Tensor v() const { return fk::from_vector(vals, fk::Dims{8}); }
};

// The dense product, duplicates summed.
std::vector<double> reference(const std::vector<int64_t>& rows, const std::vector<int64_t>& cols,
                              const std::vector<double>& vals, int64_t m, int64_t k,
                              const std::vector<double>& dense, int64_t c) {
  std::vector<double> a(m * k, 0.0), out(m * c, 0.0);
  for (size_t p = 0; p < rows.size(); ++p) a[rows[p] * k + cols[p]] += vals[p];
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < k; ++j)
      for (int64_t x = 0; x < c; ++x) out[i * c + x] += a[i * k + j] * dense[j * c + x];
  return out;
}

TEST(MinkowskiSpmm, MatchesDenseProduct) {
  List l;
  auto d = fk::test::random_values(12, -1, 1, 3);
  fk::Tensor dense = fk::from_vector(d, fk::Dims{4, 3});
  fk::Tensor out = spmm(l.r(), l.c(), l.v(), {5, 4}, dense);
  EXPECT_EQ(out.shape(), (fk::Dims{5, 3}));
  fk::test::expect_close(out, reference(l.rows, l.cols, l.vals, 5, 4, d, 3), 1e-15);
  // Average: 1 / (entries in the row) each, duplicates counted.
  std::vector<double> avg(8);
  for (size_t p = 0; p < 8; ++p) {
    int n = 0;
    for (int64_t r : l.rows) n += r == l.rows[p];
    avg[p] = 1.0 / n;
  }
  fk::test::expect_close(spmm_average(l.r(), l.c(), {5, 4}, dense),
                         reference(l.rows, l.cols, avg, 5, 4, d, 3), 1e-15);
  // No entries: zeros.
  fk::Tensor none = fk::zeros({0}, {fk::DType::I64});
  fk::test::expect_close(spmm(none, none, fk::zeros({0}, {fk::DType::F64}), {2, 4}, dense),
                         std::vector<double>(6, 0.0), 0);
  // Half types (f32 values): accumulated in f32, result in the dense dtype.
  auto want = reference(l.rows, l.cols, l.vals, 5, 4, d, 3);
  for (fk::DType t : {fk::DType::F32, fk::DType::F16, fk::DType::BF16}) {
    fk::Tensor o = spmm(l.r(), l.c(), l.v().to(fk::DType::F32), {5, 4}, dense.to(t));
    EXPECT_EQ(o.dtype(), t);
    fk::test::expect_close(o, want, 4 * feature_ops::tolerance(t));  // |out| up to ~4
  }
}

TEST(MinkowskiSpmm, Gradcheck) {
  List l;
  fk::Tensor dense = fk::test::random_tensor({4, 3}, fk::DType::F64, -1, 1, 4);
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return spmm(l.r(), l.c(), in[0], {5, 4}, in[1]);
      },
      (std::vector<fk::Tensor>{l.v(), dense}));
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return spmm_average(l.r(), l.c(), {5, 4}, in[0]);
      },
      (std::vector<fk::Tensor>{dense}));
}

TEST(MinkowskiSpmm, ThreadInvariant) {
  std::mt19937 g(5);
  const int64_t m = 3000, k = 2000, nnz = 30000;
  std::vector<int64_t> rows(nnz), cols(nnz);
  for (int64_t p = 0; p < nnz; ++p) rows[p] = g() % m, cols[p] = g() % k;
  fk::Tensor r = fk::from_vector(rows, fk::Dims{nnz}), c = fk::from_vector(cols, fk::Dims{nnz});
  fk::Tensor v0 = fk::test::random_tensor({nnz}, fk::DType::F32, -1, 1, 6);
  fk::Tensor d0 = fk::test::random_tensor({k, 8}, fk::DType::BF16, -1, 1, 7);
  feature_ops::expect_thread_invariant([&] {
    fk::Tensor v = v0.clone().set_requires_grad(true), d = d0.clone().set_requires_grad(true);
    fk::Tensor out = spmm(r, c, v, {m, k}, d);
    fk::sum(fk::mul(out, out)).backward();
    return std::vector<fk::Tensor>{out, v.grad(), d.grad()};
  });
}

TEST(MinkowskiSpmm, BadInput) {
  List l;
  fk::Tensor dense = fk::zeros({4, 3}, {fk::DType::F64});
  feature_ops::expect_error(
      [&] {
        spmm(l.r(), l.c(), l.v(), {4, 4}, dense);
      },
      {"row indices in [0, 4)", "4 at entry 2"});
  feature_ops::expect_error(
      [&] {
        spmm(l.r(), l.c(), l.v(), {5, 3}, dense);
      },
      {"column indices in [0, 3)", "3 at entry 1"});
  feature_ops::expect_error(
      [&] {
        spmm(l.r(), l.c().narrow(0, 0, 7), l.v(), {5, 4}, dense);
      },
      {"as many column indices as row indices (8)", "7"});
  feature_ops::expect_error(
      [&] {
        spmm(l.r(), l.c(), l.v().narrow(0, 0, 6), {5, 4}, dense);
      },
      {"values of shape (8)", "[6]"});
  feature_ops::expect_error(
      [&] {
        spmm(l.r(), l.c(), l.v(), {5, 4}, fk::zeros({3, 3}, {fk::DType::F64}));
      },
      {"dense matrix of 4 rows", "[3, 3]"});
  feature_ops::expect_error(
      [&] {
        spmm(l.r(), l.c(), l.v(), {5, 4}, fk::zeros({4, 3}, {fk::DType::I32}));
      },
      {"f64, f32, f16 or bf16 dense", "i32"});
  feature_ops::expect_error(
      [&] {
        spmm(l.v(), l.c(), l.v(), {5, 4}, dense);
      },
      {"i32 or i64 rows", "f64"});
}

}  // namespace
}  // namespace minkowski
