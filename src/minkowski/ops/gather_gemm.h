#pragma once
// f32 micro-kernels for sparse convolution on AVX2+FMA or AVX-512 (the widest
// the CPU has and FK_CPU_ISA allows, chosen at every call;
// callers fall back to BLAS where unsupported): the gathered rows are read in
// place from the feature matrix, with no staging copy and no BLAS packing.
//
// Every product term t = a . W (a row of C_in, W C_in x C_out) is computed the
// same way in both kernels (fresh accumulators, one FMA per input channel in
// ascending order), and terms are added to a row in the order given, so the
// per-pair kernel + a scatter and the add-in-place kernel give bit-identical rows,
// whatever the tiling or thread count.
#include <cstdint>

namespace minkowski {

// C_out a multiple of 8 on a CPU with AVX2 and FMA.
bool gather_gemm_supported(int64_t cout);

// out[p] = f[rows[p]] . w for p in [0, n) (rows == nullptr: row p), ldo-strided.
void gather_gemm_f32(const float* f, int64_t ldf, const int32_t* rows, int64_t n, const float* w,
                     int64_t cin, int64_t cout, float* out, int64_t ldo);

// c[i][0:cout] += a[i] . w for i in [0, n): one offset's terms added to n
// distinct rows (each term computed from zero, like gather_gemm_f32's, so a
// row that gets its terms in the same order is bit-identical to the per-pair
// kernel + scatter). C_out multiple of 8.
void gather_gemm_add_f32(const float* const* a, float* const* c, int64_t n, const float* w,
                         int64_t cin, int64_t cout);

// part[ci][co] += sum_p a[p][ci] * g[p][co], p ascending (part: C_in x C_out,
// row-major). The weight gradient of one bucket of pairs (any size: wide rows
// go in sub-blocks, gather_gemm.cpp). C_out multiple of 8.
// `fresh`: part's old contents are ignored (as if zero), so a caller never
// has to zero-fill a partial before its first block.
void outer_accumulate_f32(const float* const* a, const float* const* g, int64_t n, int64_t cin,
                          int64_t cout, float* part, bool fresh);

}  // namespace minkowski
