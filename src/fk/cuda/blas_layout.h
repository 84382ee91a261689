#pragma once
// How a row-major GEMM (fk's layout) is asked of cuBLAS, which is
// column-major, as a pure function: no CUDA header, so that CPU-only builds
// and host tests check the arithmetic (tests/fk/cuda/blas_layout_test.cpp
// runs the call it describes through a column-major loop).
//
// A row-major [r, c] matrix with row stride ld is, read column-major with
// leading dimension ld, its transpose [c, r]. So row-major C = op(A) op(B)
// ([m, n] = [m, k] [k, n]) is column-major C^T = op(B)^T op(A)^T
// ([n, m] = [n, k] [k, m]): cuBLAS gets B first and A second, m and n
// swapped, each operand with its own op flag and leading dimension, and no
// data moves.
#include <cstdint>

namespace fk::cuda {

// cuBLAS's C = op(first) op(second), column-major, [m, n] = [m, k] [k, n];
// `first` is fk's B and `second` fk's A.
struct ColumnMajorGemm {
  bool trans_first = false, trans_second = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t ld_first = 1, ld_second = 1, ldc = 1;
};

// The cuBLAS call for row-major C[m, n] = op(A) op(B) with row strides lda,
// ldb, ldc. Throws fk::Error for negative sizes or a row stride shorter than
// the stored row (A is [m, k], or [k, m] when ta; B is [k, n], or [n, k]
// when tb), which is what cuBLAS requires of the column-major call.
ColumnMajorGemm column_major_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t lda,
                                  int64_t ldb, int64_t ldc);

}  // namespace fk::cuda
