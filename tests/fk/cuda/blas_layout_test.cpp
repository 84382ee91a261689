// column_major_gemm (fk/cuda/blas_layout.h): the cuBLAS call cuda::gemm makes
// for a row-major GEMM, run here through a plain column-major GEMM loop with
// BLAS's semantics (what cuBLAS computes from those arguments), against a
// plain row-major loop of the product fk asked for. Pure logic, on every
// machine; the same call on a GPU is Linalg/CudaParity.MatchesCpu/gemm_*.
#include "fk/cuda/blas_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fk/error.h"
#include "fk/test_util.h"

namespace fk::cuda {
namespace {

// C = alpha op(A) op(B) + beta C, column-major: element (i, j) of a matrix
// with leading dimension ld at i + j * ld, as BLAS (and cuBLAS) define it.
void column_major_loop(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                       const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                       double* c, int64_t ldc) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      double s = 0;
      for (int64_t l = 0; l < k; ++l)
        s += (ta ? a[l + i * lda] : a[i + l * lda]) * (tb ? b[j + l * ldb] : b[l + j * ldb]);
      c[i + j * ldc] = alpha * s + beta * c[i + j * ldc];
    }
}

// The same, row-major: element (i, j) at i * ld + j (fk's layout).
void row_major_loop(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                    const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                    double* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t l = 0; l < k; ++l)
        s += (ta ? a[l * lda + i] : a[i * lda + l]) * (tb ? b[j * ldb + l] : b[l * ldb + j]);
      c[i * ldc + j] = alpha * s + beta * c[i * ldc + j];
    }
}

// Small integers: every product and sum is exact, so the two loops agree
// bit for bit whatever the order of their factors.
std::vector<double> values(int64_t count, int seed) {
  std::vector<double> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[i] = static_cast<double>((i * 7 + seed * 3) % 11 - 5);
  return v;
}

// Every transpose pair with rows padded past their length (lda > the stored
// row): the column-major call over the same buffers writes the row-major
// product into C, and leaves C's padding alone.
TEST(CudaBlasLayout, ColumnMajorCallComputesTheRowMajorProduct) {
  const int64_t m = 5, n = 3, k = 4;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string(ta ? "t" : "n") + (tb ? "t" : "n"));
      const int64_t lda = (ta ? m : k) + 2, ldb = (tb ? k : n) + 1, ldc = n + 3;
      const std::vector<double> a = values((ta ? k : m) * lda, 1),
                                b = values((tb ? n : k) * ldb, 2);
      std::vector<double> want = values(m * ldc, 3), got = want;
      row_major_loop(ta, tb, m, n, k, 0.5, a.data(), lda, b.data(), ldb, -2.0, want.data(), ldc);
      const ColumnMajorGemm g = column_major_gemm(ta, tb, m, n, k, lda, ldb, ldc);
      column_major_loop(g.trans_first, g.trans_second, g.m, g.n, g.k, 0.5, b.data(), g.ld_first,
                        a.data(), g.ld_second, -2.0, got.data(), g.ldc);
      EXPECT_EQ(got, want);
    }
}

// The smallest row strides column_major_gemm accepts meet cuBLAS's own rule
// for the column-major call (lda >= max(1, rows of the stored operand)),
// empty sizes included.
TEST(CudaBlasLayout, SmallestAcceptedStridesMeetCuBlasRules) {
  for (int64_t m : {0, 1, 6})
    for (int64_t n : {0, 1, 4})
      for (int64_t k : {0, 1, 3})
        for (bool ta : {false, true})
          for (bool tb : {false, true}) {
            const int64_t lda = std::max<int64_t>(ta ? m : k, 1);
            const int64_t ldb = std::max<int64_t>(tb ? k : n, 1), ldc = std::max<int64_t>(n, 1);
            const ColumnMajorGemm g = column_major_gemm(ta, tb, m, n, k, lda, ldb, ldc);
            EXPECT_GE(g.ld_first, std::max<int64_t>(g.trans_first ? g.k : g.m, 1));
            EXPECT_GE(g.ld_second, std::max<int64_t>(g.trans_second ? g.n : g.k, 1));
            EXPECT_GE(g.ldc, std::max<int64_t>(g.m, 1));
          }
}

TEST(CudaBlasLayout, ShortRowStridesAndNegativeSizesAreRefusedByName) {
  // A is [5, 4] untransposed: lda 3 is shorter than its rows.
  std::string msg = test::error_of([] { column_major_gemm(false, false, 5, 3, 4, 3, 3, 3); });
  EXPECT_NE(msg.find("leading dimensions >= the stored row lengths"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lda 3"), std::string::npos) << msg;
  // Transposed, A is stored [4, 5]: lda 4 is short, lda 5 is enough.
  EXPECT_THROW(column_major_gemm(true, false, 5, 3, 4, 4, 3, 3), Error);
  EXPECT_NO_THROW(column_major_gemm(true, false, 5, 3, 4, 5, 3, 3));
  msg = test::error_of([] { column_major_gemm(false, false, -1, 3, 4, 4, 3, 3); });
  EXPECT_NE(msg.find("non-negative m, n, k"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fk::cuda
