#pragma once
// dense_gemm_bf16: the dense layer's GEMMs with bf16 operands and f32
// accumulation on AVX512_BF16 (vdpbf16ps: 32 products a zmm instruction where
// the f32 FMA makes 16). Both operands are rounded to bf16 (round to nearest
// even; denormals flush to zero, as vcvtneps2bf16 does) while they are
// packed; C, the bias and the epilogue stay f32. Same tiles and blocking as
// dense_gemm.h (12 x 32 register tile, epilogue applied in registers, M
// blocks over fk's threads, each output summed by one thread in a fixed
// order: results do not depend on the thread count), with K taken in pairs:
// A is packed as (k, k+1) bf16 pairs (12 rows a tile) and B in panels of 32
// columns of such pairs, the layout vdpbf16ps multiplies. The packs zero-pad
// odd K, short tiles and short panels, so any shape runs.
#include <cstdint>

#include "nefi/field/dense.h"

namespace nefi {

// AVX512_BF16 present and FK_CPU_ISA auto or avx512 (fk::cpu_avx512_bf16()).
bool dense_gemm_bf16_native();

// Operands already rounded to bf16 and a bf16 copy of the result: what lets a
// chain of bf16 layers round each activation once and read it at half the
// bytes. An operand given here replaces its f32 storage (that pointer may then
// be null): the same layout (op(A) = A or A^T as trans_a says) with a row
// stride ld in bf16 elements; A's rows without trans_a must hold an even
// number of bf16 (zero past k). c, when set, also receives C rounded to bf16
// (row stride ldc; the columns past n untouched) on the last K block.
// The numbers are the ones the f32 operands would give (the same rounding).
struct DenseBf16Sides {
  const uint16_t* a = nullptr;
  int64_t lda = 0;
  const uint16_t* b = nullptr;  // only without trans_b
  int64_t ldb = 0;
  uint16_t* c = nullptr;
  int64_t ldc = 0;
};

// dst (rows, cols; row stride ldd) = src (row stride lds) rounded to bf16 as
// the kernels round their operands. Needs dense_gemm_bf16_native().
void round_to_bf16(const float* src, int64_t lds, int64_t rows, int64_t cols, uint16_t* dst,
                   int64_t ldd);

// C (m, n) = bf16(op(A)) bf16(op(B)) [+ C when accumulate], then c =
// act(c + bias[j]) (bias may be null); arguments as dense_gemm's (dense_gemm.h).
// Needs dense_gemm_bf16_native(); m, n, k >= 1.
void dense_gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                     int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                     bool accumulate, const float* bias, DenseActivation act,
                     const DenseBf16Sides& sides = {});

}  // namespace nefi
