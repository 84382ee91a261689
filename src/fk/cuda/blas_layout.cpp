// column_major_gemm (see blas_layout.h).
#include "fk/cuda/blas_layout.h"

#include <algorithm>
#include <string>

#include "fk/error.h"

namespace fk::cuda {

ColumnMajorGemm column_major_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t lda,
                                  int64_t ldb, int64_t ldc) {
  FK_CHECK(m >= 0 && n >= 0 && k >= 0, "cuda::gemm", "non-negative m, n, k",
           fk::to_text(m) + ", " + fk::to_text(n) + ", " + fk::to_text(k));
  // Row-major A is [m,k] (or [k,m] when ta): lda must cover a stored row.
  const int64_t a_row = ta ? m : k, b_row = tb ? k : n;
  FK_CHECK(lda >= std::max<int64_t>(a_row, 1) && ldb >= std::max<int64_t>(b_row, 1) &&
               ldc >= std::max<int64_t>(n, 1),
           "cuda::gemm", "leading dimensions >= the stored row lengths",
           "lda " + fk::to_text(lda) + ", ldb " + fk::to_text(ldb) + ", ldc " + fk::to_text(ldc));
  // Column-major view: C^T[n,m] = op(B)^T[n,k] op(A)^T[k,m].
  return {tb, ta, n, m, k, ldb, lda, ldc};
}

}  // namespace fk::cuda
