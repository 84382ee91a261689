#pragma once
// bf16 register tiles of the sparse convolution (AVX-512 BF16: vdpbf16ps),
// the bf16 counterparts of gather_gemm.h's row kernels: feature rows read in
// place as bf16, weights as pairs of bf16 input channels, products summed in
// f32 registers and written (or added) as f32 rows, so a conv under bf16
// autocast needs no f32 copy of its operands and runs twice the multiply-adds
// per instruction of the f32 tiles.
//
// Each output element is one chain of dot products of channel pairs
// (2j, 2j + 1), j ascending, from zero; a term is added to its row as a
// whole (row-stationary) or stored (per pair), so both kernels give the same
// bits, whatever the tiling or thread count. The bf16 products are exact in
// f32; the pair sums round as vdpbf16ps does (denormals flushed), so results
// differ from the f32 tiles on the same bf16 values by f32 rounding only.
#include <cstdint>

namespace minkowski {

// A CPU with AVX-512 BF16 (fk::cpu_avx512_bf16(), FK_CPU_ISA allowing
// avx512), an even C_in > 0 (whole channel pairs) and C_out a multiple of 8.
bool gather_gemm_bf16_supported(int64_t cin, int64_t cout);

// W (C_in x C_out bf16 words, row-major) as channel pairs: out[j * C_out + c]
// holds W[2j][c] in its low half and W[2j + 1][c] in its high half
// (C_in / 2 x C_out words).
void pack_pairs_bf16(const uint16_t* w, int64_t cin, int64_t cout, uint32_t* out);

// out[p] = f[rows[p]] . W for p in [0, n) (rows == nullptr: row p), as f32
// rows ldo apart; wp from pack_pairs_bf16.
void gather_gemm_bf16(const uint16_t* f, int64_t ldf, const int32_t* rows, int64_t n,
                      const uint32_t* wp, int64_t cin, int64_t cout, float* out, int64_t ldo);

// c[i][0:cout] += a[i] . W for i in [0, n) (n distinct f32 rows).
void gather_gemm_add_bf16(const uint16_t* const* a, float* const* c, int64_t n, const uint32_t* wp,
                          int64_t cin, int64_t cout);

// part[ci][co] (+)= sum_p a[p][ci] * g[p][co] over n pairs (the weight
// gradient of one bucket; part C_in x C_out f32, row-major): the pairs go two
// at a time into one dot product, (0, 1), (2, 3), .. in sub-blocks of 64 (an
// odd last one with a zero partner), sums ascending. `fresh`: part's old
// contents are ignored (as if zero). C_out a multiple of 8, any C_in; a CPU
// with AVX-512 BF16.
void outer_accumulate_bf16(const uint16_t* const* a, const uint16_t* const* g, int64_t n,
                           int64_t cin, int64_t cout, float* part, bool fresh);

}  // namespace minkowski
