#pragma once
// fk's BLAS layer over OpenBLAS: GEMM on raw row-major buffers. Skinny GEMMs
// (tall M, small K and N: sparse convolution's shape) are memory-bound and
// OpenBLAS splits them poorly, so they are partitioned over fk's threads with
// single-threaded BLAS calls inside (the OpenMP build of OpenBLAS then runs
// serially within our parallel region).
#include <cstdint>

#include "fk/device.h"
#include "fk/dtype.h"

namespace fk {

void blas_set_num_threads(int n);
const char* blas_config();  // e.g. "OpenBLAS 0.3.21 (openmp, Haswell)"

// C[M,N] = alpha * op(A) op(B) + beta * C, row-major, leading dimensions given.
// dtype: f32, f64, c64 or c128.
void gemm(DType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const void* a, int64_t lda, const void* b, int64_t ldb, double beta, void* c,
          int64_t ldc);

// The same on `device`'s memory: the CPU path above, or cuBLAS on the device's
// current stream (TF32 for f32 when fk::amp::allow_tf32()), followed by the
// sync policy.
void gemm_on(Device device, DType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n,
             int64_t k, double alpha, const void* a, int64_t lda, const void* b, int64_t ldb,
             double beta, void* c, int64_t ldc);

// C[M,N] (f32) = alpha * op(A) op(B) + beta * C with f16 or bf16 A and B on
// a CUDA device: tensor cores, f32 sums and an f32 result (cuda/blas.h's
// gemm_f32_out) on the device's current stream, then the sync policy. The
// host has no such product (an fk::Error there): widen the operands instead.
void gemm_f32_out_on(Device device, DType in_dtype, bool trans_a, bool trans_b, int64_t m,
                     int64_t n, int64_t k, double alpha, const void* a, int64_t lda, const void* b,
                     int64_t ldb, double beta, float* c, int64_t ldc);

// `batch` independent products C_i = alpha op(A_i) op(B_i) + beta C_i on
// `device`'s memory, matrix i of each operand stride_* * i elements after its
// first (stride 0: one matrix shared by the whole batch). CPU: one fk::gemm
// per matrix in batch order, so each C_i is bitwise the separate call's; CUDA:
// one cuBLAS strided-batched GEMM on the device's current stream (TF32 for f32
// when fk::amp::allow_tf32()), then the sync policy.
void gemm_strided_batched_on(Device device, DType dtype, bool trans_a, bool trans_b, int64_t m,
                             int64_t n, int64_t k, double alpha, const void* a, int64_t lda,
                             int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b,
                             double beta, void* c, int64_t ldc, int64_t stride_c, int64_t batch);

}  // namespace fk
