#pragma once
// dense_gemm: the dense layer's f32 GEMMs on AVX-512 with the layer's
// epilogue (bias, activation) applied to each output tile while it is still in
// registers. Why not OpenBLAS: the environment pins OpenBLAS to its AVX2
// kernels (OPENBLAS_CORETYPE=Haswell, ../shared/reference/machine.md), half
// this CPU's width, and a separate bias/activation pass re-reads every
// activation from memory. B packed in panels of 32 columns, A read in place
// 12 rows at a time, K in
// blocks of 256, M blocks spread over fk's threads; each output element is
// summed by one thread in a fixed order, so results do not depend on the
// thread count.
#include <cstdint>

#include "nefi/field/dense.h"

namespace nefi {

// AVX-512 is allowed (FK_CPU_ISA) and present, and the shape is one the
// kernel is built for (m and n at least about a panel's width, k >= 1).
bool dense_gemm_fits(int64_t m, int64_t n, int64_t k);

// C (m, n) = op(A) op(B) [+ C when accumulate], then c = act(c + bias[j])
// (bias may be null). op(A) is A (m, k; lda) or, trans_a, A^T with A (k, m);
// op(B) likewise with B (k, n) or (n, k). Row-major, f32. Needs
// dense_gemm_fits(m, n, k).
void dense_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate,
                const float* bias, DenseActivation act);

}  // namespace nefi
