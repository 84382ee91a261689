#pragma once
// dense_narrow: the dense layer's f32 products with a dimension of 1 — a
// field's one-channel output layer: y = x w^T (n = 1), its dx = g w (k = 1)
// and dW = g^T x (m = 1). OpenBLAS runs them through its packing GEMM (5 % of
// a bf16 deconvolution step); here they are single passes over the wide
// operand, 16 lanes on AVX-512, each output summed in a fixed order.
#include <cstdint>

namespace nefi {

// C (m, n) = op(A) op(B) [+ C when accumulate], arguments as dense_gemm's
// (dense_gemm.h), f32, when one of m, n, k is 1 and the CPU has AVX-512
// (fk::cpu_avx512()); returns false (nothing written) otherwise.
bool dense_narrow(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate);

}  // namespace nefi
